// The programming languages the UI knows by name: what a code fence's info string or a file's
// extension maps to. One canonical name per language (highlight.js's module name); the highlighter
// (ui/highlight.ts) loads exactly these, and attachments (attachments.ts) label fences with them.

interface LanguageNames {
  aliases: readonly string[]; // other names seen after ``` (lowercase)
  extensions: readonly string[]; // file extensions, without the dot (lowercase)
}

const LANGUAGES: Readonly<Record<string, LanguageNames>> = {
  bash: { aliases: ["sh", "shell", "zsh", "console"], extensions: ["sh", "bash", "zsh"] },
  c: { aliases: ["h"], extensions: ["c", "h"] },
  cmake: { aliases: [], extensions: ["cmake"] },
  cpp: { aliases: ["c++", "cc", "cxx", "hpp", "hh", "hxx", "cuda", "cu"], extensions: ["cpp", "cc", "cxx", "hpp", "hh", "hxx", "cu", "cuh", "inl"] },
  csharp: { aliases: ["cs", "c#"], extensions: ["cs"] },
  css: { aliases: [], extensions: ["css"] },
  diff: { aliases: ["patch"], extensions: ["diff", "patch"] },
  dockerfile: { aliases: ["docker"], extensions: ["dockerfile"] },
  go: { aliases: ["golang"], extensions: ["go"] },
  ini: { aliases: ["toml", "cfg", "conf"], extensions: ["ini", "toml", "cfg", "conf"] },
  java: { aliases: [], extensions: ["java"] },
  javascript: { aliases: ["js", "jsx", "mjs", "cjs", "node"], extensions: ["js", "jsx", "mjs", "cjs"] },
  json: { aliases: ["jsonl", "jsonc"], extensions: ["json", "jsonl", "jsonc"] },
  kotlin: { aliases: ["kt"], extensions: ["kt", "kts"] },
  latex: { aliases: ["tex"], extensions: ["tex"] },
  lua: { aliases: [], extensions: ["lua"] },
  makefile: { aliases: ["make", "mk"], extensions: ["mk", "mak"] },
  markdown: { aliases: ["md"], extensions: ["md", "markdown"] },
  php: { aliases: [], extensions: ["php"] },
  plaintext: { aliases: ["text", "txt", "plain"], extensions: ["txt", "log", "csv", "tsv"] },
  python: { aliases: ["py", "python3"], extensions: ["py", "pyi"] },
  r: { aliases: [], extensions: ["r"] },
  ruby: { aliases: ["rb"], extensions: ["rb"] },
  rust: { aliases: ["rs"], extensions: ["rs"] },
  scala: { aliases: [], extensions: ["scala"] },
  sql: { aliases: [], extensions: ["sql"] },
  swift: { aliases: [], extensions: ["swift"] },
  typescript: { aliases: ["ts", "tsx", "mts"], extensions: ["ts", "tsx", "mts", "cts"] },
  xml: { aliases: ["html", "svg", "xhtml"], extensions: ["xml", "html", "htm", "svg", "xhtml"] },
  yaml: { aliases: ["yml"], extensions: ["yaml", "yml"] },
};

const BY_NAME = new Map<string, string>();
const BY_EXTENSION = new Map<string, string>();
for (const [name, { aliases, extensions }] of Object.entries(LANGUAGES)) {
  BY_NAME.set(name, name);
  for (const alias of aliases) BY_NAME.set(alias, name);
  for (const extension of extensions) BY_EXTENSION.set(extension, name);
}

// The canonical name for what follows ``` (its first word, any case); null for an unknown language.
export function languageFromFenceInfo(info: string): string | null {
  const word = info.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  return BY_NAME.get(word) ?? null;
}

// The canonical name for a file name by its extension (Dockerfile and Makefile by their name);
// null when the extension is unknown.
export function languageFromFileName(fileName: string): string | null {
  const base = fileName.split(/[\\/]/).pop()?.toLowerCase() ?? "";
  if (base === "dockerfile" || base.startsWith("dockerfile.")) return "dockerfile";
  if (base === "makefile" || base === "gnumakefile") return "makefile";
  if (base === "cmakelists.txt") return "cmake";
  const dot = base.lastIndexOf(".");
  return dot > 0 ? (BY_EXTENSION.get(base.slice(dot + 1)) ?? null) : null;
}

export function knownLanguages(): string[] {
  return Object.keys(LANGUAGES);
}
