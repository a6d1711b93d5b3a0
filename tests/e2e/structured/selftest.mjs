// Self-test of the structured-output validator and corpus tools, without the C++ side:
//   node --test tests/e2e/structured/selftest.mjs      (or: node tests/e2e/structured/selftest.mjs)
// Hand-written result lines: valid instances (stop) must pass; wrong type, missing required, bad format
// must fail; JSON prefixes must pass as "length", non-prefixes must fail; regex and choice both ways;
// refusals, missing/unknown ids, --min-stop; the CLI's exit codes; make_cases.py; check_corpus.mjs.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";
import {
  checkCompletion, checkResults, CompiledSchema, detectDraft, parseJsonPrefix, prepareSchema,
} from "../server/lib/structured-validate.mjs";
import { checkCorpus, isRecursive, regexProblems, unsupportedKeywords } from "./check_corpus.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const corpus = path.join(root, "tests/data/json-schemas");
const unsupportedDir = path.join(root, "tests/data/json-schemas-unsupported");
const load = (f) => JSON.parse(fs.readFileSync(path.join(corpus, f), "utf8"));

const schemaCase = (file, id = file) => ({ id, kind: "json_schema", schema: load(file) });
const ok = (kase, text, reason = "stop") => {
  const r = checkCompletion(kase, text, reason);
  assert.ok(r.ok, `expected ${JSON.stringify(text)} (${reason}) to pass: ${r.errors.join("; ")}`);
};
const bad = (kase, text, reason = "stop", match = null) => {
  const r = checkCompletion(kase, text, reason);
  assert.ok(!r.ok, `expected ${JSON.stringify(text)} (${reason}) to fail`);
  if (match) assert.match(r.errors.join("\n"), match);
};

test("incremental JSON parser: prefixes of JSON texts are accepted", () => {
  const prefixes = ["", " ", "\n\t", "{", "{\"", "{\"a", "{\"a\"", "{\"a\":", "{\"a\": 1", "{\"a\": -", "{\"a\": 1.",
    "{\"a\": 1e", "{\"a\": 1E+", "{\"a\": 0", "[tr", "[true, fa", "[null,n", "\"abc\\", "\"\\u00", "\"\\u00e9\"",
    "[[[", "{\"a\":[1,2,{\"b\":null}],", "123", "-0.5E-3", "\"é😀\u00C0\"", "{\"k\\\"ey\": \"v\\n", "[\"\\uD83D",
    "{\"a\": {}, \"b\": []}", "  [ 1 , 2 ]  "];
  for (const p of prefixes) {
    const r = parseJsonPrefix(p);
    assert.ok(r.ok, `${JSON.stringify(p)} should be a prefix: ${r.error}`);
  }
});

test("incremental JSON parser: non-prefixes are rejected", () => {
  const nonPrefixes = ["}", "]", "{,", "{\"a\" 1", "{\"a\":}", "[1,]", "[1 2", "tx", "nul l", "truee", "01", "-a",
    "1.e", "1.5.", "\"\\x\"", "\"a\nb\"", "\"tab\there\"", "{\"a\":1}}", "{} x", "[1,,", "+1", ".5", "\"\\u12G",
    "{1:2}", "{'a':1}", "[1]2", "NaN", "Infinity", "{\"a\":1,}", "\u00A0{}"];
  for (const p of nonPrefixes) {
    const r = parseJsonPrefix(p);
    assert.ok(!r.ok, `${JSON.stringify(p)} should not be a prefix`);
  }
});

test("incremental JSON parser: completeness and duplicate keys", () => {
  assert.equal(parseJsonPrefix("{}").complete, true);
  assert.equal(parseJsonPrefix(" 12 ").complete, true);
  assert.equal(parseJsonPrefix("12").complete, true);
  assert.equal(parseJsonPrefix("1.").complete, false);
  assert.equal(parseJsonPrefix("[1").complete, false);
  assert.deepEqual(parseJsonPrefix("{\"a\":1,\"b\":2,\"a\":3}").duplicateKeys, ["a"]);
  // Everything JSON.parse accepts, the parser accepts as complete.
  for (const t of ["0", "-0", "1e5", "\"\"", "[]", "{\"\":{\"\":[]}}", "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\""]) {
    JSON.parse(t);
    const r = parseJsonPrefix(t);
    assert.ok(r.ok && r.complete, t);
  }
});

test("json_schema + stop: valid instances pass, invalid ones fail", () => {
  const hotel = schemaCase("glaive-book_hotel.json");
  ok(hotel, '{"check_in_date": "2024-02-28", "check_out_date": "2024-03-02", "destination": "Oslo", "number_of_guests": 2}');
  ok(hotel, ' {"check_in_date":"2024-02-29","check_out_date":"2024-03-01","destination":"","number_of_guests":0,"room_type":"suite"}\n');
  bad(hotel, '{"check_in_date": "2024-02-28", "check_out_date": "2024-03-02", "destination": "Oslo"}', "stop", /required/);
  bad(hotel, '{"check_in_date": "2024-02-28", "check_out_date": "2024-03-02", "destination": "Oslo", "number_of_guests": "2"}', "stop", /integer/);
  bad(hotel, '{"check_in_date": "2023-02-29", "check_out_date": "2024-03-02", "destination": "Oslo", "number_of_guests": 2}', "stop", /format/);
  bad(hotel, '{"check_in_date": "2024-02-28", "check_out_date": "2024-03-02", "destination": "Oslo", "number_of_guests": 2', "stop", /JSON.parse/);
  bad(hotel, "", "stop", /JSON.parse/);
  const click = schemaCase("snowplow-link_click.json");
  ok(click, '{"targetUrl": "https://example.com", "elementClasses": ["a", "b"]}');
  bad(click, '{"targetUrl": "https://example.com", "extra": 1}', "stop", /additional/);
  bad(click, '{"targetUrl": ""}', "stop", /fewer than 1/);
  const session = schemaCase("snowplow-client_session.json");
  ok(session, '{"userId":"0123456789abcdef","sessionId":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","sessionIndex":1,"storageMechanism":"COOKIE_1","previousSessionId":null}');
  bad(session, '{"userId":"0123456789abcdef","sessionId":"not-a-uuid","sessionIndex":1,"storageMechanism":"COOKIE_1"}', "stop", /format/);
  bad(session, '{"userId":"xyz","sessionId":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","sessionIndex":1,"storageMechanism":"COOKIE_1"}', "stop", /pattern/);
  bad(session, '{"userId":"0123456789abcdef","sessionId":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","sessionIndex":-1,"storageMechanism":"DISK"}', "stop", /minimum|allowed values/);
});

test("json_schema + stop: formats are asserted in ajv-formats full mode", () => {
  const c = { id: "f", kind: "json_schema", schema: { type: "object", properties: {
    t: { type: "string", format: "time" }, dt: { type: "string", format: "date-time" }, e: { type: "string", format: "email" },
    ip: { type: "string", format: "ipv4" }, u: { type: "string", format: "uuid" }, d: { type: "string", format: "date" } } } };
  ok(c, '{"t":"12:30:00Z","dt":"2024-05-01T12:30:00+02:00","e":"a.b@example.org","ip":"10.0.0.1","u":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","d":"2024-12-31"}');
  bad(c, '{"t":"12:30:00"}', "stop", /format/);        // full mode: a time needs its offset
  bad(c, '{"dt":"2024-05-01T12:30:00"}', "stop", /format/);
  bad(c, '{"e":"a@b"}', "stop", /format/);
  bad(c, '{"ip":"256.0.0.1"}', "stop", /format/);
  bad(c, '{"d":"2024-04-31"}', "stop", /format/);
});

test("json_schema + length: prefixes pass, non-prefixes and contradictions fail", () => {
  const hotel = schemaCase("glaive-book_hotel.json");
  for (const p of ['{"check_in_date": "2024-0', "{", "", '{"number_of_guests": 1', '{"number_of_guests": 12, "dest'])
    ok(hotel, p, "length");
  bad(hotel, '{"check_in_date" 5', "length", /not a prefix/);
  bad(hotel, "[", "length", /array started/);
  bad(hotel, '{"number_of_guests": "', "length", /string started/);
  bad(hotel, '{"number_of_guests": 1.5, ', "length", /integer/);
  bad(hotel, '{"check_in_date": "2024-13-01", ', "length", /format/);
  const click = schemaCase("snowplow-link_click.json");
  ok(click, '{"tar', "length");
  ok(click, '{"targetUrl": "x', "length");
  bad(click, '{"zz', "length", /no allowed key/);
  bad(click, '{"foo": 1', "length", /not allowed/);
  const form = schemaCase("snowplow-change_form.json");
  ok(form, '{"nodeName": "TEX', "length");
  bad(form, '{"nodeName": "TEXX', "length", /not the start/);
  const browser = schemaCase("snowplow-browser_context.json");
  bad(browser, `{"viewport": "${"9".repeat(25)}`, "length", /maxLength/);
  const geo = schemaCase("snowplow-geolocation_context.json");
  ok(geo, '{"latitude": 45, "longitude": -1', "length");
  bad(geo, '{"latitude": 100, ', "length", /maximum/);
  const points = schemaCase("llaisys-tuple_point_draft07.json");
  bad(points, '{"rgb": [1, 2, 3, 4', "length", /allows nothing/);
  ok(points, '{"rgb": [1, 2, 3], "point": [0.5, ', "length");
  // U+FFFD at the very end of a cut completion is an incomplete character, not an error.
  ok(schemaCase("llaisys-user_profile_unicode.json"), '{"first_name": "Zo\uFFFD', "length");
});

test("drafts: draft-04 exclusive bounds and ids, draft-07 $ref siblings, 2020-12 default", () => {
  const d4 = { $schema: "http://json-schema.org/draft-04/schema#", type: "number", minimum: 0, exclusiveMinimum: true };
  assert.equal(detectDraft(d4), "04");
  assert.deepEqual(prepareSchema(d4).schema, { type: "number", exclusiveMinimum: 0 });
  bad({ id: "x", kind: "json_schema", schema: d4 }, "0");
  ok({ id: "x", kind: "json_schema", schema: d4 }, "0.5");
  const siblings = { definitions: { s: { type: "string" } }, properties: { a: { $ref: "#/definitions/s", maxLength: 2 } } };
  ok({ id: "x", kind: "json_schema", schema: { $schema: "http://json-schema.org/draft-07/schema#", ...siblings } }, '{"a": "long"}');
  bad({ id: "x", kind: "json_schema", schema: siblings }, '{"a": "long"}', "stop", /maxLength|more than/);
  assert.equal(detectDraft({ type: "array", items: [{ type: "string" }] }), "04");
  assert.equal(detectDraft({ type: "object" }), "2020");
  assert.equal(detectDraft(load("snowplow-link_click.json")), "04");  // Iglu's meta-schema: a draft-04 dialect
  // draft-04 "id" (relative and fragment) must not stop Ajv 8.
  ok(schemaCase("github-nightscout_models.json"),
    '{"Models.SGV":{"date":1,"dateString":"x","sgv":"120","direction":"Flat"},"Models.Timestamped":{"date":1,"dateString":"x"},"Models.Entry":{"sgv":"1","direction":"Up"}}');
  ok({ id: "x", kind: "json_schema", schema: { $schema: "http://json-schema.org/draft-04/schema#", definitions: { a: { id: "#a", type: "integer" } }, properties: { p: { $ref: "#a" } } } }, '{"p": 3}');
  // "$ref" into a non-standard location.
  ok(schemaCase("github-sample_attributes.json"), '{"Attribute": {"attribute": "ndvi", "values": 0.4}, "Sample": {"id": "s1", "timeline": ["2020-01-01"]}}');
  bad(schemaCase("github-sample_attributes.json"), '{"Attribute": {}, "Sample": {"lat": "north"}}', "stop", /number/);
  // A pattern that is not valid with the "u" flag ("\:") is still checked.
  assert.equal(new CompiledSchema(load("github-mdjson_reusable.json")).unicode, false);
});

test("recursive, anyOf/oneOf and unicode schemas", () => {
  const tree = schemaCase("llaisys-tree_node.json");
  ok(tree, '{"label":"root","children":[{"label":"a","value":3,"children":[{"label":"b","children":[]}]}]}');
  bad(tree, '{"label":"root","children":[{"label":"a","children":[{"children":[]}]}]}', "stop", /label/);
  ok(schemaCase("llaisys-linked_list.json"), '{"value":1,"next":{"value":2,"next":null}}');
  bad(schemaCase("llaisys-linked_list.json"), '{"value":1,"next":{"value":"2","next":null}}');
  ok(schemaCase("llaisys-json_value.json"), '{"a":[1,"x",null,{"b":true}],"c":-2.5}');
  ok(schemaCase("llaisys-nested_int_lists.json"), "[1,[2,[3,[]]],4]");
  bad(schemaCase("llaisys-nested_int_lists.json"), '[1,["x"]]');
  const patch = schemaCase("schemastore-json_patch.json");
  ok(patch, '[{"op":"add","path":"/a","value":{"x":1}},{"op":"remove","path":"/b"},{"op":"move","from":"/c","path":"/d"}]');
  bad(patch, '[{"op":"remove","path":"/b","value":1}]', "stop", /oneOf|additional/);
  const fs_ = schemaCase("llaisys-file_system.json");
  ok(fs_, '{"type":"directory","name":"src","entries":[{"type":"file","name":"a.c","size":10},{"type":"directory","name":"x","entries":[]}]}');
  bad(fs_, '{"type":"directory","name":"src","entries":[{"type":"file","name":"a.c"}]}');
  ok(schemaCase("llaisys-user_profile_unicode.json"), '{"first_name":"Zoë","last_name":"Łukasiewicz","birth_date":"1990-01-01","city":"Zürich"}');
  bad(schemaCase("llaisys-user_profile_unicode.json"), '{"first_name":"Зоя","last_name":"X","birth_date":"1990-01-01"}', "stop", /pattern/);
  ok(schemaCase("llaisys-any_value.json"), "\"anything\"");
  ok(schemaCase("snowplow-swiftui_open_window.json"), "{}");
  bad(schemaCase("snowplow-swiftui_open_window.json"), '{"a":1}');
});

test("regex cases", () => {
  const semver = { id: "r", kind: "regex", regex: "(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)" };
  ok(semver, "1.20.3");
  bad(semver, "1.20", "stop", /does not match/);
  bad(semver, "v1.2.3", "stop");
  ok(semver, "1.2", "length");  // a cut regex completion is only counted
  const alt = { id: "r", kind: "regex", regex: "true|false" };
  ok(alt, "false");
  bad(alt, "truefalse");  // the whole text must match: ^(?:true|false)$
  const uni = { id: "r", kind: "regex", regex: "[A-Za-z\\u00C0-\\u017F]{2,20}" };
  ok(uni, "Dvořák");
  bad(uni, "Москва");
  bad({ id: "r", kind: "regex", regex: "(" }, "x", "stop", /invalid regex/);
});

test("choice cases", () => {
  const c = { id: "c", kind: "choice", choices: ["a", "ab", "abc"] };
  ok(c, "ab");
  bad(c, "abd", "stop", /not one of/);
  bad(c, "ab ", "stop");
  ok(c, "ab", "length");
  ok(c, "", "length");
  bad(c, "abd", "length", /not a prefix/);
  const emoji = { id: "c", kind: "choice", choices: ["👍", "👍🏽"] };
  ok(emoji, "👍", "stop");
  ok(emoji, "👍\uFFFD", "length");
  bad(emoji, "👎", "length");
  ok({ id: "c", kind: "choice", choices: ["He said \"hi\"", "line1\nline2"] }, "line1\nline2");
});

test("result files: refusals, expected refusals, missing and unknown ids, finish reasons, --min-stop, n > 1", () => {
  const cases = [
    schemaCase("glaive-book_hotel.json", "h#0"),
    { id: "c#0", kind: "choice", choices: ["yes", "no"] },
    { id: "r#0", kind: "regex", regex: "[0-9]+" },
    { ...schemaCase("llaisys-tree_node.json"), id: "refuse#0", expect: "error" },
    { id: "c#1", kind: "choice", choices: ["yes", "no"] },
  ];
  const good = [
    { id: "h#0", text: '{"check_in_date":"2024-01-01","check_out_date":"2024-01-02","destination":"x","number_of_guests":1}', finish_reason: "stop" },
    { id: "c#0", text: "ye", finish_reason: "length" },
    { id: "r#0", choices: [{ index: 0, text: "12", finish_reason: "stop" }, { index: 1, text: "3", finish_reason: "length" }] },
    { id: "refuse#0", error: { message: "unsupported keyword", type: "invalid_request", line: 4 } },
    { id: "c#1", error: { message: "overloaded" } },
  ];
  let rep = checkResults(cases, good);
  assert.equal(rep.ok, true, JSON.stringify(rep.failures));
  assert.equal(rep.refusals.length, 1);
  assert.equal(rep.stops, 2);
  assert.deepEqual(rep.counts.regex, { stop: 1, length: 1 });
  assert.equal(checkResults(cases, good, { failOnRefusal: true }).ok, false);
  assert.equal(checkResults(cases, good, { minStop: 3 }).ok, false);
  assert.equal(checkResults(cases, good, { minStop: 2 }).ok, true);
  rep = checkResults(cases, good.slice(0, 3));
  assert.equal(rep.ok, false);
  assert.deepEqual(rep.missing, ["refuse#0", "c#1"]);
  assert.equal(checkResults(cases, good.slice(0, 3), { allowMissing: true }).ok, true);
  rep = checkResults(cases, [...good, { id: "nope", text: "x", finish_reason: "stop" }]);
  assert.equal(rep.ok, false);
  rep = checkResults(cases, good.map((r) => (r.id === "refuse#0" ? { id: "refuse#0", text: '{"label":"x","children":[]}', finish_reason: "stop" } : r)));
  assert.match(JSON.stringify(rep.failures), /expected the request to be refused/);
  rep = checkResults(cases, good.map((r) => (r.id === "c#0" ? { ...r, finish_reason: "abort" } : r)));
  assert.match(JSON.stringify(rep.failures), /unexpected finish_reason/);
  rep = checkResults(cases, good.map((r) => (r.id === "c#0" ? { ...r, text: "maybe", finish_reason: "stop" } : r)));
  assert.equal(rep.failures.length, 1);
  const dup = [schemaCase("llaisys-word_counts.json", "w#0")];
  const dupResult = [{ id: "w#0", text: '{"total": 2, "a": 1, "a": 2}', finish_reason: "stop" }];
  assert.equal(checkResults(dup, dupResult).ok, true);
  assert.equal(checkResults(dup, dupResult).warnings.length, 1);
  assert.equal(checkResults(dup, dupResult, { strictDuplicates: true }).ok, false);
});

test("CLI: exit codes and report", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "structured-selftest-"));
  try {
    const cases = [{ id: "a", kind: "choice", choices: ["x", "y"] }, schemaCase("glaive-analyze_stock_market.json", "b")];
    fs.writeFileSync(path.join(dir, "CASES.jsonl"), cases.map((c) => JSON.stringify(c)).join("\n") + "\n");
    const write = (rows) => fs.writeFileSync(path.join(dir, "RESULTS.jsonl"), rows.map((c) => JSON.stringify(c)).join("\n") + "\n");
    const run = (...extra) => spawnSync(process.execPath, [path.join(here, "validate.mjs"), "--results", path.join(dir, "RESULTS.jsonl"), "--cases", path.join(dir, "CASES.jsonl"), ...extra], { encoding: "utf8" });
    write([{ id: "a", text: "y", finish_reason: "stop" }, { id: "b", text: '{"company": "ACME", "date_range": {"start_date": "a", "end_date": "b"}}', finish_reason: "stop" }]);
    let r = run();
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /choice: stop 1/);
    assert.match(r.stdout, /\nOK$/m);
    r = run("--min-stop", "3");
    assert.equal(r.status, 1);
    write([{ id: "a", text: "z", finish_reason: "stop" }, { id: "b", text: '{"company": 7}', finish_reason: "stop" }]);
    r = run();
    assert.equal(r.status, 1);
    assert.match(r.stdout, /FAILURES \(2\)/);
    assert.match(r.stdout, /must have required property 'date_range'/);
    assert.equal(run("--bogus").status, 2);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("make_cases.py writes requests and cases", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "structured-cases-"));
  try {
    const r = spawnSync("python3", [path.join(here, "make_cases.py"), "--out-dir", dir, "--seeds", "0,1", "--limit", "3", "--max-tokens", "64", "--unsupported"], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const read = (f) => fs.readFileSync(path.join(dir, f), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    const requests = read("REQUESTS.jsonl");
    const cases = read("CASES.jsonl");
    const nUnsupported = fs.readdirSync(unsupportedDir).filter((f) => f.endsWith(".json")).length;
    assert.equal(cases.length, 3 * 2 * 3 + nUnsupported);
    assert.equal(requests.length, cases.length);
    const first = requests[0];
    assert.equal(first.id, `${fs.readdirSync(corpus).filter((f) => f.endsWith(".json") && !["regexes.json", "choices.json"].includes(f)).sort()[0]}#0`);
    assert.deepEqual(Object.keys(first).sort(), ["guided_json", "id", "max_tokens", "prompt", "seed", "temperature"]);
    assert.equal(first.temperature, 1);
    assert.equal(first.max_tokens, 64);
    assert.ok(requests.some((q) => typeof q.guided_regex === "string" && q.id.startsWith("regex:")));
    assert.ok(requests.some((q) => Array.isArray(q.guided_choice) && q.id.startsWith("choice:")));
    assert.ok(cases.filter((c) => c.expect === "error").length === nUnsupported);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("corpus: sizes, listing, no refused keyword in the main folder, statistics", () => {
  const { problems, report } = checkCorpus({ mainDir: corpus, unsupportedDir });
  assert.deepEqual(problems, []);
  assert.ok(report.files >= 180, `${report.files} schemas`);
  assert.ok(report.recursive.length >= 15, `${report.recursive.length} recursive`);
  assert.ok(report.anyOneOf.length >= 20, `${report.anyOneOf.length} anyOf/oneOf`);
  assert.ok(report.unsupported >= 10);
  assert.ok(report.regexes >= 40 && report.choices >= 15);
  // The keyword check looks at keywords, not at property names.
  assert.deepEqual(unsupportedKeywords({ properties: { not: { type: "string" }, if: {} } }), []);
  assert.deepEqual(unsupportedKeywords({ items: { uniqueItems: true } }).map((u) => u.keyword), ["uniqueItems"]);
  assert.deepEqual(unsupportedKeywords({ $defs: { a: { anyOf: [{ not: {} }] } } }).map((u) => u.path), ["/$defs/a/anyOf/0/not"]);
  assert.deepEqual(regexProblems("^(?=a)b$"), ["lookaround"]);
  assert.deepEqual(regexProblems("(a)\\1"), ["backreference"]);
  assert.equal(isRecursive({ $ref: "#/$defs/n", $defs: { n: { properties: { c: { $ref: "#/$defs/n" } } } } }), true);
  assert.equal(isRecursive({ type: "array", items: { $ref: "#" } }), true);
  assert.equal(isRecursive({ $defs: { a: { type: "string" } }, properties: { x: { $ref: "#/$defs/a" } } }), false);
});
