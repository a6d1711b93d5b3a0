// Independent checks of structured-output (guided decoding) results: JSON Schema, regex, choice.
//
// Used by tests/e2e/structured/validate.mjs (the CLI) and tests/e2e/structured/selftest.mjs. It lives
// in this package so that "ajv" and "ajv-formats" resolve from tests/e2e/server/node_modules.
//
//  - json_schema + stop:   JSON.parse succeeds and ajv validates (2020-12 by default, the draft that
//                          "$schema" names otherwise; formats asserted with ajv-formats "full").
//  - json_schema + length: the text is a prefix of some JSON text (an incremental syntax check), and
//                          what is already there does not contradict the schema (see checkPrefix).
//  - regex + stop:         new RegExp("^(?:" + re + ")$", "u") matches the whole text.
//  - regex + length:       counted only (no check).
//  - choice + stop:        the text is exactly one of the choices; + length: a prefix of one.
import fs from "node:fs";
import Ajv07 from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { checkPrefixAgainstSchema, parseJsonPrefix } from "./json-prefix.mjs";
import { escapePointer, pointerToFragment } from "./json-pointer.mjs";

export { escapePointer, parseJsonPrefix };

// ---------------------------------------------------------------------------------------------
// Drafts
// ---------------------------------------------------------------------------------------------

// Keywords whose value is one subschema / a list of subschemas / a map of name -> subschema.
const SCHEMA_KEYWORDS = new Set([
  "additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "contains",
  "propertyNames", "not", "if", "then", "else", "contentSchema",
]);
const SCHEMA_LIST_KEYWORDS = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);
const SCHEMA_MAP_KEYWORDS = new Set(["properties", "patternProperties", "definitions", "$defs", "dependentSchemas"]);
// Values that are data, never schemas.
const DATA_KEYWORDS = new Set(["enum", "const", "default", "examples", "example", "required", "description",
  "title", "$comment", "type", "format", "pattern", "$ref", "$id", "id", "$schema", "$anchor",
  "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor", "$vocabulary", "dependentRequired",
  "self"]);  // "self": Snowplow Iglu metadata ({vendor, name, format, version}), not a schema

/** Calls visit(schemaObject, path) for every object in a schema position (conservatively: unknown
 *  keywords' object values are walked too, since "$ref" may point into them). */
export function walkSchemas(schema, visit, path = "") {
  if (schema === null || typeof schema !== "object") return;
  if (Array.isArray(schema)) {
    schema.forEach((s, i) => walkSchemas(s, visit, `${path}/${i}`));
    return;
  }
  visit(schema, path);
  for (const [k, v] of Object.entries(schema)) {
    const p = `${path}/${escapePointer(k)}`;
    if (DATA_KEYWORDS.has(k)) continue;
    if (SCHEMA_MAP_KEYWORDS.has(k) && v && typeof v === "object" && !Array.isArray(v)) {
      for (const [name, sub] of Object.entries(v)) walkSchemas(sub, visit, `${p}/${escapePointer(name)}`);
    } else if (k === "dependencies" && v && typeof v === "object") {
      for (const [name, sub] of Object.entries(v)) if (!Array.isArray(sub)) walkSchemas(sub, visit, `${p}/${escapePointer(name)}`);
    } else if (k === "items" || SCHEMA_KEYWORDS.has(k) || SCHEMA_LIST_KEYWORDS.has(k)) {
      walkSchemas(v, visit, p);
    } else if (v && typeof v === "object") {
      walkSchemas(v, visit, p);  // unknown keyword: possibly a $ref target
    }
  }
}

/** "04" | "06" | "07" | "2019" | "2020" from "$schema", or from the keywords used when it is absent. */
export function detectDraft(schema) {
  const uri = schema && typeof schema === "object" && typeof schema.$schema === "string" ? schema.$schema : null;
  if (uri !== null) {
    if (/draft-0[34]\b/.test(uri)) return "04";
    if (/draft-06\b/.test(uri)) return "06";
    if (/draft-07\b/.test(uri)) return "07";
    if (/2019-09/.test(uri)) return "2019";
    if (/2020-12/.test(uri)) return "2020";
    return "04";  // another meta-schema (e.g. Snowplow's Iglu self-describing one, a draft-04 dialect)
  }
  // No "$schema": 2020-12 (what OpenAI-style structured output means), unless the schema uses a
  // form that only an older draft gives meaning to.
  let legacy = false;
  walkSchemas(schema, (s) => {
    if (Array.isArray(s.items) || "additionalItems" in s || "dependencies" in s) legacy = true;
    if (typeof s.exclusiveMinimum === "boolean" || typeof s.exclusiveMaximum === "boolean") legacy = true;
    if (typeof s.id === "string" && !("$id" in s)) legacy = true;
  });
  return legacy ? "04" : "2020";
}

const ANNOTATIONS = new Set(["description", "title", "$comment", "default", "examples", "example", "readOnly",
  "writeOnly", "deprecated"]);

/** A copy of the schema that Ajv reads with the meaning of its draft, and the Ajv flavour to use.
 *  Drafts 04-07: "$schema" removed everywhere; "id" dropped (or made "$id" when it is a plain-name
 *  fragment that a "$ref" uses; Ajv 8 refuses "id" in every draft, so it goes in 2020-12 too); boolean exclusiveMinimum/exclusiveMaximum (draft-04) turned into
 *  the numeric form; keywords beside "$ref" other than definitions dropped (draft <= 07 ignores them,
 *  Ajv 8 would apply them). 2019-09/2020-12: nested "$schema" removed. */
export function prepareSchema(original) {
  const draft = detectDraft(original);
  const schema = structuredClone(original);
  if (typeof schema !== "object" || schema === null) return { schema, draft, flavour: draft === "2019" ? "2019" : draft === "2020" ? "2020" : "07" };
  const legacy = draft === "04" || draft === "06" || draft === "07";
  const fragmentRefs = new Set();
  walkSchemas(schema, (s) => {
    if (typeof s.$ref === "string" && /^#[^/]/.test(s.$ref)) fragmentRefs.add(s.$ref);
  });
  walkSchemas(schema, (s) => {
    delete s.$schema;
    // "id" means nothing to Ajv 8 (it refuses the keyword): a draft-04 id is dropped (base URIs
    // don't matter for "#..." refs), or kept as "$id" where a "$ref" names it as a fragment; an
    // "id" that is not a string is a misplaced property schema and means nothing in any draft.
    if ("id" in s) {
      if (legacy && typeof s.id === "string" && !("$id" in s) && fragmentRefs.has(s.id)) s.$id = s.id;
      delete s.id;
    }
    if (!legacy) return;
    for (const [bool, num] of [["exclusiveMinimum", "minimum"], ["exclusiveMaximum", "maximum"]]) {
      if (typeof s[bool] === "boolean") {
        if (s[bool] && typeof s[num] === "number") {
          s[bool] = s[num];
          delete s[num];
        } else {
          delete s[bool];
        }
      }
    }
    if (typeof s.$ref === "string") {
      for (const k of Object.keys(s)) {
        if (k !== "$ref" && k !== "definitions" && k !== "$defs" && k !== "$id" && !ANNOTATIONS.has(k)) delete s[k];
      }
    }
  });
  return { schema, draft, flavour: legacy ? "07" : draft };
}

const silentLogger = { log() {}, warn() {}, error() {} };

function makeAjv(flavour, unicodeRegExp) {
  const Cls = flavour === "2020" ? Ajv2020 : flavour === "2019" ? Ajv2019 : Ajv07;
  const warnings = [];
  const ajv = new Cls({
    strict: false, allErrors: true, validateSchema: false, unicodeRegExp,
    logger: { log() {}, warn: (...a) => warnings.push(a.join(" ")), error: silentLogger.error },
  });
  addFormats(ajv, { mode: "full" });
  return { ajv, warnings };
}

const ROOT_ID = "urn:llaisys:structured:root";

/** A compiled schema: validate(value) for the whole, and validatorAt(pointer) for a subschema.
 *  Throws when Ajv cannot compile it. Patterns are compiled with the "u" flag, or without it where
 *  a pattern is not valid in Unicode mode (e.g. "\:"); `unicode` tells which. */
export class CompiledSchema {
  constructor(original) {
    const { schema, draft, flavour } = prepareSchema(original);
    this.original = original;
    this.schema = schema;
    this.draft = draft;
    this.flavour = flavour;
    let lastError;
    for (const unicode of [true, false]) {
      try {
        const { ajv, warnings } = makeAjv(flavour, unicode);
        const withId = typeof schema === "object" && schema !== null ? { ...schema, $id: ROOT_ID } : schema;
        if (typeof withId === "object" && withId !== null) {
          ajv.addSchema(withId);
          this.validate = ajv.compile({ $ref: ROOT_ID });
        } else {
          this.validate = ajv.compile(withId);
        }
        this.ajv = ajv;
        this.warnings = warnings;
        this.unicode = unicode;
        this.subValidators = new Map();
        return;
      } catch (e) {
        lastError = e;
        if (!/regular expression|RegExp|Invalid escape|Invalid (class|group)/i.test(String(e && e.message))) break;
      }
    }
    throw lastError;
  }

  /** Errors of the whole value (an array, empty when valid). */
  errors(value) {
    return this.validate(value) ? [] : this.validate.errors.map(formatAjvError);
  }

  /** Errors of a value against the subschema at a JSON pointer of the prepared schema, or null when
   *  that subschema cannot be compiled on its own. */
  errorsAt(pointer, value) {
    let v = this.subValidators.get(pointer);
    if (v === undefined) {
      try {
        v = this.ajv.compile({ $ref: `${ROOT_ID}#${pointerToFragment(pointer)}` });
      } catch {
        v = null;
      }
      this.subValidators.set(pointer, v);
    }
    if (v === null) return null;
    return v(value) ? [] : v.errors.map(formatAjvError);
  }
}

function formatAjvError(e) {
  const params = e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : "";
  return `${e.instancePath || "/"} ${e.message}${params} (schema ${String(e.schemaPath).replace(ROOT_ID, "")})`;
}

// ---------------------------------------------------------------------------------------------
// Regex and choice
// ---------------------------------------------------------------------------------------------

/** The whole-text matcher for a guided regex: "^(?:re)$" with the "u" flag, or without it if the
 *  pattern is not valid in Unicode mode. Throws when it is not a valid pattern either way. */
export function compileRegex(re) {
  try {
    return { regex: new RegExp(`^(?:${re})$`, "u"), unicode: true };
  } catch {
    return { regex: new RegExp(`^(?:${re})$`), unicode: false };
  }
}

// ---------------------------------------------------------------------------------------------
// Checking one result
// ---------------------------------------------------------------------------------------------

/** {ok, errors, warnings} for one completion (text, finish_reason) of one case. */
export function checkCompletion(kase, text, finishReason, cache = new Map(), options = {}) {
  const errors = [];
  const warnings = [];
  if (typeof text !== "string") return { ok: false, errors: ["the result has no text"], warnings };
  if (finishReason !== "stop" && finishReason !== "length") {
    return { ok: false, errors: [`unexpected finish_reason ${JSON.stringify(finishReason)}`], warnings };
  }
  const stop = finishReason === "stop";
  // A completion cut by max_tokens may end inside a multi-byte character, which the detokenizer shows
  // as U+FFFD: that is the start of a character, not a wrong one.
  if (!stop) text = text.replace(/\uFFFD+$/u, "");
  switch (kase.kind) {
    case "json_schema": {
      let compiled;
      try {
        compiled = compiledFor(kase.schema, cache);
      } catch (e) {
        return { ok: false, errors: [`ajv cannot compile the schema: ${e.message}`], warnings };
      }
      const parsed = parseJsonPrefix(text);
      if (parsed.duplicateKeys.length) {
        (options.strictDuplicates ? errors : warnings).push(`duplicate object keys: ${JSON.stringify(parsed.duplicateKeys)}`);
      }
      if (stop) {
        let value;
        try {
          value = JSON.parse(text);
        } catch (e) {
          errors.push(`JSON.parse: ${e.message}`);
          break;
        }
        errors.push(...compiled.errors(value));
      } else {
        if (!parsed.ok) {
          errors.push(`not a prefix of any JSON text: ${parsed.error} at offset ${parsed.pos}`);
          break;
        }
        errors.push(...checkPrefixAgainstSchema(compiled, parsed.root));
      }
      break;
    }
    case "regex": {
      if (!stop) break;  // a prefix of a regex language is not checked
      let m;
      try {
        m = cachedRegex(kase.regex, cache);
      } catch (e) {
        errors.push(`invalid regex: ${e.message}`);
        break;
      }
      if (!m.regex.test(text)) errors.push(`does not match ^(?:${kase.regex})$`);
      break;
    }
    case "choice": {
      const choices = kase.choices || [];
      if (stop ? !choices.includes(text) : !choices.some((c) => c.startsWith(text))) {
        errors.push(stop ? "not one of the choices" : "not a prefix of any choice");
      }
      break;
    }
    default:
      errors.push(`unknown case kind ${JSON.stringify(kase.kind)}`);
  }
  return { ok: errors.length === 0, errors, warnings };
}

function compiledFor(schema, cache) {
  const key = `s:${JSON.stringify(schema)}`;
  if (!cache.has(key)) {
    try {
      cache.set(key, new CompiledSchema(schema));
    } catch (e) {
      cache.set(key, e);
    }
  }
  const c = cache.get(key);
  if (c instanceof Error) throw c;
  return c;
}

function cachedRegex(re, cache) {
  const key = `r:${re}`;
  if (!cache.has(key)) {
    try {
      cache.set(key, compileRegex(re));
    } catch (e) {
      cache.set(key, e);
    }
  }
  const c = cache.get(key);
  if (c instanceof Error) throw c;
  return c;
}

// ---------------------------------------------------------------------------------------------
// Files and the CLI
// ---------------------------------------------------------------------------------------------

export function readJsonl(path) {
  const out = [];
  const lines = fs.readFileSync(path, "utf8").replace(/^\uFEFF/, "").split("\n");
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    try {
      out.push(JSON.parse(line));
    } catch (e) {
      throw new Error(`${path}:${i + 1}: not JSON (${e.message})`);
    }
  });
  return out;
}

/** Checks result lines against cases; returns a report object (see formatReport). */
export function checkResults(cases, results, options = {}) {
  const byId = new Map();
  for (const c of cases) byId.set(String(c.id), c);
  const cache = new Map();
  const counts = {};  // kind -> finish_reason -> n
  const failures = [];
  const refusals = [];
  const warnings = [];
  const seen = new Set();
  let stops = 0;
  const bump = (kind, reason) => {
    counts[kind] ??= {};
    counts[kind][reason] = (counts[kind][reason] || 0) + 1;
  };
  for (const r of results) {
    const id = r.id === undefined || r.id === null ? null : String(r.id);
    const kase = id === null ? undefined : byId.get(id);
    if (!kase) {
      failures.push({ id, kind: "?", finish_reason: r.finish_reason, text: r.text, errors: [r.error ? `an error line for an unknown case: ${r.error.message}` : "no case has this id"] });
      continue;
    }
    if (seen.has(id)) failures.push({ id, kind: kase.kind, errors: ["more than one result line for this id"] });
    seen.add(id);
    if (r.error) {
      bump(kase.kind, "error");
      if (kase.expect !== "error") refusals.push({ id, kind: kase.kind, message: r.error.message ?? JSON.stringify(r.error) });
      continue;
    }
    if (kase.expect === "error") {
      failures.push({ id, kind: kase.kind, finish_reason: r.finish_reason, text: r.text, errors: ["expected the request to be refused, but it was served"] });
      continue;
    }
    const completions = Array.isArray(r.choices) && r.choices.length ? r.choices : [r];
    for (const [ci, ch] of completions.entries()) {
      bump(kase.kind, ch.finish_reason);
      if (ch.finish_reason === "stop") stops++;
      const res = checkCompletion(kase, ch.text, ch.finish_reason, cache, options);
      const cid = completions.length > 1 ? `${id}[${ci}]` : id;
      if (!res.ok) failures.push({ id: cid, kind: kase.kind, finish_reason: ch.finish_reason, text: ch.text, errors: res.errors });
      for (const w of res.warnings) warnings.push({ id: cid, warning: w });
    }
  }
  const missing = cases.filter((c) => !seen.has(String(c.id))).map((c) => String(c.id));
  if (missing.length && !options.allowMissing) {
    for (const id of missing) failures.push({ id, kind: byId.get(id).kind, errors: ["no result line for this case"] });
  }
  if (options.failOnRefusal) {
    for (const r of refusals) failures.push({ id: r.id, kind: r.kind, errors: [`refused: ${r.message}`] });
  }
  const problems = [];
  if (options.minStop !== undefined && stops < options.minStop) problems.push(`only ${stops} completions finished with "stop" (--min-stop ${options.minStop})`);
  return { counts, failures, refusals, warnings, stops, missing, problems, ok: failures.length === 0 && problems.length === 0 };
}

export function formatReport(report, { maxText = 400 } = {}) {
  const lines = [];
  lines.push("structured output check");
  for (const [kind, byReason] of Object.entries(report.counts).sort()) {
    const parts = Object.entries(byReason).sort().map(([k, v]) => `${k} ${v}`);
    lines.push(`  ${kind}: ${parts.join(", ")}`);
  }
  lines.push(`  stop results: ${report.stops}; refusals: ${report.refusals.length}; missing: ${report.missing.length}; warnings: ${report.warnings.length}`);
  if (report.refusals.length) {
    lines.push("refusals (error lines):");
    for (const r of report.refusals) lines.push(`  ${r.id}: ${r.message}`);
  }
  if (report.warnings.length) {
    lines.push("warnings:");
    for (const w of report.warnings.slice(0, 50)) lines.push(`  ${w.id}: ${w.warning}`);
    if (report.warnings.length > 50) lines.push(`  ... ${report.warnings.length - 50} more`);
  }
  if (report.failures.length) {
    lines.push(`FAILURES (${report.failures.length}):`);
    for (const f of report.failures) {
      const t = typeof f.text === "string" ? (f.text.length > maxText ? `${JSON.stringify(f.text.slice(0, maxText))}... (${f.text.length} chars)` : JSON.stringify(f.text)) : "(none)";
      lines.push(`  ${f.id} [${f.kind}${f.finish_reason ? `, ${f.finish_reason}` : ""}] text ${t}`);
      for (const e of f.errors.slice(0, 10)) lines.push(`      ${e}`);
      if (f.errors.length > 10) lines.push(`      ... ${f.errors.length - 10} more errors`);
    }
  }
  for (const p of report.problems) lines.push(`FAILURE: ${p}`);
  lines.push(report.ok ? "OK" : "FAILED");
  return lines.join("\n");
}

const USAGE = `usage: validate.mjs --results RESULTS.jsonl --cases CASES.jsonl [--min-stop N]
                    [--fail-on-refusal] [--allow-missing] [--strict-duplicates] [--json REPORT.json]
  CASES.jsonl:   {"id", "kind": "json_schema"|"regex"|"choice", "schema"|"regex"|"choices", ["expect": "error"]}
  RESULTS.jsonl: llaisys-offline generate output lines ({"id", "text", "finish_reason", ...}, or
                 {"id", "error": {...}}, or {"id", "choices": [{"text", "finish_reason"}, ...]})
  Exit code 1 on any failure (or fewer than N "stop" results), 0 otherwise.`;

export function main(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--results") opts.results = next();
    else if (a === "--cases") opts.cases = next();
    else if (a === "--min-stop") opts.minStop = Number(next());
    else if (a === "--fail-on-refusal") opts.failOnRefusal = true;
    else if (a === "--allow-missing") opts.allowMissing = true;
    else if (a === "--strict-duplicates") opts.strictDuplicates = true;
    else if (a === "--json") opts.json = next();
    else if (a === "-h" || a === "--help") { console.log(USAGE); return 0; }
    else { console.error(`unknown argument ${a}\n${USAGE}`); return 2; }
  }
  if (!opts.results || !opts.cases || (opts.minStop !== undefined && !Number.isInteger(opts.minStop))) {
    console.error(USAGE);
    return 2;
  }
  let report;
  try {
    report = checkResults(readJsonl(opts.cases), readJsonl(opts.results), opts);
  } catch (e) {
    console.error(`validate: ${e.message}`);
    return 2;
  }
  console.log(formatReport(report));
  if (opts.json) fs.writeFileSync(opts.json, JSON.stringify(report, null, 2));
  return report.ok ? 0 : 1;
}
