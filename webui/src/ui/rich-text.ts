// Answers and their reasoning as rich text: markdown.ts's HTML, then code blocks highlighted and
// math typeset in place, each as soon as its lazily loaded module is there (until then the plain
// code and the TeX source are shown). Both only ever replace the text of an element that holds
// text: highlight.js returns escaped code in spans, KaTeX builds its own elements.
import { canHighlight, highlightNow, loadLanguage } from "../highlight";
import { renderMarkdown } from "../markdown";
import { typesetMath } from "./math";

export function setRichText(element: HTMLElement, markdown: string): void {
  element.innerHTML = renderMarkdown(markdown);
  for (const code of element.querySelectorAll<HTMLElement>("code[data-lang]")) highlight(code);
  typesetMath(element);
}

function highlight(code: HTMLElement, mayLoad = true): void {
  const language = code.dataset.lang ?? "";
  if (!canHighlight(language) || code.dataset.highlighted !== undefined) return;
  const html = highlightNow(code.textContent ?? "", language);
  if (html === null) {
    if (!mayLoad) return;
    loadLanguage(language).then(
      () => highlight(code, false),
      () => undefined, // the code stays plain text
    );
    return;
  }
  code.innerHTML = html;
  code.classList.add("hljs");
  code.dataset.highlighted = "";
}
