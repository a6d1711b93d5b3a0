// Validators for OpenAI's own schemas: tests/data/openai/openapi.yaml (OpenAI's OpenAPI 3.1 spec,
// openai/openai-openapi, MIT; see tests/data/openai/README.md), compiled with Ajv 2020-12 as one
// document, so that every "#/components/schemas/..." reference resolves inside it.
//
//   const validate = openapiSchema('Response');
//   if (!validate(body)) ... validate.errors

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import YAML from 'yaml';

const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../data/openai/openapi.yaml');
const documentId = 'openai-openapi.json';
let ajv;

function instance() {
  if (ajv) return ajv;
  const spec = YAML.parse(fs.readFileSync(file, 'utf8'));
  // strict: false lets OpenAPI's own keywords (discriminator, x-oaiMeta, x-stainless-*, example)
  // through as annotations; the spec's format "unixtime" is any number of seconds.
  ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addFormat('unixtime', { type: 'number', validate: (v) => Number.isFinite(v) && v >= 0 });
  ajv.addSchema({ $id: documentId, components: { schemas: spec.components.schemas } });
  return ajv;
}

// A compiled validator for components.schemas[name] (Ajv keeps it for the next call).
export function openapiSchema(name) {
  const validate = instance().getSchema(`${documentId}#/components/schemas/${name}`);
  if (!validate) throw new Error(`openapi.yaml has no schema ${name}`);
  return validate;
}

// Problems of `value` against schema `name` ([] when it validates), for assertion messages.
export function openapiProblems(name, value) {
  const validate = openapiSchema(name);
  if (validate(value)) return [];
  return validate.errors.slice(0, 8).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}
