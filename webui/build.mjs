// Builds the web UI with esbuild.
//   node build.mjs [--outdir DIR]                 the app (default dist/): DIR/index.html, app.js, app.css,
//                                                 chunks/*.js (loaded on demand), fonts/*.woff2 (KaTeX's)
//   node build.mjs --unit-tests [--outdir DIR]    unit-tests/*.test.ts as Node ESM (default build-unit-tests/)
// Everything is bundled: the page loads nothing but these files from the server that serves it.
// highlight.js (its core and each language) and KaTeX are split into chunks that app.js imports
// only when an answer has code or math; KaTeX's stylesheet is in app.css, with its fonts as woff2
// only (every browser the build targets reads woff2; the server knows font/woff2).
import { build } from "esbuild";
import { copyFile, mkdir, readdir, readFile, rename, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const unitTests = args.includes("--unit-tests");
const outdirIndex = args.indexOf("--outdir");
const outdir = path.resolve(outdirIndex >= 0 ? args[outdirIndex + 1] : path.join(here, unitTests ? "build-unit-tests" : "dist"));

// KaTeX's stylesheet names each font three times (woff2, woff, ttf); keep the woff2.
const katexWoff2Only = {
  name: "katex-woff2-only",
  setup(b) {
    b.onLoad({ filter: /[\\/]katex[\\/]dist[\\/]katex\.css$/ }, async (args) => {
      const css = await readFile(args.path, "utf8");
      const contents = css.replace(/,\s*url\([^)]*\.(?:woff|ttf)\)\s*format\("(?:woff|truetype)"\)/g, "");
      if (/\.(?:woff|ttf)\)/.test(contents)) throw new Error("katex.css: a font other than woff2 is left; update the filter");
      return { contents, loader: "css", resolveDir: path.dirname(args.path) };
    });
  },
};

async function buildApp() {
  await mkdir(outdir, { recursive: true });
  // Chunk and font names change with their content: drop the previous build's.
  await rm(path.join(outdir, "chunks"), { recursive: true, force: true });
  await rm(path.join(outdir, "fonts"), { recursive: true, force: true });
  await build({
    entryPoints: { app: path.join(here, "src/main.ts"), "app-style": path.join(here, "src/styles.css") },
    outdir,
    bundle: true,
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    assetNames: "fonts/[name]",
    loader: { ".woff2": "file" },
    plugins: [katexWoff2Only],
    minify: true,
    format: "esm",
    target: ["chrome111", "firefox111", "safari16.4"],
    legalComments: "linked",
    logLevel: "warning",
  });
  // esbuild names the CSS entry after its key; index.html links app.css.
  await rename(path.join(outdir, "app-style.css"), path.join(outdir, "app.css"));
  await copyFile(path.join(here, "src/index.html"), path.join(outdir, "index.html"));
}

async function buildUnitTests() {
  await rm(outdir, { recursive: true, force: true });
  const dir = path.join(here, "unit-tests");
  const entries = (await readdir(dir)).filter((f) => f.endsWith(".test.ts")).map((f) => path.join(dir, f));
  await build({
    entryPoints: entries,
    outdir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node18",
    logLevel: "warning",
  });
}

await (unitTests ? buildUnitTests() : buildApp());
