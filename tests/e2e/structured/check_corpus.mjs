// Checks the vendored structured-output corpus (no model, no C++ needed):
//   tests/data/json-schemas/             every *.json: valid JSON, < 30 KB, named <source>-<name>.json,
//                                        listed in SOURCES.md, compiles with Ajv (its own draft), only
//                                        local "$ref"s, patterns without lookaround/backreferences, and
//                                        none of the keywords the compiler refuses, anywhere in a schema
//                                        position; the folder under 2 MB
//   tests/data/json-schemas-unsupported/ every *.json uses at least one refused keyword and is listed
//                                        in README.md
//   regexes.json / choices.json          well-formed; each regex compiles with the "u" flag and matches
//                                        its examples and none of its counter-examples
// and prints corpus statistics (drafts, recursive, anyOf/oneOf, formats, patterns).
//
// Usage: node tests/e2e/structured/check_corpus.mjs [--main DIR] [--unsupported DIR] [--quiet]
// Exit code 1 on any problem.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CompiledSchema, compileRegex, walkSchemas } from "../server/lib/structured-validate.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../..");

/** Keywords the guided-decoding compiler refuses with a 400. */
export const UNSUPPORTED_KEYWORDS = [
  "uniqueItems", "contains", "minContains", "maxContains", "minProperties", "maxProperties",
  "patternProperties", "propertyNames", "dependentRequired", "dependentSchemas", "dependencies",
  "if", "then", "else", "not", "multipleOf", "unevaluatedProperties", "unevaluatedItems",
];

const KNOWN_FORMATS = new Set(["date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
  "uri", "uri-reference"]);

/** [{keyword, path}] for refused keywords in schema positions (property names are not keywords). */
export function unsupportedKeywords(schema) {
  const found = [];
  walkSchemas(schema, (s, p) => {
    for (const k of UNSUPPORTED_KEYWORDS) {
      if (!Object.prototype.hasOwnProperty.call(s, k)) continue;
      if (k === "multipleOf" && s[k] === 1) continue;  // "an integer": the compiler takes multipleOf 1
      found.push({ keyword: k, path: `${p}/${k}` });
    }
  });
  return found;
}

/** Lookaround, backreferences and named groups: ECMAScript features a DFA-based compiler cannot take. */
export function regexProblems(re) {
  const problems = [];
  if (/\(\?<?[=!]/.test(re)) problems.push("lookaround");
  if (/\\[1-9]|\\k</.test(re)) problems.push("backreference");
  if (/\(\?<[A-Za-z]/.test(re)) problems.push("named group");
  return problems;
}

/** Local "$ref" targets reachable in a cycle (the schema is recursive). */
export function isRecursive(schema) {
  const refsUnder = new Map();  // pointer -> [target pointers of $refs located at or below it]
  const all = [];
  walkSchemas(schema, (s, p) => {
    if (typeof s.$ref === "string" && s.$ref.startsWith("#")) {
      all.push({ at: p, target: decodeURIComponent(s.$ref.slice(1)) });
    }
  });
  const targets = [...new Set(all.map((r) => r.target))];
  for (const t of targets) refsUnder.set(t, all.filter((r) => r.at === t || r.at.startsWith(`${t}/`) || t === "").map((r) => r.target));
  const state = new Map();
  const visit = (t) => {
    if (state.get(t) === 1) return true;
    if (state.get(t) === 2) return false;
    state.set(t, 1);
    for (const n of refsUnder.get(t) || []) if (visit(n)) return true;
    state.set(t, 2);
    return false;
  };
  return targets.some((t) => visit(t));
}

function stats(schema) {
  const s = { anyOf: 0, oneOf: 0, allOf: 0, formats: new Set(), patterns: [], refs: 0, nonLocalRefs: [] };
  walkSchemas(schema, (o) => {
    if (Array.isArray(o.anyOf)) s.anyOf++;
    if (Array.isArray(o.oneOf)) s.oneOf++;
    if (Array.isArray(o.allOf)) s.allOf++;
    if (typeof o.format === "string") s.formats.add(o.format);
    if (typeof o.pattern === "string") s.patterns.push(o.pattern);
    if (typeof o.$ref === "string") {
      s.refs++;
      if (!o.$ref.startsWith("#")) s.nonLocalRefs.push(o.$ref);
    }
  });
  return s;
}

function schemaFiles(dir) {
  return fs.readdirSync(dir).filter((f) => f.endsWith(".json") && f !== "regexes.json" && f !== "choices.json").sort();
}

export function checkCorpus({ mainDir, unsupportedDir }) {
  const problems = [];
  const report = { files: 0, bytes: 0, drafts: {}, recursive: [], anyOneOf: [], withFormats: [], withPatterns: [], unknownFormats: {}, nonUnicodePatterns: [] };
  const sources = fs.readFileSync(path.join(mainDir, "SOURCES.md"), "utf8");
  for (const f of schemaFiles(mainDir)) {
    const p = path.join(mainDir, f);
    const text = fs.readFileSync(p, "utf8");
    report.files++;
    report.bytes += Buffer.byteLength(text);
    if (Buffer.byteLength(text) > 30 * 1024) problems.push(`${f}: ${Buffer.byteLength(text)} bytes (over 30 KB)`);
    if (!/^[a-z0-9]+-[A-Za-z0-9_.-]+\.json$/.test(f)) problems.push(`${f}: not named <source>-<name>.json`);
    if (!sources.includes(`| ${f} |`)) problems.push(`${f}: not listed in SOURCES.md`);
    let schema;
    try {
      schema = JSON.parse(text);
    } catch (e) {
      problems.push(`${f}: not JSON (${e.message})`);
      continue;
    }
    for (const u of unsupportedKeywords(schema)) problems.push(`${f}: unsupported keyword "${u.keyword}" at ${u.path}`);
    const st = stats(schema);
    for (const r of st.nonLocalRefs) problems.push(`${f}: non-local $ref ${r}`);
    for (const re of st.patterns) for (const pr of regexProblems(re)) problems.push(`${f}: pattern ${JSON.stringify(re)} uses ${pr}`);
    try {
      const c = new CompiledSchema(schema);
      report.drafts[c.draft] = (report.drafts[c.draft] || 0) + 1;
      if (!c.unicode) report.nonUnicodePatterns.push(f);
    } catch (e) {
      problems.push(`${f}: Ajv cannot compile it: ${e.message}`);
    }
    if (isRecursive(schema)) report.recursive.push(f);
    if (st.anyOf + st.oneOf > 0) report.anyOneOf.push(f);
    if (st.formats.size) report.withFormats.push(f);
    if (st.patterns.length) report.withPatterns.push(f);
    for (const fm of st.formats) if (!KNOWN_FORMATS.has(fm)) (report.unknownFormats[fm] ??= []).push(f);
  }
  if (report.bytes > 2 * 1024 * 1024) problems.push(`the corpus is ${report.bytes} bytes (over 2 MB)`);

  const readme = fs.readFileSync(path.join(unsupportedDir, "README.md"), "utf8");
  report.unsupported = 0;
  for (const f of schemaFiles(unsupportedDir)) {
    report.unsupported++;
    const schema = JSON.parse(fs.readFileSync(path.join(unsupportedDir, f), "utf8"));
    if (!unsupportedKeywords(schema).length) problems.push(`unsupported/${f}: uses none of ${UNSUPPORTED_KEYWORDS.join(", ")}`);
    if (!readme.includes(`| ${f} |`)) problems.push(`unsupported/${f}: not listed in README.md`);
  }

  const regexes = JSON.parse(fs.readFileSync(path.join(mainDir, "regexes.json"), "utf8"));
  report.regexes = regexes.length;
  const names = new Set();
  for (const r of regexes) {
    const where = `regexes.json ${r.name}`;
    if (typeof r.name !== "string" || names.has(r.name)) problems.push(`${where}: missing or duplicate name`);
    names.add(r.name);
    for (const pr of regexProblems(r.regex)) problems.push(`${where}: uses ${pr}`);
    let m;
    try {
      m = compileRegex(r.regex);
    } catch (e) {
      problems.push(`${where}: invalid: ${e.message}`);
      continue;
    }
    if (!m.unicode) problems.push(`${where}: not valid with the "u" flag`);
    for (const ex of r.examples || []) if (!m.regex.test(ex)) problems.push(`${where}: example ${JSON.stringify(ex)} does not match`);
    for (const ex of r.counterexamples || []) if (m.regex.test(ex)) problems.push(`${where}: counter-example ${JSON.stringify(ex)} matches`);
    if (!(r.examples || []).length) problems.push(`${where}: no examples`);
  }
  const choices = JSON.parse(fs.readFileSync(path.join(mainDir, "choices.json"), "utf8"));
  report.choices = choices.length;
  const cnames = new Set();
  for (const c of choices) {
    const where = `choices.json ${c.name}`;
    if (typeof c.name !== "string" || cnames.has(c.name)) problems.push(`${where}: missing or duplicate name`);
    cnames.add(c.name);
    if (!Array.isArray(c.choices) || c.choices.length < 1) problems.push(`${where}: no choices`);
    else {
      if (c.choices.some((x) => typeof x !== "string" || x === "")) problems.push(`${where}: choices must be non-empty strings`);
      if (new Set(c.choices).size !== c.choices.length) problems.push(`${where}: duplicate choices`);
    }
  }
  return { problems, report };
}

function main(argv) {
  let mainDir = path.join(repoRoot, "tests/data/json-schemas");
  let unsupportedDir = path.join(repoRoot, "tests/data/json-schemas-unsupported");
  let quiet = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--main") mainDir = argv[++i];
    else if (argv[i] === "--unsupported") unsupportedDir = argv[++i];
    else if (argv[i] === "--quiet") quiet = true;
    else {
      console.error("usage: check_corpus.mjs [--main DIR] [--unsupported DIR] [--quiet]");
      return 2;
    }
  }
  const { problems, report } = checkCorpus({ mainDir, unsupportedDir });
  const r = report;
  console.log(`corpus: ${r.files} schemas (${(r.bytes / 1024).toFixed(0)} KB), ${r.unsupported} unsupported, ${r.regexes} regexes, ${r.choices} choice lists`);
  console.log(`  drafts (as validated): ${Object.entries(r.drafts).sort().map(([k, v]) => `${k}: ${v}`).join(", ")}`);
  console.log(`  recursive: ${r.recursive.length}; anyOf/oneOf: ${r.anyOneOf.length}; with formats: ${r.withFormats.length}; with patterns: ${r.withPatterns.length}`);
  if (!quiet) {
    console.log(`  recursive: ${r.recursive.join(" ")}`);
    console.log(`  formats the compiler may not know (annotation-only under Ajv): ${Object.entries(r.unknownFormats).map(([k, v]) => `${k} (${v.join(", ")})`).join("; ") || "none"}`);
    console.log(`  patterns invalid with the "u" flag (validated without it): ${r.nonUnicodePatterns.join(" ") || "none"}`);
  }
  for (const p of problems) console.log(`PROBLEM: ${p}`);
  console.log(problems.length ? `FAILED (${problems.length} problems)` : "OK");
  return problems.length ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
