// Suite 5: overload. With --max-running-requests 2 and --max-queued-requests 2 (capacity 4 per
// model) and a slow mock, a burst of 12 requests gets at most 4 admitted (admission is reserved
// atomically); the others get 429 (or 503) with Retry-After and the OpenAI error body; every
// admitted request completes normally; other models keep serving; afterwards capacity is back.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { errorShapeProblems, postJson, startFixture, waitForMetrics } from '../lib/harness.mjs';
import { checkCompletionChunks, checkSseBody, streamRequest } from '../lib/sse.mjs';

const RUNNING = 2;
const QUEUED = 2;
const CAPACITY = RUNNING + QUEUED;
const BURST = 12;
const MAX_TOKENS = 10;
let fx;

before(async () => {
  fx = await startFixture('overload', {
    args: ['--max-running-requests', String(RUNNING), '--max-queued-requests', String(QUEUED)],
    extraMocks: { slow: { mock: { delay_ms_per_step: 150, eos_period: 0 } } },
  });
});

after(async () => { await fx?.close(); });

function checkRejection(status, headers, json, what) {
  assert.ok(status === 429 || status === 503, `${what}: status ${status}`);
  const retryAfter = headers['retry-after'];
  assert.ok(retryAfter !== undefined, `${what}: no Retry-After header`);
  assert.match(String(retryAfter), /^\d+$/, `${what}: Retry-After ${retryAfter} is not a number of seconds`);
  const expected = status === 429 ? { type: 'rate_limit_error', code: 'too_many_requests' } : {};
  assert.deepEqual(errorShapeProblems(json, expected), [], `${what}: error body ${JSON.stringify(json)}`);
}

test(`a burst of ${BURST} against capacity ${CAPACITY}: the excess gets 429/503 + Retry-After, the admitted all complete`, async () => {
  const burst = Array.from({ length: BURST }, (_, i) => {
    const body = { model: 'slow', prompt: `burst request ${i}`, max_tokens: MAX_TOKENS, temperature: 0 };
    return i % 2 === 0
      ? streamRequest(fx.server, '/v1/completions', { ...body, stream: true }).then((r) => ({ i, stream: true, ...r }))
      : postJson(fx.server, '/v1/completions', body).then((r) => ({ i, stream: false, ...r }));
  });
  // Meanwhile another model is not limited by this one's queue.
  const other = await postJson(fx.server, '/v1/completions', { model: 'tiny-qwen2', prompt: 'unaffected', max_tokens: 2 });
  assert.equal(other.status, 200, `another model during the overload: ${other.status} ${other.text}`);

  const results = await Promise.all(burst);
  const admitted = results.filter((r) => r.status === 200);
  const rejected = results.filter((r) => r.status !== 200);
  assert.ok(admitted.length >= 1, 'nothing was admitted');
  assert.ok(admitted.length <= CAPACITY, `${admitted.length} admitted at once, capacity ${CAPACITY}`);
  // Every request takes >= 10 steps of 150 ms; the burst arrives within milliseconds, so exactly
  // the capacity is admitted.
  assert.equal(admitted.length, CAPACITY, `admitted ${admitted.length}, statuses ${results.map((r) => r.status)}`);
  for (const r of rejected) {
    const json = r.stream ? JSON.parse(r.bytes.toString()) : r.json;
    checkRejection(r.status, r.headers, json, `request ${r.i}${r.stream ? ' (stream)' : ''}`);
  }
  for (const r of admitted) {
    if (r.stream) {
      const sse = checkSseBody(r.bytes);
      assert.deepEqual(sse.problems, [], `request ${r.i}: ${sse.problems.join('; ')}`);
      const chunks = checkCompletionChunks(sse.events, { n: 1, chat: false });
      assert.deepEqual(chunks.problems, [], `request ${r.i}: ${chunks.problems.join('; ')}`);
      assert.equal(chunks.finishReasons[0], 'length', `request ${r.i}`);
    } else {
      assert.equal(r.json.choices[0].finish_reason, 'length', `request ${r.i}`);
      assert.equal(r.json.usage.completion_tokens, MAX_TOKENS, `request ${r.i}`);
    }
  }
  const m = await waitForMetrics(fx.server, (x) => x.get('llaisys_requests_running', { model: 'slow' }) === 0 && x.get('llaisys_requests_waiting', { model: 'slow' }) === 0,
    { what: 'the slow model idle again' });
  const counted = m.get('llaisys_requests_total', { model: 'slow', status: String(rejected[0]?.status ?? 429) });
  assert.ok(counted >= rejected.length, `llaisys_requests_total{status="${rejected[0]?.status}"} is ${counted}, ${rejected.length} rejected`);
});

test('after the burst the full capacity is available again; the openai client sees a RateLimitError beyond it', async () => {
  const client = new OpenAI({ baseURL: `${fx.server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const admitted = Array.from({ length: CAPACITY }, (_, i) =>
    client.completions.create({ model: 'slow', prompt: `again ${i}`, max_tokens: MAX_TOKENS, temperature: 0 }));
  await waitForMetrics(fx.server, (x) => x.get('llaisys_requests_running', { model: 'slow' }) + x.get('llaisys_requests_waiting', { model: 'slow' }) === CAPACITY,
    { timeoutMs: 5000, what: 'the capacity in use' });
  let error;
  try {
    await client.completions.create({ model: 'slow', prompt: 'one too many', max_tokens: 1 });
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof OpenAI.APIError, `expected an APIError, got ${error}`);
  assert.ok(error.status === 429 || error.status === 503, `status ${error.status}`);
  if (error.status === 429) assert.ok(error instanceof OpenAI.RateLimitError);
  assert.ok(error.headers?.get?.('retry-after'), 'Retry-After reaches the client');
  const done = await Promise.all(admitted);
  for (const r of done) assert.equal(r.usage.completion_tokens, MAX_TOKENS);
});
