// Suite 3: a client that goes away has its request aborted in the engine within about one step:
// after 2 streamed chunks, during a long prefill (before any chunk), while queued behind a full
// batch, and for a non-streaming request. /metrics must show llaisys_kv_blocks_used back at its
// baseline and llaisys_requests_running / _waiting back at 0 within a bounded poll, the generation
// counter must stop, and afterwards requests filling the whole capacity are all served.
// Slow readers: a client that keeps its connection open but stops reading is dropped after
// --write-timeout-ms without progress (request freed, counted 499, the server goes on), while one
// that reads slowly but keeps reading is served to the end.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { metrics, postJson, rawStream, sleep, slow, startFixture, waitForMetrics } from '../lib/harness.mjs';

const STEP_MS = 150;            // the slow mock's time per step
const PREFILL_US_PER_TOKEN = 1000;
const RUNNING = 2;
const QUEUED = 2;
const L = { model: 'slow' };
const F = { model: 'firehose' };  // a fast mock for the slow-reader tests
// A short write deadline; a 16 KiB SO_SNDBUF keeps the kernel's share of a stalled stream small
// (autotuning would buffer megabytes on loopback before a write stops making progress).
const WRITE_TIMEOUT_MS = 1500 * slow;
let fx;

before(async () => {
  fx = await startFixture('disconnect', {
    args: ['--max-running-requests', String(RUNNING), '--max-queued-requests', String(QUEUED),
      '--write-timeout-ms', String(WRITE_TIMEOUT_MS), '--socket-send-buffer-bytes', '16384'],
    extraMocks: {
      slow: { mock: { delay_ms_per_step: STEP_MS, delay_us_per_token: PREFILL_US_PER_TOKEN, eos_period: 0 }, maxContext: 4096 },
      firehose: { mock: { delay_ms_per_step: 2, eos_period: 0 }, maxContext: 4096 },
    },
  });
});

after(async () => { await fx?.close(); });

// A request left open: counts the data events that arrive; abort() closes the connection.
function openRequest(path, body) {
  const payload = Buffer.from(JSON.stringify(body));
  const req = http.request({
    host: '127.0.0.1', port: fx.server.port, method: 'POST', path, agent: false,
    headers: { 'content-type': 'application/json', 'content-length': payload.length },
  });
  const state = { status: undefined, events: 0, ended: false, body: '' };
  req.on('response', (res) => {
    state.status = res.statusCode;
    res.on('data', (d) => {
      state.body += d.toString();
      state.events += (d.toString().match(/^data: /gm) || []).length;
    });
    res.on('end', () => { state.ended = true; });
    res.on('error', () => {});
  });
  req.on('error', () => {});
  req.end(payload);
  return { req, state, abort: () => req.destroy() };
}

async function until(predicate, what, timeoutMs = 20000 * slow) {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const gauges = (m, labels = L) => ({
  blocks: m.get('llaisys_kv_blocks_used', labels),
  running: m.get('llaisys_requests_running', labels),
  waiting: m.get('llaisys_requests_waiting', labels),
  generated: m.get('llaisys_generation_tokens_total', labels),
});

async function idleBaseline(labels = L) {
  const m = await waitForMetrics(fx.server, (x) => x.get('llaisys_requests_running', labels) === 0 && x.get('llaisys_requests_waiting', labels) === 0,
    { timeoutMs: 30000 * slow, what: 'an idle server' });
  const g = gauges(m, labels);
  for (const [key, value] of Object.entries(g)) assert.equal(typeof value, 'number', `/metrics has no ${key} series for model="${labels.model}"`);
  return g;
}

// After the disconnect: within `boundMs` the gauges are back at the baseline, and the generation
// counter then stays put (the engine is not still decoding for nobody).
async function assertFreed(baseline, boundMs, what) {
  const m = await waitForMetrics(fx.server, (x) => {
    const g = gauges(x);
    return g.blocks === baseline.blocks && g.running === 0 && g.waiting === 0;
  }, { timeoutMs: boundMs, what: `${what}: KV blocks back to ${baseline.blocks}, running and waiting 0` });
  const generated = gauges(m).generated;
  await sleep(4 * STEP_MS);
  const later = gauges(await metrics(fx.server)).generated;
  assert.equal(later, generated, `${what}: ${later - generated} tokens generated after the request was freed`);
}

const BOUND_MS = 2000 * slow;
const long = (n, salt) => Array.from({ length: n }, (_, i) => 2000 + ((i + 1) * (salt + 7919)) % 60000);

test('disconnect after 2 streamed chunks frees the request within about one step', async () => {
  const baseline = await idleBaseline();
  const r = openRequest('/v1/completions', { model: 'slow', prompt: long(64, 1), max_tokens: 200, temperature: 0, stream: true });
  await until(() => r.state.events >= 2, 'two chunks');
  const during = gauges(await metrics(fx.server));
  assert.equal(during.running, 1, 'the request is running');
  assert.ok(during.blocks > baseline.blocks, `KV blocks in use while running (${during.blocks} vs ${baseline.blocks})`);
  r.abort();
  await assertFreed(baseline, BOUND_MS, 'after 2 chunks');
});

test('disconnect during a long prefill (before any chunk) frees the request within about one step', async () => {
  const baseline = await idleBaseline();
  // 3,000 prompt tokens need at least two prefill steps (the engine batches at most 2,048 tokens
  // a step), each of up to ~2 s: disconnect once the gauges show the request in the engine (after
  // its first prefill step), before any token could be out.
  const tokens = 3000;
  const r = openRequest('/v1/completions', { model: 'slow', prompt: long(tokens, 2), max_tokens: 200, temperature: 0, stream: true });
  await waitForMetrics(fx.server, (x) => x.get('llaisys_requests_running', L) === 1 || x.get('llaisys_kv_blocks_used', L) > baseline.blocks,
    { timeoutMs: 10000 * slow, intervalMs: 5, what: 'the request in the engine' });
  assert.equal(r.state.events, 0, 'a chunk arrived before the prefill could have finished');
  r.abort();
  // The step in flight (a prefill chunk) cannot be interrupted: allow it plus the bound.
  await assertFreed(baseline, BOUND_MS + (2048 * PREFILL_US_PER_TOKEN) / 1000 + STEP_MS, 'during prefill');
  const m = gauges(await metrics(fx.server));
  assert.ok(m.generated - baseline.generated <= 1, `${m.generated - baseline.generated} tokens generated for a request aborted in its prefill`);
});

test('disconnect while queued frees the queue slot within about one step; the running ones go on', async () => {
  const baseline = await idleBaseline();
  const running = [];
  for (let i = 0; i < RUNNING; ++i) {
    running.push(openRequest('/v1/completions', { model: 'slow', prompt: long(32, 10 + i), max_tokens: 40, temperature: 0, stream: true }));
  }
  await waitForMetrics(fx.server, (x) => x.get('llaisys_requests_running', L) === RUNNING, { timeoutMs: 10000 * slow, what: 'a full batch' });
  const queued = openRequest('/v1/completions', { model: 'slow', prompt: long(32, 20), max_tokens: 40, temperature: 0, stream: true });
  const before = await waitForMetrics(fx.server, (x) => x.get('llaisys_requests_waiting', L) === 1, { timeoutMs: 5000 * slow, what: 'one request waiting' });
  queued.abort();
  await waitForMetrics(fx.server, (x) => x.get('llaisys_requests_waiting', L) === 0, { timeoutMs: BOUND_MS, what: 'the queued request gone' });
  const m = await metrics(fx.server);
  assert.equal(m.get('llaisys_requests_running', L), RUNNING, 'the running requests are untouched');
  assert.ok(m.get('llaisys_kv_blocks_used', L) <= gauges(before).blocks, 'no KV blocks were taken for the aborted request');
  for (const r of running) r.abort();
  await assertFreed(baseline, BOUND_MS, 'after the running ones disconnect too');
  assert.equal(queued.state.events, 0, 'the queued request never streamed');
});

test('disconnect of a non-streaming request frees it within about one step', async () => {
  const baseline = await idleBaseline();
  const r = openRequest('/v1/chat/completions', { model: 'slow', messages: [{ role: 'user', content: 'a long answer please' }], max_tokens: 200, temperature: 0 });
  await waitForMetrics(fx.server, (x) => x.get('llaisys_requests_running', L) === 1, { timeoutMs: 10000 * slow, what: 'the request running' });
  await sleep(3 * STEP_MS); // a few tokens into the answer
  r.abort();
  await assertFreed(baseline, BOUND_MS, 'non-streaming');
  assert.equal(r.state.status, undefined, 'no response was sent before the disconnect');
});

test('afterwards, requests filling the whole capacity (running + queued) are all served', async () => {
  const baseline = await idleBaseline();
  const results = await Promise.all(Array.from({ length: RUNNING + QUEUED }, (_, i) =>
    postJson(fx.server, '/v1/completions', { model: 'slow', prompt: long(16, 30 + i), max_tokens: 6, temperature: 0 })));
  for (const [i, res] of results.entries()) {
    assert.equal(res.status, 200, `request ${i}: ${res.status} ${res.text}`);
    assert.equal(res.json.usage.completion_tokens, 6);
  }
  await assertFreed(baseline, BOUND_MS, 'after the capacity run');
});

// ---- slow readers

const requestsWith = (m, labels, status) => m.get('llaisys_requests_total', { ...labels, status }) ?? 0;
const serverLog = () => fs.readFileSync(fx.server.logFile, 'utf8');
// Each step of the firehose sends two choices with 20 top logprobs: about 2.5 KB of SSE a step.
const firehose = (salt, maxTokens) => ({
  model: 'firehose', prompt: long(16, salt), max_tokens: maxTokens, temperature: 0, stream: true, logprobs: 20, n: 2,
  stream_options: { include_usage: true },
});

test('a streaming client that stops reading is dropped after --write-timeout-ms without progress: freed, 499, the server goes on', async () => {
  const baseline = await idleBaseline(F);
  const before = await metrics(fx.server);
  const maxTokens = 4000;  // minutes of output under ASan, seconds in a release build: it cannot finish first
  const r = rawStream(fx.server, firehose(50, maxTokens));
  await until(() => r.state.events >= 4, 'the first chunks');
  const during = gauges(await metrics(fx.server), F);
  assert.equal(during.running, 2, 'both choices are running');
  assert.ok(during.blocks > baseline.blocks, 'KV blocks in use while running');
  r.socket.pause();
  const pausedAt = Date.now();
  // Filling the socket buffers (~200 KB at a few hundred KB/s) plus the deadline plus a step.
  const bound = WRITE_TIMEOUT_MS + 5000 * slow;
  const m = await waitForMetrics(fx.server, (x) => {
    const g = gauges(x, F);
    return g.running === 0 && g.waiting === 0 && g.blocks === baseline.blocks;
  }, { timeoutMs: bound, intervalMs: 50, what: 'the stalled request freed' });
  const freedMs = Date.now() - pausedAt;
  assert.ok(freedMs >= WRITE_TIMEOUT_MS, `freed after ${freedMs} ms, before a write could have stalled for ${WRITE_TIMEOUT_MS} ms`);
  assert.equal(requestsWith(m, F, '499') - requestsWith(before, F, '499'), 1, 'counted as a disconnect (499)');
  const generated = gauges(m, F).generated - baseline.generated;
  assert.ok(generated < 2 * maxTokens, `the request was cut short (${generated} tokens generated)`);
  const log = serverLog();
  assert.match(log, /slow reader dropped .*took no byte for/, 'the drop is logged with its reason');
  assert.match(log, /status=499 .*dropped as a slow reader/, 'the request log line says why');
  // The server closed the connection: reading again ends without [DONE].
  r.socket.resume();
  await until(() => r.state.closed, 'the server closing the connection', 10000 * slow);
  assert.ok(!r.state.text.includes('data: [DONE]'), 'a dropped stream does not end normally');
  // The server goes on: a normal request is served and no more tokens are generated for the dropped one.
  const res = await postJson(fx.server, '/v1/completions', { model: 'firehose', prompt: long(8, 51), max_tokens: 5, temperature: 0 });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.usage.completion_tokens, 5);
  const after = gauges(await metrics(fx.server), F);
  assert.equal(after.generated - gauges(m, F).generated, 5, 'only the new request generated tokens');
});

test('a slow client that keeps reading (pauses shorter than the write deadline) is served to the end', async () => {
  const baseline = await idleBaseline(F);
  const before = await metrics(fx.server);
  // Enough output that every pause fills the socket buffers and the server's writes wait on the reader.
  const maxTokens = slow > 1 ? 800 : 1500;  // about 1.8 KB of SSE per token
  const r = rawStream(fx.server, firehose(60, maxTokens));
  const pauseMs = Math.round(WRITE_TIMEOUT_MS * 0.6);
  const started = Date.now();
  let pauses = 0;
  while (!r.state.closed && !r.state.text.endsWith('data: [DONE]\n\n\r\n0\r\n\r\n')) {
    if (Date.now() - started > 300000 * slow) throw new Error('the slow stream did not end');
    r.socket.pause();
    await sleep(pauseMs);
    ++pauses;
    r.socket.resume();
    await sleep(100);
  }
  assert.ok(!r.state.closed, 'the server closed the connection of a client that kept reading');
  assert.ok(r.state.text.includes('data: [DONE]'), 'the stream ended with [DONE]');
  assert.ok(pauses >= 2, `the reader paused ${pauses} times`);
  // Every poll's events go out as one HTTP chunk, so an event line is never split by chunk framing.
  const usage = [...r.state.text.matchAll(/^data: (\{.*"choices":\[\].*\})$/gm)].at(-1);
  assert.ok(usage, 'the include_usage chunk arrived');
  assert.equal(JSON.parse(usage[1]).usage.completion_tokens, 2 * maxTokens);
  assert.ok(r.state.bytes > 600_000, `${r.state.bytes} bytes: several times what the socket buffers hold (~200 KB)`);
  r.socket.destroy();
  const m = await waitForMetrics(fx.server, (x) => requestsWith(x, F, '200') > requestsWith(before, F, '200'),
    { timeoutMs: 5000 * slow, what: 'the slow stream counted' });
  assert.equal(requestsWith(m, F, '499'), requestsWith(before, F, '499'), 'not counted as a disconnect');
  assert.equal(gauges(m, F).blocks, baseline.blocks);
});

test('inter-token latency has one observation per token gap; refused requests count in llaisys_http_requests_total', async () => {
  const before = await metrics(fx.server);
  const itl = (m) => m.get('llaisys_inter_token_latency_seconds_count', F);
  const http400 = (m) => m.get('llaisys_http_requests_total', { status: '400' }) ?? 0;
  const res = await postJson(fx.server, '/v1/completions', { model: 'firehose', prompt: long(8, 70), max_tokens: 7, temperature: 0 });
  assert.equal(res.status, 200, res.text);
  const bad = await postJson(fx.server, '/v1/chat/completions', '{"model": "firehose", "messages": [');
  assert.equal(bad.status, 400);
  const m = await metrics(fx.server);
  assert.equal(itl(m) - itl(before), 6, '7 tokens: one observation per gap after the first token');
  assert.equal(http400(m) - http400(before), 1, 'the malformed request counted server-wide');
});
