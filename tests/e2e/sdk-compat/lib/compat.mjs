// The shared part of the client-compatibility suites: one llaisys-server (through the server suites'
// harness, tests/e2e/server/lib/harness.mjs) with the tiny Qwen2 and a mock model whose script
// answers a weather question with a get_weather call, a sum question with an add call, and either
// tool's result with a final sentence; a recording fetch for the SDKs (which route each call took,
// with what body; nothing may leave the loopback server); and the references the SDKs' results are
// compared with, taken without any SDK (raw HTTP from the harness, llaisys-offline).

import assert from 'node:assert/strict';
import { offlineTokenize, postJson, startFixture } from '../../server/lib/harness.mjs';

export { offlineGenerate, postJson, slow } from '../../server/lib/harness.mjs';

export const TINY = 'tiny-qwen2';
export const MOCK = 'mock';
export const API_KEY = 'sdk-compat-key';

export const WEATHER_QUESTION = 'What is the weather like in Paris today, please?';
export const WEATHER_CALL_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
export const WEATHER_RESULT = 'Sunny with a light breeze, twenty-one degrees Celsius.';
export const WEATHER_ANSWER = 'It is sunny in Paris and 21 degrees.';
export const SUM_QUESTION = 'Please add two and forty with the calculator tool.';
export const SUM_CALL_TEXT = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 40}}\n</tool_call>';
export const SUM_RESULT = 'The calculator says that the sum is exactly forty-two.';
export const SUM_ANSWER = 'Two plus forty is 42.';

// get_weather's parameters in JSON Schema, for the SDK helpers that take it as such.
export const WEATHER_PARAMETERS = {
  type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false,
};

// Starts the suite's server (the key is required, as an SDK user's server would have one). The
// mock's script: the first entry whose ids occur in the prompt answers, so a tool's result (the
// follow-up turn also holds the question) is matched before the question. The ids of each text
// without its first and last token, which may merge with their neighbours in the prompt.
export async function startCompatServer(name) {
  const fx = await startFixture(name, {
    apiKey: API_KEY,
    mock: async (tinyDir) => {
      const ids = await Promise.all([
        WEATHER_RESULT, WEATHER_ANSWER, SUM_RESULT, SUM_ANSWER, WEATHER_QUESTION, WEATHER_CALL_TEXT, SUM_QUESTION, SUM_CALL_TEXT,
      ].map((text) => offlineTokenize(tinyDir, text)));
      const [weatherResult, weatherAnswer, sumResult, sumAnswer, weatherQuestion, weatherCall, sumQuestion, sumCall] = ids;
      return {
        replies: [
          { when_prompt_contains: weatherResult.slice(1, -1), ids: weatherAnswer },
          { when_prompt_contains: sumResult.slice(1, -1), ids: sumAnswer },
          { when_prompt_contains: weatherQuestion.slice(1, -1), ids: weatherCall },
          { when_prompt_contains: sumQuestion.slice(1, -1), ids: sumCall },
        ],
      };
    },
  });
  return { ...fx, baseURL: `${fx.server.url}/v1` };
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

// A fetch for an SDK's options that records every call (method, path, JSON body) and refuses any
// URL outside the loopback server: the suites need no network, and an SDK reaching out (telemetry,
// a tokenizer download) would show here.
export function recordingFetch() {
  const calls = [];
  const outside = [];
  async function recorded(input, init = {}) {
    const href = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const url = new URL(href);
    if (!LOOPBACK.has(url.hostname)) {
      outside.push(url.href);
      throw new Error(`the client-compatibility suites reach nothing but the local server; refused ${url.href}`);
    }
    let body;
    if (typeof init.body === 'string') {
      try { body = JSON.parse(init.body); } catch { body = init.body; }
    }
    calls.push({ method: init.method ?? 'GET', path: url.pathname, body });
    return fetch(input, init);
  }
  return {
    fetch: recorded,
    calls,
    outside,
    // The calls after `from` (an index into calls), as [method path] strings.
    routes(from = 0) { return calls.slice(from).map((c) => `${c.method} ${c.path}`); },
    mark() { return calls.length; },
  };
}

// The same guard on the global fetch, for whatever an SDK fetches without its configured client.
// Returns the list of refused URLs (the suites assert it stays empty).
export function guardGlobalFetch() {
  const refused = [];
  const real = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const href = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!LOOPBACK.has(new URL(href).hostname)) {
      refused.push(href);
      throw new Error(`the client-compatibility suites reach nothing but the local server; refused ${href}`);
    }
    return real(input, init);
  };
  return refused;
}

// A greedy chat completion over raw HTTP (no SDK): the reference for every SDK's text.
export async function rawChat(server, body) {
  const res = await postJson(server, '/v1/chat/completions', { temperature: 0, ...body });
  assert.equal(res.status, 200, `reference chat completion: ${res.text}`);
  return res.json;
}

export async function rawEmbeddings(server, body) {
  const res = await postJson(server, '/v1/embeddings', { encoding_format: 'float', ...body });
  assert.equal(res.status, 200, `reference embeddings: ${res.text}`);
  return res.json.data.map((d) => d.embedding);
}

export function assertVectorsClose(actual, expected, what, tolerance = 1e-6) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let k = 0; k < expected.length; ++k) {
    assert.ok(Math.abs(actual[k] - expected[k]) <= tolerance, `${what}[${k}]: ${actual[k]} vs ${expected[k]}`);
  }
}

export function norm(vector) {
  return Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0));
}

// Prompts distinct enough for the tiny Qwen2 to answer differently.
export const PROMPTS = [
  'Tell me a short story about a lighthouse keeper.',
  'List three colours of the rainbow.',
  'Why is the sky blue? Answer briefly.',
];
