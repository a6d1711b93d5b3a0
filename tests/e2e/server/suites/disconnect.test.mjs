// Suite 3: a client that goes away has its request aborted in the engine within about one step:
// after 2 streamed chunks, during a long prefill (before any chunk), while queued behind a full
// batch, and for a non-streaming request. /metrics must show llaisys_kv_blocks_used back at its
// baseline and llaisys_requests_running / _waiting back at 0 within a bounded poll, the generation
// counter must stop, and afterwards requests filling the whole capacity are all served.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { metrics, postJson, sleep, slow, startFixture, waitForMetrics } from '../lib/harness.mjs';

const STEP_MS = 150;            // the slow mock's time per step
const PREFILL_US_PER_TOKEN = 1000;
const RUNNING = 2;
const QUEUED = 2;
const L = { model: 'slow' };
let fx;

before(async () => {
  fx = await startFixture('disconnect', {
    args: ['--max-running-requests', String(RUNNING), '--max-queued-requests', String(QUEUED)],
    extraMocks: { slow: { mock: { delay_ms_per_step: STEP_MS, delay_us_per_token: PREFILL_US_PER_TOKEN, eos_period: 0 }, maxContext: 4096 } },
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

const gauges = (m) => ({
  blocks: m.get('llaisys_kv_blocks_used', L),
  running: m.get('llaisys_requests_running', L),
  waiting: m.get('llaisys_requests_waiting', L),
  generated: m.get('llaisys_generation_tokens_total', L),
});

async function idleBaseline() {
  const m = await waitForMetrics(fx.server, (x) => x.get('llaisys_requests_running', L) === 0 && x.get('llaisys_requests_waiting', L) === 0,
    { timeoutMs: 30000 * slow, what: 'an idle server' });
  const g = gauges(m);
  for (const [key, value] of Object.entries(g)) assert.equal(typeof value, 'number', `/metrics has no ${key} series for model="slow"`);
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
