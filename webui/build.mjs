// Builds the web UI with esbuild.
//   node build.mjs [--outdir DIR]                 the app: DIR/index.html, app.js, app.css (default dist/)
//   node build.mjs --unit-tests [--outdir DIR]    unit-tests/*.test.ts as Node ESM (default build-unit-tests/)
// Everything is bundled: the page loads nothing but these files from the server that serves it.
import { build } from "esbuild";
import { copyFile, mkdir, readdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const unitTests = args.includes("--unit-tests");
const outdirIndex = args.indexOf("--outdir");
const outdir = path.resolve(outdirIndex >= 0 ? args[outdirIndex + 1] : path.join(here, unitTests ? "build-unit-tests" : "dist"));

async function buildApp() {
  await mkdir(outdir, { recursive: true });
  await build({
    entryPoints: { app: path.join(here, "src/main.ts"), "app-style": path.join(here, "src/styles.css") },
    outdir,
    bundle: true,
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
