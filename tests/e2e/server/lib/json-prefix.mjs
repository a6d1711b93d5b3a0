// The JSON prefix checks of structured-validate.mjs: an incremental syntax check (is this text the
// start of some JSON text?) and a schema-aware check of what a cut-off document already holds.
import { escapePointer, getByPointer } from "./json-pointer.mjs";

// ---------------------------------------------------------------------------------------------
// Incremental JSON syntax (prefix) checker
// ---------------------------------------------------------------------------------------------

const WS = new Set([" ", "\t", "\n", "\r"]);
const HEX = /^[0-9a-fA-F]$/;

/**
 * Parses text as the beginning of a JSON text. Returns {ok, error, pos, root, complete}: ok is true iff
 * no syntax error occurs before the end of the text (so some continuation makes it a JSON text);
 * complete is true iff the text already is a whole JSON text. root is a partial tree:
 *   {kind: "object", members: [{key, keyDone, value}], done} | {kind: "array", items, done}
 *   {kind: "string", decoded, done} | {kind: "number", raw, done} | {kind: "literal", word, typed, done}
 * duplicateKeys lists keys that occur twice in one object.
 */
export function parseJsonPrefix(text) {
  const stack = [];  // open containers
  let root = null;
  let mode = "value";  // value | after | objKeyOrEnd | objKey | colon | arrValueOrEnd | string | number | literal | end
  let str = null;      // current string node
  let strIsKey = false;
  let esc = 0;         // 0: none, 1: after "\", 2..5: reading \u hex digits
  let hex = "";
  let num = null;      // current number node
  let numState = "";
  let lit = null;
  const duplicateKeys = [];

  const fail = (pos, msg) => ({ ok: false, error: msg, pos, root, complete: false, duplicateKeys });
  const top = () => stack[stack.length - 1];
  const attach = (node) => {
    const t = top();
    if (!t) root = node;
    else if (t.kind === "array") t.items.push(node);
    else t.members[t.members.length - 1].value = node;
  };
  const finishValue = () => {  // a value just ended
    mode = stack.length ? "after" : "end";
  };

  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    switch (mode) {
      case "string": {
        if (esc === 1) {
          const map = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
          if (c === "u") { esc = 2; hex = ""; }
          else if (c in map) { str.decoded += map[c]; esc = 0; }
          else return fail(i, `invalid escape \\${c} in a string`);
        } else if (esc >= 2) {
          if (!HEX.test(c)) return fail(i, `invalid \\u escape (${JSON.stringify(c)} is not a hex digit)`);
          hex += c;
          if (hex.length === 4) { str.decoded += String.fromCharCode(parseInt(hex, 16)); esc = 0; }
        } else if (c === "\\") {
          esc = 1;
        } else if (c === '"') {
          str.done = true;
          if (strIsKey) {
            const t = top();
            const m = t.members[t.members.length - 1];
            m.key = str.decoded;
            m.keyDone = true;
            if (t.keys.has(m.key)) duplicateKeys.push(m.key);
            t.keys.add(m.key);
            mode = "colon";
          } else {
            finishValue();
          }
          str = null;
        } else if (c.charCodeAt(0) < 0x20) {
          return fail(i, `unescaped control character U+${c.charCodeAt(0).toString(16).padStart(4, "0")} in a string`);
        } else {
          str.decoded += c;
        }
        if (strIsKey && str) top().members[top().members.length - 1].key = str.decoded;
        continue;
      }
      case "number": {
        const digit = c >= "0" && c <= "9";
        let next = null;
        switch (numState) {
          case "sign": if (c === "0") next = "zero"; else if (digit) next = "int"; break;
          case "zero": if (c === ".") next = "dot"; else if (c === "e" || c === "E") next = "e"; break;
          case "int": if (digit) next = "int"; else if (c === ".") next = "dot"; else if (c === "e" || c === "E") next = "e"; break;
          case "dot": if (digit) next = "frac"; break;
          case "frac": if (digit) next = "frac"; else if (c === "e" || c === "E") next = "e"; break;
          case "e": if (c === "+" || c === "-") next = "esign"; else if (digit) next = "exp"; break;
          case "esign": if (digit) next = "exp"; break;
          case "exp": if (digit) next = "exp"; break;
        }
        if (next) { numState = next; num.raw += c; continue; }
        if (!["zero", "int", "frac", "exp"].includes(numState)) return fail(i, `invalid number ${JSON.stringify(num.raw + c)}`);
        num.done = true;
        num = null;
        finishValue();
        i--;  // the character after a number is read again in the "after"/"end" mode
        continue;
      }
      case "literal": {
        if (c !== lit.word[lit.typed.length]) return fail(i, `invalid literal ${JSON.stringify(lit.typed + c)}`);
        lit.typed += c;
        if (lit.typed === lit.word) { lit.done = true; lit = null; finishValue(); }
        continue;
      }
    }
    if (WS.has(c)) continue;
    switch (mode) {
      case "value":
      case "arrValueOrEnd": {
        if (mode === "arrValueOrEnd" && c === "]") {
          top().done = true;
          stack.pop();
          finishValue();
          break;
        }
        if (c === "{") {
          const node = { kind: "object", members: [], keys: new Set(), done: false };
          attach(node);
          stack.push(node);
          mode = "objKeyOrEnd";
        } else if (c === "[") {
          const node = { kind: "array", items: [], done: false };
          attach(node);
          stack.push(node);
          mode = "arrValueOrEnd";
        } else if (c === '"') {
          str = { kind: "string", decoded: "", done: false };
          attach(str);
          strIsKey = false;
          esc = 0;
          mode = "string";
        } else if (c === "-" || (c >= "0" && c <= "9")) {
          num = { kind: "number", raw: c, done: false };
          attach(num);
          numState = c === "-" ? "sign" : c === "0" ? "zero" : "int";
          mode = "number";
        } else if (c === "t" || c === "f" || c === "n") {
          lit = { kind: "literal", word: c === "t" ? "true" : c === "f" ? "false" : "null", typed: c, done: false };
          attach(lit);
          mode = "literal";
        } else {
          return fail(i, `unexpected ${JSON.stringify(c)} where a value should start`);
        }
        break;
      }
      case "objKeyOrEnd":
      case "objKey": {
        if (mode === "objKeyOrEnd" && c === "}") {
          top().done = true;
          stack.pop();
          finishValue();
        } else if (c === '"') {
          top().members.push({ key: "", keyDone: false, value: null });
          str = { kind: "string", decoded: "", done: false };
          strIsKey = true;
          esc = 0;
          mode = "string";
        } else {
          return fail(i, `unexpected ${JSON.stringify(c)} where an object key should start`);
        }
        break;
      }
      case "colon":
        if (c !== ":") return fail(i, `expected ":" after an object key, got ${JSON.stringify(c)}`);
        mode = "value";
        break;
      case "after": {
        const t = top();
        if (c === ",") mode = t.kind === "object" ? "objKey" : "value";
        else if ((c === "}" && t.kind === "object") || (c === "]" && t.kind === "array")) {
          t.done = true;
          stack.pop();
          finishValue();
        } else {
          return fail(i, `unexpected ${JSON.stringify(c)} after a value in an ${t.kind}`);
        }
        break;
      }
      case "end":
        return fail(i, `unexpected ${JSON.stringify(c)} after the end of the JSON value`);
    }
  }
  // A number at the very end is not known to be complete; the whole text is complete when the root
  // value is done (or is a number that could end here).
  const complete = mode === "end" || (mode === "number" && stack.length === 0 && ["zero", "int", "frac", "exp"].includes(numState));
  return { ok: true, error: null, pos: text.length, root, complete, duplicateKeys };
}

// ---------------------------------------------------------------------------------------------
// Schema-aware prefix check
// ---------------------------------------------------------------------------------------------

const COMBINATORS = ["anyOf", "oneOf", "allOf", "not", "if", "$dynamicRef", "$recursiveRef"];

/** Follows local "$ref"s: {schema, pointer} of the target, or null where it leaves the document. */
function resolveRefs(root, schema, pointer) {
  for (let hops = 0; hops < 64; hops++) {
    if (schema === null || typeof schema !== "object" || typeof schema.$ref !== "string") return { schema, pointer };
    const ref = schema.$ref;
    if (ref === "#") { schema = root; pointer = ""; continue; }
    if (!ref.startsWith("#/")) return null;
    pointer = ref.slice(1).split("/").map((s) => { try { return decodeURIComponent(s); } catch { return s; } }).join("/");
    schema = getByPointer(root, pointer);
    if (schema === undefined) return null;
  }
  return null;
}

const ALL_TYPES = ["object", "array", "string", "number", "boolean", "null"];

/** The JSON types a schema allows at the top (integer counted as number), or null for "any/unknown". */
function allowedTypes(root, schema, depth = 0) {
  if (depth > 32) return null;
  if (schema === true || schema === undefined) return null;
  if (schema === false) return new Set();
  if (schema === null || typeof schema !== "object") return null;
  let result = null;
  const meet = (set) => { result = result === null ? set : new Set([...result].filter((t) => set.has(t))); };
  if (typeof schema.$ref === "string") {
    const r = resolveRefs(root, schema, "");
    if (r === null) return null;
    const t = allowedTypes(root, r.schema, depth + 1);
    if (t !== null) meet(t);
  }
  if (schema.type !== undefined) {
    const list = (Array.isArray(schema.type) ? schema.type : [schema.type]).map((t) => (t === "integer" ? "number" : t));
    if (list.some((t) => !ALL_TYPES.includes(t))) return result;  // "any" (draft-03) or a typo
    meet(new Set(list));
  }
  const values = Array.isArray(schema.enum) ? schema.enum : "const" in schema ? [schema.const] : null;
  if (values) meet(new Set(values.map(jsonType)));
  for (const k of ["anyOf", "oneOf"]) {
    if (Array.isArray(schema[k])) {
      const union = new Set();
      let unknown = false;
      for (const b of schema[k]) {
        const t = allowedTypes(root, b, depth + 1);
        if (t === null) unknown = true;
        else t.forEach((x) => union.add(x));
      }
      if (!unknown) meet(union);
    }
  }
  if (Array.isArray(schema.allOf)) for (const b of schema.allOf) { const t = allowedTypes(root, b, depth + 1); if (t !== null) meet(t); }
  return result;
}

function jsonType(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v === "object" ? "object" : typeof v;  // string, number, boolean
}

function nodeType(node) {
  if (node.kind === "literal") return node.word === "null" ? "null" : "boolean";
  return node.kind;
}

function codePoints(s) {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * Checks a parsed prefix tree against a compiled schema: every complete value must validate against
 * its subschema, every started value must be of a type the schema allows there, a started string must
 * be a prefix of an enum/const string and within maxLength, an object with additionalProperties false
 * must not have (or be spelling) an unknown key, an array must not exceed maxItems. It only descends
 * where the subschema is unambiguous (no anyOf/oneOf/allOf/not/if on the way). Returns a list of
 * errors (empty when nothing contradicts the schema).
 */
export function checkPrefixAgainstSchema(compiled, tree) {
  const errors = [];
  if (tree === null) return errors;
  const root = compiled.schema;
  const walk = (node, schema, pointer, instPath) => {
    if (schema === undefined) return;  // no constraint known here
    const allowed = allowedTypes(root, schema);
    if (allowed !== null) {
      const t = nodeType(node);
      if (!allowed.has(t)) {
        errors.push(`${instPath || "/"}: a ${t} started where the schema allows ${[...allowed].join("/") || "nothing"}`);
        return;
      }
    }
    // A complete value is checked whole (a number is complete only once a delimiter follows it: at the
    // end of a prefix it may still go on).
    if (node.done) {
      let value;
      try {
        value = node.kind === "number" ? Number(node.raw) : materialize(node);
      } catch {
        return;
      }
      const errs = pointer === null ? null : compiled.errorsAt(pointer, value);
      if (errs && errs.length) errors.push(...errs.map((e) => `${instPath || "/"}: ${e}`));
      return;
    }
    const r = resolveRefs(root, schema, pointer);
    if (r === null || r.schema === null || typeof r.schema !== "object") return;
    const s = r.schema;
    if (COMBINATORS.some((k) => k in s)) return;
    const base = r.pointer;
    if (node.kind === "string") {
      const values = Array.isArray(s.enum) ? s.enum : "const" in s ? [s.const] : null;
      if (values && !values.some((v) => typeof v === "string" && v.startsWith(node.decoded))) {
        errors.push(`${instPath || "/"}: ${JSON.stringify(node.decoded)} is not the start of any allowed value`);
      }
      if (typeof s.maxLength === "number" && codePoints(node.decoded) > s.maxLength) {
        errors.push(`${instPath || "/"}: the string is already longer than maxLength ${s.maxLength}`);
      }
    } else if (node.kind === "object") {
      const props = s.properties && typeof s.properties === "object" ? s.properties : {};
      const closed = s.additionalProperties === false && !s.patternProperties && !(compiled.flavour !== "07" && "unevaluatedProperties" in s);
      for (const m of node.members) {
        const known = Object.prototype.hasOwnProperty.call(props, m.key);
        if (closed && m.keyDone && !known) {
          errors.push(`${instPath}/${escapePointer(m.key)}: key not allowed (additionalProperties false)`);
          continue;
        }
        if (closed && !m.keyDone && !Object.keys(props).some((k) => k.startsWith(m.key))) {
          errors.push(`${instPath}/${escapePointer(m.key)}: no allowed key starts like this (additionalProperties false)`);
          continue;
        }
        if (!m.value) continue;
        if (known) walk(m.value, props[m.key], `${base}/properties/${escapePointer(m.key)}`, `${instPath}/${escapePointer(m.key)}`);
        else if (s.additionalProperties && typeof s.additionalProperties === "object" && !s.patternProperties) {
          walk(m.value, s.additionalProperties, `${base}/additionalProperties`, `${instPath}/${escapePointer(m.key)}`);
        }
      }
    } else if (node.kind === "array") {
      if (typeof s.maxItems === "number" && node.items.length > s.maxItems) {
        errors.push(`${instPath || "/"}: more than maxItems ${s.maxItems} items`);
      }
      node.items.forEach((item, i) => {
        let sub; let subPtr;
        if (compiled.flavour === "07") {
          if (Array.isArray(s.items)) {
            if (i < s.items.length) { sub = s.items[i]; subPtr = `${base}/items/${i}`; }
            else if (s.additionalItems !== undefined) { sub = s.additionalItems; subPtr = `${base}/additionalItems`; }
          } else if (s.items !== undefined) { sub = s.items; subPtr = `${base}/items`; }
        } else if (Array.isArray(s.prefixItems) && i < s.prefixItems.length) {
          sub = s.prefixItems[i]; subPtr = `${base}/prefixItems/${i}`;
        } else if (s.items !== undefined && !Array.isArray(s.items)) { sub = s.items; subPtr = `${base}/items`; }
        if (sub !== undefined) walk(item, sub, subPtr, `${instPath}/${i}`);
      });
    }
  };
  walk(tree, root, "", "");
  return errors;
}

function materialize(node) {
  switch (node.kind) {
    case "object": {
      const o = {};
      for (const m of node.members) o[m.key] = materialize(m.value);
      return o;
    }
    case "array": return node.items.map(materialize);
    case "string": return node.decoded;
    case "number": return Number(node.raw);
    case "literal": return node.word === "true" ? true : node.word === "false" ? false : null;
  }
  throw new Error("unknown node");
}
