// Typesetting the math that markdown-math.ts marked (elements with data-math holding TeX as text)
// with KaTeX, loaded from this server the first time an answer has math. KaTeX builds the DOM
// itself (katex.render): its sizes go through element.style, which the page's Content-Security-
// Policy allows, where inline style attributes (KaTeX's HTML string) would be refused.
//
// Safety: trust: false, so \href, \url, \includegraphics and \html... render as inert red text, never
// as links, images or attributes; maxSize and maxExpand bound how large a box or how long a macro
// expansion a formula can ask for. A formula KaTeX cannot parse stays its TeX source, marked as an
// error with KaTeX's message as its tooltip: what throwOnError: false shows, without the inline
// style attribute KaTeX's own error rendering writes (refused by the page's CSP).
import type { KatexOptions } from "katex";

type Katex = typeof import("katex").default;

const OPTIONS: KatexOptions = {
  throwOnError: true, // caught below
  trust: false,
  strict: "ignore",
  maxSize: 10, // em
  maxExpand: 500,
  output: "htmlAndMathml",
};

let katex: Katex | null = null;
let loading: Promise<Katex> | null = null;

// Typesets every math element under `root`: now when KaTeX is loaded, else once it is.
export function typesetMath(root: ParentNode): void {
  const elements = [...root.querySelectorAll<HTMLElement>("[data-math]:not([data-typeset])")];
  if (elements.length === 0) return;
  if (katex !== null) {
    for (const element of elements) typeset(katex, element);
    return;
  }
  loading ??= import("katex").then((module) => (katex = module.default));
  loading.then(
    (k) => elements.forEach((element) => typeset(k, element)),
    () => (loading = null), // try again with the next answer; the TeX stays readable meanwhile
  );
}

function typeset(k: Katex, element: HTMLElement): void {
  if (element.dataset.typeset !== undefined) return;
  const tex = element.textContent ?? "";
  element.dataset.typeset = "";
  try {
    k.render(tex, element, { ...OPTIONS, displayMode: element.dataset.math === "display" });
  } catch (e) {
    element.textContent = tex;
    element.classList.add("math-error");
    element.title = e instanceof k.ParseError ? e.message : String(e);
  }
}
