// Syntax highlighting with highlight.js, loaded on demand: its core with the first code block in a
// known language, and each language's grammar the first time it is needed (esbuild puts each in a
// chunk of its own, loaded from this server). highlight.js escapes the code it returns, which holds
// no markup but its own <span class="hljs-...">, so model text never becomes HTML.
// No DOM here: ui/rich-text.ts applies the result; unit-tested in unit-tests/highlight.test.ts.
import type { HLJSApi, LanguageFn } from "highlight.js";

type LanguageModule = Promise<{ default: LanguageFn }>;

// One entry per language of languages.ts ("plaintext" has nothing to highlight).
const GRAMMARS: Readonly<Record<string, () => LanguageModule>> = {
  bash: () => import("highlight.js/lib/languages/bash"),
  c: () => import("highlight.js/lib/languages/c"),
  cmake: () => import("highlight.js/lib/languages/cmake"),
  cpp: () => import("highlight.js/lib/languages/cpp"),
  csharp: () => import("highlight.js/lib/languages/csharp"),
  css: () => import("highlight.js/lib/languages/css"),
  diff: () => import("highlight.js/lib/languages/diff"),
  dockerfile: () => import("highlight.js/lib/languages/dockerfile"),
  go: () => import("highlight.js/lib/languages/go"),
  ini: () => import("highlight.js/lib/languages/ini"),
  java: () => import("highlight.js/lib/languages/java"),
  javascript: () => import("highlight.js/lib/languages/javascript"),
  json: () => import("highlight.js/lib/languages/json"),
  kotlin: () => import("highlight.js/lib/languages/kotlin"),
  latex: () => import("highlight.js/lib/languages/latex"),
  lua: () => import("highlight.js/lib/languages/lua"),
  makefile: () => import("highlight.js/lib/languages/makefile"),
  markdown: () => import("highlight.js/lib/languages/markdown"),
  php: () => import("highlight.js/lib/languages/php"),
  python: () => import("highlight.js/lib/languages/python"),
  r: () => import("highlight.js/lib/languages/r"),
  ruby: () => import("highlight.js/lib/languages/ruby"),
  rust: () => import("highlight.js/lib/languages/rust"),
  scala: () => import("highlight.js/lib/languages/scala"),
  sql: () => import("highlight.js/lib/languages/sql"),
  swift: () => import("highlight.js/lib/languages/swift"),
  typescript: () => import("highlight.js/lib/languages/typescript"),
  xml: () => import("highlight.js/lib/languages/xml"),
  yaml: () => import("highlight.js/lib/languages/yaml"),
};

let core: HLJSApi | null = null;
let coreLoading: Promise<HLJSApi> | null = null;
const loading = new Map<string, Promise<void>>();

export function canHighlight(language: string): boolean {
  return Object.hasOwn(GRAMMARS, language);
}

// The highlighted HTML of `code`, or null while the language is not loaded (see loadLanguage).
export function highlightNow(code: string, language: string): string | null {
  if (core === null || core.getLanguage(language) === undefined) return null;
  return core.highlight(code, { language, ignoreIllegals: true }).value;
}

// Loads the core and the language's grammar; resolves when highlightNow can use it. A failed load
// (connection lost) is forgotten, so a later call tries again.
export function loadLanguage(language: string): Promise<void> {
  const grammar = GRAMMARS[language];
  if (grammar === undefined) return Promise.resolve();
  let done = loading.get(language);
  if (done === undefined) {
    done = Promise.all([loadCore(), grammar()]).then(([hljs, module]) => hljs.registerLanguage(language, module.default));
    done.catch(() => loading.delete(language));
    loading.set(language, done);
  }
  return done;
}

function loadCore(): Promise<HLJSApi> {
  coreLoading ??= import("highlight.js/lib/core").then((module) => (core = module.default));
  coreLoading.catch(() => (coreLoading = null));
  return coreLoading;
}
