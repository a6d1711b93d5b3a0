// Lifecycle for orchestrators and load balancers: readiness while the models load, the graceful
// drain on SIGTERM (in-flight requests finish, new ones get 503 + Retry-After + Connection: close,
// exit 0), the drain timeout (streams cut with an SSE error event and [DONE], a non-streamed request
// answered 503), a second signal (exit at once), and the metrics a router or autoscaler reads (the
// Model Server Protocol's, under vLLM's names) moving as their semantics say.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs';
import { after, test } from 'node:test';
import {
  Server, makeMock, makeTinyQwen2, metrics, postJson, request, sleep, slow, tempDir, waitForMetrics,
} from '../lib/harness.mjs';
import { checkSseBody, streamRequest } from '../lib/sse.mjs';

const STEP_MS = 40;  // the slow mock's time per step
const dir = tempDir('drain');
const tiny = await makeTinyQwen2(dir);
const servers = [];

after(async () => {
  for (const server of servers) await server.stop();
  if (!process.env.LLAISYS_E2E_KEEP) fs.rmSync(dir, { recursive: true, force: true });
});

// A server with one mock model `m` (its own directory, so each test may set its options).
async function start(name, { mock = {}, args = [], maxContext = 4096, wait = true } = {}) {
  const model = makeMock(dir, tiny, { name: `mock-${name}`, mock: { delay_ms_per_step: STEP_MS, ...mock }, maxContext });
  const server = new Server({ models: [['m', model]], args, name, logDir: dir });
  servers.push(server);
  const started = server.start();
  if (wait) await started;
  return { server, started };
}

// Resolves {code, signal, at} when the server's process exits; fails on a sanitizer report in its
// log (in the ASan/UBSan build an exit status alone would not tell a report from the code expected).
function exited(server) {
  const check = (exit) => {
    const log = fs.readFileSync(server.logFile, 'utf8');
    assert.doesNotMatch(log, /Sanitizer|runtime error:/, `sanitizer report in ${server.name}'s log`);
    return exit;
  };
  if (server.exit) return Promise.resolve(check({ ...server.exit, at: Date.now() }));
  return once(server.child, 'exit').then(([code, signal]) => check({ code, signal, at: Date.now() }));
}

const chat = (extra = {}) => ({ model: 'm', messages: [{ role: 'user', content: 'Tell me a story.' }], ...extra });

// Starts a streamed chat request; resolves `firstChunk` once the first content bytes arrived.
function streamChat(server, body) {
  let firstChunk;
  const first = new Promise((resolve) => { firstChunk = resolve; });
  const done = streamRequest(server, '/v1/chat/completions', body, { onChunk: () => firstChunk() });
  return { first, done };
}

test('readiness: /ready is 503 "loading" until the model is loaded, /health (liveness) is 200 throughout', async () => {
  const { server, started } = await start('loading', { mock: { load_delay_ms: 2500 * slow }, wait: false });
  while (!server.port) await sleep(10);
  let sawLoading = false;
  for (const deadline = Date.now() + 2000 * slow; Date.now() < deadline && !sawLoading;) {
    try {
      const ready = await request(server, { path: '/ready', timeoutMs: 1000 });
      const health = await request(server, { path: '/health', timeoutMs: 1000 });
      if (ready.status === 503) {
        assert.equal(ready.json.status, 'loading');
        assert.equal(health.status, 200);
        assert.equal(health.json.status, 'loading');
        sawLoading = true;
      }
    } catch {
      await sleep(20);  // not listening yet
    }
  }
  assert.ok(sawLoading, 'never saw /ready 503 while the model loaded');
  const loading = await postJson(server, '/v1/chat/completions', chat({ max_tokens: 2 }));
  assert.equal(loading.status, 503);
  await started;
  const ready = await request(server, { path: '/ready' });
  assert.equal(ready.status, 200);
  assert.equal(ready.json.status, 'ready');
});

test('SIGTERM drains: in-flight requests finish whole, new ones get 503 + Retry-After + Connection: close, exit 0', async () => {
  const { server } = await start('drain', { args: ['--drain-timeout', String(60 * slow)] });
  const stream = streamChat(server, chat({ stream: true, max_tokens: 80 }));
  const plain = postJson(server, '/v1/completions', { model: 'm', prompt: 'Once upon a time', max_tokens: 60 });
  await stream.first;
  await waitForMetrics(server, (m) => m.get('llaisys_http_requests_in_flight') >= 2, { what: '2 requests in flight' });
  const exit = exited(server);
  const signalledAt = Date.now();
  server.child.kill('SIGTERM');
  await waitForMetrics(server, (m) => m.get('llaisys_server_draining') === 1, { what: 'draining' });

  const ready = await request(server, { path: '/ready' });
  assert.equal(ready.status, 503);
  assert.equal(ready.json.status, 'draining');
  const health = await request(server, { path: '/health' });
  assert.equal(health.status, 200);
  assert.equal(health.json.status, 'draining');
  const refused = await postJson(server, '/v1/chat/completions', chat({ max_tokens: 2 }));
  assert.equal(refused.status, 503);
  assert.equal(refused.headers['retry-after'], '1');
  assert.equal(refused.headers.connection, 'close');
  assert.equal(refused.json.error.code, 'service_unavailable');
  assert.match(refused.json.error.message, /shutting down/);

  const streamed = await stream.done;
  assert.equal(streamed.aborted, false);
  const sse = checkSseBody(streamed.bytes);
  assert.deepEqual(sse.problems, []);
  assert.deepEqual(sse.errors, []);
  const finish = sse.events.filter((e) => e !== '[DONE]').map((e) => e.choices?.[0]?.finish_reason).filter(Boolean);
  assert.deepEqual(finish, ['length']);
  const answered = await plain;
  assert.equal(answered.status, 200);
  assert.equal(answered.json.choices[0].finish_reason, 'length');
  assert.equal(answered.json.usage.completion_tokens, 60);

  const { code, at } = await exit;
  assert.equal(code, 0);
  console.log(`drained and exited ${at - signalledAt} ms after SIGTERM`);
  assert.ok(at - signalledAt < 30000 * slow);
  assert.match(fs.readFileSync(server.logFile, 'utf8'), /drained: nothing in flight, exiting/);
});

test('drain timeout: a stream still running is cut with an SSE error event and [DONE], a non-streamed one gets 503; exit 0', async () => {
  const timeoutS = 1;
  const { server } = await start('timeout', { args: ['--drain-timeout', String(timeoutS)] });
  const stream = streamChat(server, chat({ stream: true, max_tokens: 4000, stream_options: { include_usage: true } }));
  const plain = postJson(server, '/v1/completions', { model: 'm', prompt: 'Once', max_tokens: 4000 });
  await stream.first;
  await waitForMetrics(server, (m) => m.get('llaisys_http_requests_in_flight') >= 2, { what: '2 requests in flight' });
  const exit = exited(server);
  const signalledAt = Date.now();
  server.child.kill('SIGTERM');

  const streamed = await stream.done;
  const cutAfter = Date.now() - signalledAt;
  assert.equal(streamed.status, 200);
  assert.equal(streamed.aborted, false, 'the chunked stream ended properly, not by a cut connection');
  const sse = checkSseBody(streamed.bytes);
  assert.deepEqual(sse.problems, []);
  assert.equal(sse.errors.length, 1);
  assert.match(sse.errors[0].message, /shutting down.*--drain-timeout/);
  assert.ok(cutAfter >= timeoutS * 1000 - 50, `cut after ${cutAfter} ms, before the ${timeoutS} s drain timeout`);
  const answered = await plain;
  assert.equal(answered.status, 503);
  assert.match(answered.json.error.message, /shutting down.*--drain-timeout/);

  const { code, at } = await exit;
  assert.equal(code, 0);
  console.log(`cut ${cutAfter} ms after SIGTERM, exited after ${at - signalledAt} ms`);
  assert.ok(at - signalledAt < (timeoutS + 5) * 1000 * slow);
});

test('a second signal exits at once, cutting what is in flight', async () => {
  const { server } = await start('second', { args: ['--drain-timeout', '600'] });
  const stream = streamChat(server, chat({ stream: true, max_tokens: 4000 }));
  await stream.first;
  const exit = exited(server);
  server.child.kill('SIGINT');
  await waitForMetrics(server, (m) => m.get('llaisys_server_draining') === 1, { what: 'draining' });
  await sleep(300);
  assert.equal(server.exit, null, 'the first signal alone ended the server');
  const secondAt = Date.now();
  server.child.kill('SIGTERM');
  const { code, at } = await exit;
  assert.equal(code, 1);
  console.log(`exited ${at - secondAt} ms after the second signal`);
  assert.ok(at - secondAt < 3000 * slow);
  const streamed = await stream.done;
  assert.ok(!checkSseBody(streamed.bytes).events.includes('[DONE]'), 'the stream was not cut');
});

test('metrics: queued requests under overload, KV utilisation with the tokens held, prefix-cache blocks evicted', async () => {
  // One running request at a time and a 512-token context: a pool of 32 blocks of 16 tokens.
  const { server } = await start('metrics', { args: ['--max-running-requests', '1'], maxContext: 512 });
  const m0 = await metrics(server);
  const L = { model_name: 'm' };
  assert.equal(m0.get('vllm:num_requests_waiting', L), 0);
  assert.equal(m0.get('vllm:kv_cache_usage_perc', L), 0);
  const info = m0.series.find((s) => s.name === 'vllm:cache_config_info');
  const blockSize = Number(info.labels.block_size);
  const numBlocks = Number(info.labels.num_gpu_blocks);
  assert.equal(blockSize, m0.get('llaisys_kv_block_size', { model: 'm' }));
  assert.equal(numBlocks, m0.get('llaisys_kv_blocks_total', { model: 'm' }));
  assert.equal(numBlocks, 32);

  // Overload: 4 requests, 1 batch slot: 3 wait.
  const burst = [0, 1, 2, 3].map(() => postJson(server, '/v1/completions', { model: 'm', prompt: 'x', max_tokens: 15 }));
  const busy = await waitForMetrics(server, (m) => m.get('vllm:num_requests_waiting', L) >= 2, { what: 'queued >= 2' });
  assert.equal(busy.get('vllm:num_requests_running', L), 1);
  assert.equal(busy.get('llaisys_requests_waiting', { model: 'm' }), busy.get('vllm:num_requests_waiting', L));
  for (const res of await Promise.all(burst)) assert.equal(res.status, 200);
  await waitForMetrics(server, (m) => m.get('vllm:num_requests_waiting', L) === 0 && m.get('vllm:num_requests_running', L) === 0,
    { what: 'queue empty' });

  // Utilisation while a request holds `tokens` tokens (prompt ids, a long generation): at least its
  // full blocks over the pool, and more for the longer prompt.
  const ids = (n, base) => Array.from({ length: n }, (_, i) => base + (i % 300));
  // The metrics while a request holds a prompt of `n` tokens: polled until it runs with at least the
  // prompt's full blocks pinned (a look during its chunked prefill, or before its admission, sees
  // less; it decodes 40 tokens at 40 ms a step after that, so the window is wide). A utilisation that
  // never reaches that while the request runs fails the wait.
  async function metricsWhileHolding(prompt) {
    const minUsage = Math.floor(prompt.length / blockSize) / numBlocks;
    const stream = streamRequest(server, '/v1/completions', { model: 'm', prompt, max_tokens: 40, stream: true });
    const m = await waitForMetrics(server,
      (x) => x.get('vllm:num_requests_running', L) === 1 && x.get('vllm:kv_cache_usage_perc', L) >= minUsage,
      { what: `a running request holding ${prompt.length} prompt tokens (utilisation >= ${minUsage})`, timeoutMs: 10000 * slow });
    const done = await stream;
    assert.equal(done.status, 200);
    return m;
  }
  const usageWhileRunning = async (prompt) => (await metricsWhileHolding(prompt)).get('vllm:kv_cache_usage_perc', L);
  const shortUsage = await usageWhileRunning(ids(100, 10));
  const longUsage = await usageWhileRunning(ids(300, 20));
  console.log(`KV utilisation: 100-token prompt ${shortUsage}, 300-token prompt ${longUsage} (${numBlocks} blocks)`);
  assert.ok(shortUsage >= Math.floor(100 / blockSize) / numBlocks, `100 tokens: ${shortUsage}`);
  assert.ok(longUsage >= Math.floor(300 / blockSize) / numBlocks, `300 tokens: ${longUsage}`);
  assert.ok(longUsage > shortUsage);

  // Finished: nothing pinned, the prompts' blocks stay as prefix-cache entries...
  const idle = await waitForMetrics(server, (x) => x.get('vllm:kv_cache_usage_perc', L) === 0, { what: 'usage back to 0' });
  const cached = idle.get('llaisys_kv_blocks_cached', { model: 'm' });
  const evicted = idle.get('llaisys_kv_evicted_blocks_total', { model: 'm' });
  assert.ok(cached >= Math.floor(400 / blockSize), `cached blocks after two prompts: ${cached}`);
  // ... until a new prompt needs their room: they are evicted.
  const during = await metricsWhileHolding(ids(420, 30));
  const after = await metrics(server);
  console.log(`cached blocks ${cached} -> ${during.get('llaisys_kv_blocks_cached', { model: 'm' })} while a 420-token prompt ran; ` +
    `evicted ${evicted} -> ${after.get('llaisys_kv_evicted_blocks_total', { model: 'm' })}`);
  assert.ok(during.get('llaisys_kv_blocks_cached', { model: 'm' }) < cached);
  assert.ok(after.get('llaisys_kv_evicted_blocks_total', { model: 'm' }) > evicted);
  assert.ok(during.get('vllm:kv_cache_usage_perc', L) >= Math.floor(420 / blockSize) / numBlocks);
  // Prefix-cache counters in tokens: the repeated 420-token prompt hits its full blocks.
  const before = await metrics(server);
  await usageWhileRunning(ids(420, 30));
  const repeat = await metrics(server);
  const queries = repeat.get('vllm:prefix_cache_queries_total', L) - before.get('vllm:prefix_cache_queries_total', L);
  const hits = repeat.get('vllm:prefix_cache_hits_total', L) - before.get('vllm:prefix_cache_hits_total', L);
  assert.equal(queries, 420);
  assert.ok(hits >= Math.floor(419 / blockSize) * blockSize - blockSize, `hits ${hits} of ${queries}`);
  assert.equal(repeat.get('llaisys_prefix_cache_hits_total', { model: 'm' }), repeat.get('vllm:prefix_cache_hits_total', L));
});
