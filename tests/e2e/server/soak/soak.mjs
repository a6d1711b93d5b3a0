// Soak test of llaisys-server (issue 26, item 8): one server (lib/harness.mjs startFixture: the tiny
// Qwen2, the mock model and two more mocks) under mixed traffic for --minutes, from --clients
// concurrent clients, each looping over randomly picked kinds of request:
//
//   chat-stream   streamed chat completions through the openai client
//   completion    non-streamed completions through the openai client (n 1 or 2)
//   sse-raw       a streamed completion read as raw bytes, framing and chunks checked (lib/sse.mjs)
//   abort         the client goes away: after a few chunks, by breaking out of the openai client's
//                 stream, before the answer, or during a non-streamed request
//   embeddings    through the openai client, float and base64, one to four inputs
//   hostile       a row of lib/hostile-cases.mjs or a raw-socket case (bad chunked framing, oversized
//                 bodies, unsupported Transfer-Encoding, no key with Expect: 100-continue, a body that
//                 never ends)
//   slow-reader   a stream whose reader stops (must be dropped after --write-timeout-ms) or reads
//                 slowly with pauses shorter than that (must be served to the end)
//   tokenize      /tokenize -> /detokenize round trip, /v1/models, /health
//
// Every request must end as expected: 200 with a well-formed answer, the table's status and error
// body for a hostile one, a drop for a stalled reader. A request aborted by its client is counted
// as aborted, never as lost. Every --sample-seconds it prints the server's RSS (/proc/PID/status
// VmRSS), its open fds (/proc/PID/fd) and the engine gauges of GET /metrics. It fails (exit 1) on a
// lost request, on the server dying, on growth beyond the bounds below after the warm-up, and when
// the engine is not back to idle once the traffic has stopped. Then a summary.
//
//   node tests/e2e/server/soak/soak.mjs --minutes 2 [--clients 12] [--seed N] [bounds...]
//   (scripts/soak.sh sets LLAISYS_BUILD_DIR / LLAISYS_BIN_DIR as tests/e2e/server/run.sh does)

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { KEY, MAX_BODY, MOCK_CONTEXT, cases as hostileTable } from '../lib/hostile-cases.mjs';
import { errorShapeProblems, metrics, rawExchange, rawResponseJson, rawStream, request, sleep, slow, startFixture } from '../lib/harness.mjs';
import { checkCompletionChunks, checkSseBody, streamRequest } from '../lib/sse.mjs';

const { values: option } = parseArgs({
  options: {
    minutes: { type: 'string' },
    clients: { type: 'string', default: '12' },
    seed: { type: 'string' },
    'sample-seconds': { type: 'string', default: '10' },
    'warmup-seconds': { type: 'string' },
    'rss-growth-mb': { type: 'string', default: '64' },
    'fd-growth': { type: 'string' },
    'fd-idle-slack': { type: 'string', default: '4' },
  },
});

function numberOption(name, { min, max, integer = false }) {
  const value = Number(option[name]);
  if (option[name] === undefined || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new Error(`--${name} ${option[name]}: expected ${integer ? 'an integer' : 'a number'} in [${min}, ${max}]`);
  }
  return value;
}

const MINUTES = numberOption('minutes', { min: 0.05, max: 24 * 60 });
const CLIENTS = numberOption('clients', { min: 1, max: 64, integer: true });
const SAMPLE_MS = numberOption('sample-seconds', { min: 1, max: 600 }) * 1000;
const DURATION_MS = MINUTES * 60000;
const SEED = option.seed === undefined ? Date.now() % 1000000 : numberOption('seed', { min: 0, max: 2 ** 31, integer: true });

// ---- bounds, and why
//
// Warm-up: the first minute, or the first half of a shorter run. In it the allocator's arenas (one
// per thread that allocates: I/O, workers, engines), each decoder's activation workspace (sized by
// the largest batch so far), the KV pools (pages are touched as blocks are first used, and the
// prefix cache hands out never-used blocks before it evicts cached ones; --kv-cache-mb 32 below
// keeps a pool small enough to be gone through within seconds instead of growing RSS for a GiB) and
// the connection set reach their working size. The first sample at or after it is the baseline.
if (option['warmup-seconds'] === undefined) option['warmup-seconds'] = String(Math.min(60, DURATION_MS / 2000));
const WARMUP_MS = numberOption('warmup-seconds', { min: 0, max: 24 * 3600 }) * 1000;
// RSS: at most this many MB above the baseline at any later sample. The steady state needs no more
// memory than the warm-up did (same traffic mix, same concurrency, per-batch buffers capped by
// MAX_RUNNING below); what still moves is the peak of buffers of the moment, which the allocator
// keeps once it has them: each stalled reader piles up to --max-stream-backlog-bytes (4 MiB) before
// it is dropped, and now and then two or three stall at once; bodies are capped at MAX_BODY
// (64 KiB). Measured: about +1 MB in the minute after the warm-up. 64 MB is clear of that and small
// against what a leak of per-request state does over a soak (a few KB per request at ~70 requests a
// second is tens of MB per 10 minutes); a longer soak catches smaller leaks.
const RSS_GROWTH_MB = numberOption('rss-growth-mb', { min: 0, max: 1 << 20 });
// Open fds during traffic: at most this many above the baseline. Each client holds at most one
// request's connection at a time plus one idle keep-alive connection in the fetch pool, so the
// number of connections swings by up to 2 x clients between two samples; 8 more for connections
// the server is closing as the sample is taken (a dropped reader, a refused hostile request) and the
// sampler's own /metrics connection. More than that is a leak.
if (option['fd-growth'] === undefined) option['fd-growth'] = String(2 * CLIENTS + 8);
const FD_GROWTH = numberOption('fd-growth', { min: 0, max: 1 << 20, integer: true });
// After the traffic (every client connection closed, the fetch pool's idle sockets expired): the
// fds back to the idle level measured before the traffic, give or take this many (descriptors an
// I/O library opens once on first use).
const FD_IDLE_SLACK = numberOption('fd-idle-slack', { min: 0, max: 1 << 20, integer: true });
// After the traffic, within this time: every model 0 running, 0 waiting, KV blocks used back to the
// idle level, fds as above. A freed request shows within one engine step (docs/SERVER.md, Metrics);
// the fetch pool closes idle keep-alive sockets after 4 s.
const IDLE_WAIT_MS = 20000 * slow;
// A request that has not ended by then is lost (the slowest kind, a slow reader, takes ~10 s).
const REQUEST_DEADLINE_MS = 120000 * slow;

// ---- the server

const WRITE_TIMEOUT_MS = 3000 * slow;   // short, so that a stalled reader is dropped within seconds
const BODY_TIMEOUT_MS = 2000 * slow;    // short, for the "body that never ends" hostile case
const STEP_MS_SLOW = 20;                // the mock that aborted requests use: 20 ms a step
// Sequences in a batch, per model. Below what 12 clients ask for at once (n = 2 counts twice), so
// requests queue now and then (the waiting gauge moves, some aborts hit queued requests) and the
// per-batch buffers (activations, the mock's logits: 600 KB per output row) reach their largest size
// within the warm-up instead of growing RSS in steps whenever a new peak of concurrency comes.
const MAX_RUNNING = 8;
const HIDDEN_SIZE = { 'tiny-qwen2': undefined, mock: 64 };
const GENERATING = ['tiny-qwen2', 'mock'];

// ---- randomness (seeded: one sequence for all clients, so a run's mix is repeatable in kind, while
// the interleaving, and so which client gets what, follows the timing)

let prngState = SEED >>> 0;
function random() {  // mulberry32
  prngState = (prngState + 0x6d2b79f5) >>> 0;
  let t = prngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const randomInt = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
const pick = (list) => list[Math.floor(random() * list.length)];

const SUBJECTS = ['the lighthouse keeper', 'a small red fox', 'the old harbour', 'a clockmaker in Prague', 'the night train',
  'a garden after rain', 'the last library', 'two rival chefs', 'a lost kite', 'the mountain village'];
const SYSTEM = ['You are a helpful assistant.', 'You answer in one short paragraph.', 'You are a storyteller.'];
const prompt = () => `Tell me about ${pick(SUBJECTS)} (${randomInt(1, 1000)}).`;
// A few shared system prompts and earlier turns: requests share prefixes, so the prefix cache hits,
// keeps blocks and evicts them under pressure.
function conversation() {
  const messages = [{ role: 'system', content: pick(SYSTEM) }];
  if (random() < 0.4) messages.push({ role: 'user', content: `Hello, I am ${pick(SUBJECTS)}.` }, { role: 'assistant', content: 'Nice to meet you.' });
  messages.push({ role: 'user', content: prompt() });
  return messages;
}

// ---- outcomes

class Lost extends Error {}
function expect(condition, message) {
  if (!condition) throw new Lost(message);
}

const tally = new Map();  // kind -> Map(outcome -> count)
const lost = [];          // {kind, at (s), message}
let startedAt = 0;
let requestsDone = 0;
function record(kind, outcome) {
  const byOutcome = tally.get(kind) ?? new Map();
  tally.set(kind, byOutcome);
  byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
  ++requestsDone;
}

// ---- request kinds. Each returns its outcome (a string) or throws (the request is lost).

let fx;
let server;

async function chatStream({ client, signal }) {
  const model = pick(GENERATING);
  const maxTokens = randomInt(4, 40);
  const includeUsage = random() < 0.5;
  const stream = await client.chat.completions.create({
    model, messages: conversation(), max_tokens: maxTokens, temperature: pick([0, 0.8]), seed: randomInt(0, 1e6), stream: true,
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  }, { signal });
  const ids = new Set();
  const finishReasons = [];
  let usage;
  for await (const chunk of stream) {
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) if (choice.finish_reason) finishReasons.push(choice.finish_reason);
  }
  expect(ids.size === 1, `${ids.size} ids in one stream`);
  expect(finishReasons.length === 1 && ['length', 'stop'].includes(finishReasons[0]), `finish_reasons ${JSON.stringify(finishReasons)}`);
  if (includeUsage) expect(usage && usage.completion_tokens <= maxTokens, `usage ${JSON.stringify(usage)} for max_tokens ${maxTokens}`);
  return 'ok';
}

async function completion({ client, signal }) {
  const model = pick(GENERATING);
  const maxTokens = randomInt(1, 32);
  const n = pick([1, 1, 2]);
  const res = await client.completions.create({ model, prompt: prompt(), max_tokens: maxTokens, n, temperature: n > 1 ? 0.8 : 0 }, { signal });
  expect(res.choices.length === n, `${res.choices.length} choices, n = ${n}`);
  for (const choice of res.choices) {
    expect(typeof choice.text === 'string' && ['length', 'stop'].includes(choice.finish_reason), `choice ${JSON.stringify(choice).slice(0, 200)}`);
  }
  expect(res.usage.completion_tokens <= n * maxTokens, `usage ${JSON.stringify(res.usage)}`);
  return 'ok';
}

async function sseRaw() {
  const chat = random() < 0.5;
  const n = pick([1, 2]);
  const includeUsage = random() < 0.5;
  const body = {
    model: pick(GENERATING), max_tokens: randomInt(2, 24), n, temperature: 0.7, stream: true,
    ...(chat ? { messages: conversation() } : { prompt: prompt() }),
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  };
  const res = await streamRequest(server, chat ? '/v1/chat/completions' : '/v1/completions', body, { timeoutMs: REQUEST_DEADLINE_MS });
  expect(res.status === 200, `status ${res.status}: ${res.bytes.toString().slice(0, 200)}`);
  const sse = checkSseBody(res.bytes);
  expect(sse.problems.length === 0 && sse.errors.length === 0, `SSE: ${[...sse.problems, ...sse.errors.map((e) => JSON.stringify(e))].join('; ')}`);
  const chunks = checkCompletionChunks(sse.events, { n, chat, includeUsage });
  expect(chunks.problems.length === 0, `chunks: ${chunks.problems.join('; ')}`);
  return 'ok';
}

// POST `body`, destroy the connection after `afterMs`. Resolves the outcome.
function postThenAbort(urlPath, body, afterMs) {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    const req = http.request({
      host: '127.0.0.1', port: server.port, method: 'POST', path: urlPath, agent: false,
      headers: { 'content-type': 'application/json', 'content-length': payload.length, ...server.authHeaders() },
    });
    let status;
    let settled = false;
    const settle = (fn, value) => { if (!settled) { settled = true; clearTimeout(timer); fn(value); } };
    const timer = setTimeout(() => {
      req.destroy();
      settle(resolve, status === undefined ? 'aborted before the answer' : 'aborted during the answer');
    }, afterMs);
    req.on('error', (error) => settle(reject, error));
    req.on('response', (res) => {
      status = res.statusCode;
      res.on('data', () => {});
      res.on('error', () => {});
      res.on('end', () => {
        if (status === 200) settle(resolve, 'finished before the abort');
        else settle(reject, new Lost(`status ${status}`));
      });
    });
    req.end(payload);
  });
}

async function abort({ client, signal }) {
  const long = { model: 'slow', max_tokens: 300, temperature: 0 };
  switch (pick(['after chunks', 'openai client break', 'before the answer', 'non-streamed'])) {
    case 'after chunks': {
      const k = randomInt(1, 6);
      const res = await streamRequest(server, '/v1/completions', { ...long, prompt: prompt(), stream: true },
        { timeoutMs: REQUEST_DEADLINE_MS, onChunk: (bytes, { chunks }) => (chunks.length >= k ? 'abort' : undefined) });
      expect(res.status === 200, `status ${res.status}`);
      return res.aborted ? 'aborted mid-stream' : 'finished before the abort';
    }
    case 'openai client break': {
      // Leaving the loop cancels the SDK's fetch: the connection goes away mid-stream.
      const k = randomInt(1, 6);
      const stream = await client.chat.completions.create({ ...long, messages: conversation(), stream: true }, { signal });
      let chunks = 0;
      let finished = false;
      for await (const chunk of stream) {
        if (chunk.choices[0]?.finish_reason) finished = true;
        if (++chunks >= k) break;
      }
      return finished ? 'finished before the abort' : 'aborted mid-stream (openai client)';
    }
    case 'before the answer':
      return postThenAbort('/v1/chat/completions', { ...long, messages: conversation(), stream: true }, randomInt(0, 30));
    default:
      return postThenAbort('/v1/completions', { ...long, prompt: prompt() }, randomInt(50, 600));
  }
}

async function embeddings({ client, signal }) {
  const model = pick(GENERATING);
  const count = randomInt(1, 4);
  const single = count === 1 && random() < 0.5;
  const texts = Array.from({ length: count }, prompt);
  const float = random() < 0.5;  // else the client's default, base64, decoded by the client
  const res = await client.embeddings.create({ model, input: single ? texts[0] : texts, ...(float ? { encoding_format: 'float' } : {}) }, { signal });
  expect(res.data.length === count, `${res.data.length} embeddings for ${count} inputs`);
  for (const item of res.data) {
    const v = item.embedding;
    expect(v.length === HIDDEN_SIZE[model], `${v.length} values, hidden size ${HIDDEN_SIZE[model]}`);
    let norm = 0;
    for (const x of v) norm += x * x;
    expect(Math.abs(Math.sqrt(norm) - 1) < 1e-3, `norm ${Math.sqrt(norm)}, expected 1`);
  }
  return 'ok';
}

// Hostile requests: the table of suites/hostile.test.mjs, plus raw-socket cases of that suite.
const auth = `Authorization: Bearer ${KEY}\r\n`;
function rawPost(urlPath, body) {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  return Buffer.concat([Buffer.from(`POST ${urlPath} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\n` +
    `Content-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`), bytes]);
}
const chunkedHead = (te = 'chunked') => `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\n` +
  `Transfer-Encoding: ${te}\r\nConnection: close\r\n\r\n`;
function chunked(text) {
  const parts = [];
  for (let i = 0; i < text.length; i += 8192) {
    const piece = text.slice(i, i + 8192);
    parts.push(`${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`);
  }
  return `${parts.join('')}0\r\n\r\n`;
}
const rawHostile = [
  { name: 'invalid UTF-8 in a JSON string', expect: [400],
    data: () => rawPost('/v1/chat/completions', Buffer.concat([Buffer.from('{"model": "mock", "max_tokens": 2, "messages": [{"role": "user", "content": "bad '),
      Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(' bytes"}]}')])) },
  { name: 'malformed request line', expect: [400], data: () => 'GARBAGE\r\n\r\n' },
  { name: 'bad chunk size', expect: [400], data: () => `${chunkedHead()}ZZZ\r\n{}\r\n0\r\n\r\n` },
  { name: 'chunked body over --max-body-bytes', expect: [413],
    data: () => chunkedHead() + chunked(JSON.stringify({ model: 'mock', prompt: 'x'.repeat(MAX_BODY + 4096), max_tokens: 2 })) },
  { name: 'a valid chunked body', expect: [200], data: () => chunkedHead() + chunked(JSON.stringify({ model: 'mock', prompt: 'chunked', max_tokens: 3 })) },
  { name: 'Transfer-Encoding: gzip', expect: [501], data: () => `${chunkedHead('gzip')}GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n` },
  { name: 'Transfer-Encoding: chunked beside Content-Length', expect: [400],
    data: () => `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n` },
  { name: 'no key, Expect: 100-continue', expect: [401],
    data: () => `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${MAX_BODY - 1}\r\nExpect: 100-continue\r\n\r\n` },
  { name: 'a 100 KB header line', expect: [431, 400],
    data: () => `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${'p'.repeat(100 * 1024)}\r\nConnection: close\r\n\r\n` },
  // The body deadline: 408 or a plain close, after --body-timeout-ms.
  { name: 'a body that never ends', expect: [408, 'closed'],
    data: () => `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{"model": "mock",` },
];

function checkHostile(name, { status, json, text }, expected) {
  expect(expected.includes(status), `${name}: status ${status}, expected ${expected.join(' or ')}: ${String(text).slice(0, 200)}`);
  if (status >= 400) {
    const problems = errorShapeProblems(json);
    expect(problems.length === 0, `${name}: ${problems.join('; ')}: ${String(text).slice(0, 200)}`);
  }
}

async function hostile() {
  const row = randomInt(0, hostileTable.length + rawHostile.length - 1);
  if (row < hostileTable.length) {
    const c = hostileTable[row];
    const res = await request(server, { method: c.method ?? 'POST', path: c.path, body: c.body, headers: c.headers, auth: c.auth !== false });
    checkHostile(c.name, res, [c.expect.status]);
    const problems = c.expect.status >= 400 ? errorShapeProblems(res.json, { type: c.expect.type, code: c.expect.code, param: c.expect.param }) : [];
    expect(problems.length === 0, `${c.name}: ${problems.join('; ')}`);
    return `answered ${res.status}`;
  }
  const c = rawHostile[row - hostileTable.length];
  const res = await rawExchange(server, c.data(), { timeoutMs: 15000 * slow });
  if (res.bytes.length === 0 && c.expect.includes('closed')) {
    expect(res.closed && res.elapsedMs < BODY_TIMEOUT_MS + 5000 * slow, `${c.name}: nothing within ${res.elapsedMs} ms, closed ${res.closed}`);
    return 'closed';
  }
  checkHostile(c.name, { status: res.status, json: rawResponseJson(res.bytes), text: res.text }, c.expect);
  return `answered ${res.status}`;
}

// Slow readers, on the firehose mock (two choices with 20 top logprobs: ~2.5 KB of SSE a step), over
// harness.mjs's rawStream, whose reading can be paused (the kernel buffers fill, then the server's
// writes stall).
async function until(predicate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

// ignore_eos: with eos_period 0 the mock still draws every id's logit at random (the harness sets no
// text_vocab_size to keep special ids out), so its argmax is an EOS id about once in 150,000 tokens
// (seen: a stalled reader's stream ended "stop" after 134 tokens), which would end a stream before
// its reader stalls or change its length.
const firehose = (maxTokens) => ({
  model: 'firehose', prompt: prompt(), max_tokens: maxTokens, temperature: 0, stream: true, logprobs: 20, n: 2, ignore_eos: true,
  stream_options: { include_usage: true },
});
const STREAM_END = 'data: [DONE]\n\n\r\n0\r\n\r\n';

async function slowReader() {
  if (random() < 0.5) {
    // Stops reading: ~10 MB of output could never fit the socket buffers and the 4 MiB backlog.
    const r = rawStream(server, firehose(4000), auth);
    try {
      expect(await until(() => r.state.events >= 4 || r.state.closed, 30000 * slow), 'no events from the firehose');
      expect(!r.state.closed, `closed before it was paused: ${r.state.text.slice(0, 200)}`);
      expect(/^HTTP\/1\.1 200/.test(r.state.text), `status line ${r.state.text.slice(0, 100)}`);
      r.socket.pause();
      await sleep(WRITE_TIMEOUT_MS + 6000 * slow);
      r.socket.resume();
      const closed = await until(() => r.state.closed, 20000 * slow);
      const done = r.state.text.includes('data: [DONE]');
      expect(closed || done, `a reader stalled for the write deadline plus 6 s was not dropped: the connection stayed open ` +
        `(${r.state.text.length} bytes read, the last ${JSON.stringify(r.state.text.slice(-80))})`);
      expect(!done, `a stalled reader got its whole stream instead of being dropped (${r.state.text.length} bytes)`);
      return 'dropped (stopped reading)';
    } finally {
      r.socket.destroy();
    }
  }
  // Reads slowly: pauses of half the write deadline, so the server's writes wait but never for the
  // whole deadline (the other half is the margin for a busy machine). ~1.8 KB of SSE per token, so
  // the stream is several times what the socket buffers hold.
  const maxTokens = 300;
  const r = rawStream(server, firehose(maxTokens), auth);
  try {
    const deadline = Date.now() + 90000 * slow;
    while (!r.state.closed && !r.state.text.endsWith(STREAM_END)) {
      expect(Date.now() < deadline, 'a slow reader\'s stream did not end within 90 s');
      r.socket.pause();
      await sleep(Math.round(WRITE_TIMEOUT_MS * 0.5));
      r.socket.resume();
      await sleep(100);
    }
    expect(!r.state.closed, `the server closed the connection of a reader that kept reading (${r.state.text.length} bytes read)`);
    const usage = [...r.state.text.matchAll(/^data: (\{.*"choices":\[\].*\})$/gm)].at(-1);
    expect(usage && JSON.parse(usage[1]).usage.completion_tokens === 2 * maxTokens, `usage ${usage?.[1]}`);
    return 'served to the end (read slowly)';
  } finally {
    r.socket.destroy();
  }
}

async function tokenizeRoundTrip() {
  const model = pick(GENERATING);
  const text = prompt();
  const t = await request(server, { method: 'POST', path: '/tokenize', body: { model, prompt: text } });
  expect(t.status === 200 && Array.isArray(t.json?.tokens) && t.json.tokens.length === t.json.count, `/tokenize ${t.status}: ${t.text.slice(0, 200)}`);
  const d = await request(server, { method: 'POST', path: '/detokenize', body: { model, tokens: t.json.tokens } });
  expect(d.status === 200 && d.json?.prompt === text, `/detokenize ${d.status}: ${d.text.slice(0, 200)} (sent ${JSON.stringify(text)})`);
  const models = await request(server, { path: '/v1/models', auth: false });
  expect(models.status === 200 && models.json?.data?.length === 4, `/v1/models ${models.status}: ${models.text.slice(0, 200)}`);
  const health = await request(server, { path: '/health', auth: false });
  expect(health.status === 200, `/health ${health.status}`);
  return 'ok';
}

// The mix. A slow reader holds its client for ~5-10 s, so one in a hundred picks keeps about one
// client of twelve busy with them.
const KINDS = [
  { name: 'chat-stream', weight: 22, run: chatStream },
  { name: 'completion', weight: 14, run: completion },
  { name: 'sse-raw', weight: 8, run: sseRaw },
  { name: 'abort', weight: 14, run: abort },
  { name: 'embeddings', weight: 10, run: embeddings },
  { name: 'hostile', weight: 20, run: hostile },
  { name: 'slow-reader', weight: 1, run: slowReader },
  { name: 'tokenize', weight: 9, run: tokenizeRoundTrip },
];
const TOTAL_WEIGHT = KINDS.reduce((sum, k) => sum + k.weight, 0);
function pickKind() {
  let r = random() * TOTAL_WEIGHT;
  for (const kind of KINDS) {
    if ((r -= kind.weight) < 0) return kind;
  }
  return KINDS[0];
}

// ---- traffic

let trafficEnds = 0;
let stopReason;  // set when the run must end early (server died, interrupted)
const seconds = () => ((Date.now() - startedAt) / 1000).toFixed(1);

async function runWithDeadline(kind, client) {
  const controller = new AbortController();
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => { controller.abort(); reject(new Lost(`no end within ${REQUEST_DEADLINE_MS} ms`)); }, REQUEST_DEADLINE_MS);
  });
  try {
    return await Promise.race([kind.run({ client, signal: controller.signal }), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function worker() {
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: REQUEST_DEADLINE_MS });
  while (Date.now() < trafficEnds && !stopReason) {
    const kind = pickKind();
    try {
      record(kind.name, await runWithDeadline(kind, client));
    } catch (error) {
      const message = error instanceof Lost ? error.message : `${error?.constructor?.name}: ${error?.message}${error?.cause ? ` (${error.cause.code ?? error.cause.message})` : ''}`;
      record(kind.name, 'LOST');
      lost.push({ kind: kind.name, at: seconds(), message });
      if (lost.length <= 20) console.log(`soak: LOST ${kind.name} at ${seconds()} s: ${message}`);
      if (server.exit) stopReason ??= `llaisys-server died (${JSON.stringify(server.exit)})`;
    }
  }
}

// ---- samples

const samples = [];
function engineGauges(m) {
  const perModel = {};
  for (const s of m.series) {
    if (!s.labels.model) continue;
    const g = (perModel[s.labels.model] ??= {});
    if (s.name === 'llaisys_requests_running') g.running = s.value;
    if (s.name === 'llaisys_requests_waiting') g.waiting = s.value;
    if (s.name === 'llaisys_kv_blocks_used') g.kvUsed = s.value;
  }
  return perModel;
}

// One measurement of the server: RSS, open fds, the engine gauges per model and summed.
async function measure(phase) {
  if (server.exit) throw new Error(`llaisys-server died (${JSON.stringify(server.exit)})`);
  const pid = server.child.pid;
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssMb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)[1]) / 1024;
  const fds = fs.readdirSync(`/proc/${pid}/fd`).length;
  const m = await metrics(server);
  const perModel = engineGauges(m);
  const sum = (key) => Object.values(perModel).reduce((total, g) => total + (g[key] ?? 0), 0);
  return {
    t: (Date.now() - startedAt) / 1000, phase, rssMb, fds, perModel, running: sum('running'), waiting: sum('waiting'), kvUsed: sum('kvUsed'),
    http: m.series.filter((x) => x.name === 'llaisys_http_requests_total'),
  };
}

// A sample: measured, kept for the summary, printed as one line.
async function sample(phase) {
  const s = await measure(phase);
  samples.push(s);
  printSample(s);
  return s;
}

function printSample(s) {
  const kv = Object.entries(s.perModel).map(([model, g]) => `${model} ${g.kvUsed}`).join(', ');
  console.log(`soak: ${s.t.toFixed(0).padStart(5)} s  ${s.phase.padEnd(8)} rss ${s.rssMb.toFixed(1).padStart(7)} MB  fds ${String(s.fds).padStart(4)}  ` +
    `running ${String(s.running).padStart(3)}  waiting ${String(s.waiting).padStart(3)}  kv_blocks_used ${String(s.kvUsed).padStart(4)} (${kv})  ` +
    `requests ${requestsDone} (lost ${lost.length})`);
}

const failures = [];
function fail(message) {
  failures.push(message);
  console.log(`soak: FAIL: ${message}`);
}

let baseline;
function checkGrowth(s) {
  if (!baseline) {
    if (s.t * 1000 >= WARMUP_MS) {
      baseline = s;
      console.log(`soak: baseline after the ${(WARMUP_MS / 1000).toFixed(0)} s warm-up: rss ${s.rssMb.toFixed(1)} MB, fds ${s.fds} ` +
        `(bounds: rss +${RSS_GROWTH_MB} MB, fds +${FD_GROWTH})`);
    }
    return;
  }
  if (s.rssMb - baseline.rssMb > RSS_GROWTH_MB) {
    fail(`RSS ${s.rssMb.toFixed(1)} MB at ${s.t.toFixed(0)} s: ${(s.rssMb - baseline.rssMb).toFixed(1)} MB above the baseline ` +
      `${baseline.rssMb.toFixed(1)} MB (bound ${RSS_GROWTH_MB} MB)`);
  }
  if (s.fds - baseline.fds > FD_GROWTH) {
    fail(`${s.fds} open fds at ${s.t.toFixed(0)} s: ${s.fds - baseline.fds} above the baseline ${baseline.fds} (bound ${FD_GROWTH})`);
  }
}

async function sampler() {
  let next = startedAt + SAMPLE_MS;
  while (Date.now() < trafficEnds && !stopReason) {
    await sleep(Math.max(0, Math.min(next, trafficEnds) - Date.now()));
    if (Date.now() >= trafficEnds || stopReason) break;
    next += SAMPLE_MS;
    try {
      checkGrowth(await sample(Date.now() - startedAt < WARMUP_MS ? 'warm-up' : 'traffic'));
    } catch (error) {
      stopReason ??= error.message;
    }
  }
}

// After the traffic: back to idle within IDLE_WAIT_MS, else the last sample says what is not.
async function checkIdle(idle) {
  const since = Date.now();
  const deadline = since + IDLE_WAIT_MS;
  let s;
  let problems;
  for (;;) {
    s = await measure('idle');
    problems = [];
    for (const [model, g] of Object.entries(s.perModel)) {
      const before = idle.perModel[model];
      if (g.running !== 0) problems.push(`${model}: ${g.running} running`);
      if (g.waiting !== 0) problems.push(`${model}: ${g.waiting} waiting`);
      if (g.kvUsed !== before.kvUsed) problems.push(`${model}: ${g.kvUsed} KV blocks used, ${before.kvUsed} when idle before the traffic`);
    }
    if (s.fds - idle.fds > FD_IDLE_SLACK) problems.push(`${s.fds} open fds, ${idle.fds} when idle before the traffic (slack ${FD_IDLE_SLACK})`);
    if (problems.length === 0 || Date.now() > deadline) break;
    await sleep(500);
  }
  samples.push(s);
  printSample(s);
  const after = ((Date.now() - since) / 1000).toFixed(1);
  console.log(`soak: after the traffic: ${problems.length === 0 ? `back to idle within ${after} s` : `NOT back to idle after ${after} s`}`);
  for (const problem of problems) fail(`${after} s after the traffic: ${problem}`);
  if (baseline) checkGrowth(s);
}

function summary() {
  const elapsed = (Date.now() - startedAt) / 1000;
  console.log(`\nsoak: summary: ${MINUTES} min of traffic from ${CLIENTS} clients (seed ${SEED}), ${requestsDone} requests ` +
    `(${(requestsDone / (DURATION_MS / 1000)).toFixed(1)}/s; a tokenize round trip of 4 HTTP requests counts once), ${lost.length} lost, ${elapsed.toFixed(0)} s in all`);
  const rows = [];
  for (const kind of KINDS) {
    for (const [outcome, count] of [...(tally.get(kind.name) ?? new Map())].sort((a, b) => b[1] - a[1])) rows.push([kind.name, outcome, count]);
  }
  const width = Math.max(...rows.map((r) => r[1].length), 7);
  console.log(`  ${'kind'.padEnd(12)} ${'outcome'.padEnd(width)} ${'count'.padStart(6)}`);
  for (const [kind, outcome, count] of rows) console.log(`  ${kind.padEnd(12)} ${outcome.padEnd(width)} ${String(count).padStart(6)}`);
  const range = (key, digits) => {
    const values = samples.map((s) => s[key]);
    return `min ${Math.min(...values).toFixed(digits)}, max ${Math.max(...values).toFixed(digits)}`;
  };
  const first = samples[0];
  const last = samples.at(-1);
  console.log(`  RSS MB: ${range('rssMb', 1)}; idle before ${first.rssMb.toFixed(1)}, ` +
    `${baseline ? `baseline ${baseline.rssMb.toFixed(1)} (bound +${RSS_GROWTH_MB}), ` : 'no baseline (the run ended in its warm-up), '}last ${last.rssMb.toFixed(1)}`);
  console.log(`  open fds: ${range('fds', 0)}; idle before ${first.fds}, ${baseline ? `baseline ${baseline.fds} (bound +${FD_GROWTH}), ` : ''}` +
    `last ${last.fds} (bound after the traffic: idle +${FD_IDLE_SLACK})`);
  const clientGone = [...tally.values()].flatMap((m) => [...m]).filter(([outcome]) => /^(aborted|dropped)/.test(outcome))
    .reduce((sum, [, count]) => sum + count, 0);
  const server499 = last.http.find((x) => x.labels.status === '499')?.value ?? 0;
  console.log(`  requests the client abandoned (aborted, dropped): ${clientGone}; the server's 499s: ${server499} ` +
    '(fewer when a client left before its request was read, more when its abort raced the end)');
  console.log(`  server's llaisys_http_requests_total: ${last.http.map((x) => `${x.labels.status} ${x.value}`).join(', ')}`);
  if (lost.length > 20) console.log(`  (${lost.length - 20} more lost requests not printed; the last: ${lost.at(-1).kind}: ${lost.at(-1).message})`);
}

async function main() {
  fx = await startFixture('soak', {
    apiKey: KEY,
    mockContext: MOCK_CONTEXT,
    args: ['--max-body-bytes', String(MAX_BODY), '--body-timeout-ms', String(BODY_TIMEOUT_MS), '--header-timeout-ms', String(BODY_TIMEOUT_MS),
      '--write-timeout-ms', String(WRITE_TIMEOUT_MS), '--socket-send-buffer-bytes', '16384', '--kv-cache-mb', '32',
      '--max-running-requests', String(MAX_RUNNING)],
    extraMocks: {
      slow: { mock: { delay_ms_per_step: STEP_MS_SLOW, eos_period: 0 }, maxContext: 4096 },
      firehose: { mock: { delay_ms_per_step: 2, eos_period: 0 }, maxContext: 8192 },
    },
  });
  server = fx.server;
  HIDDEN_SIZE['tiny-qwen2'] = JSON.parse(fs.readFileSync(path.join(fx.tiny, 'config.json'), 'utf8')).hidden_size;
  console.log(`soak: llaisys-server pid ${server.child.pid} on ${server.url}, log ${server.logFile}`);
  console.log(`soak: ${MINUTES} min, ${CLIENTS} clients, seed ${SEED}, a sample every ${SAMPLE_MS / 1000} s, warm-up ${WARMUP_MS / 1000} s`);

  const interrupt = (signal) => {
    if (stopReason) process.exit(130);  // a second one: harness kills the server on exit
    stopReason = `interrupted by ${signal}`;
    console.log(`soak: ${signal}: stopping the traffic (again to quit at once)`);
  };
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);

  startedAt = Date.now();
  const idle = await sample('idle');
  trafficEnds = startedAt + DURATION_MS;
  await Promise.all([sampler(), ...Array.from({ length: CLIENTS }, worker)]);
  if (stopReason) {
    fail(stopReason);
  } else {
    await checkIdle(idle);
  }
  if (lost.length > 0) fail(`${lost.length} lost request(s): every request must end in its expected status (first: ${lost[0].kind}: ${lost[0].message})`);
  summary();
  const log = server.logTail(40);
  const diedBefore = Boolean(server.exit);
  try {
    await fx.close();  // SIGTERM: the server must exit cleanly
  } catch (error) {
    if (!diedBefore) fail(error.message.split('\n')[0]);
  }
  if (failures.length > 0) {
    console.log(`\nsoak: the server log's last lines:\n${log}`);
    console.log(`\nsoak: FAILED:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
    process.exitCode = 1;
  } else {
    console.log('\nsoak: PASSED: no lost request, the server stayed up, RSS and fds within bounds, the engine back to idle');
  }
}

main().catch(async (error) => {
  console.log(`soak: FAILED: ${error.stack ?? error}`);
  try { await fx?.close(); } catch { /* the failure above is what counts */ }
  process.exitCode = 1;
});
