// Suite 2: the SSE stream as raw bytes (node:http, the body's byte chunks as they arrive): Content-Type,
// `data: ...\n\n` framing, the role in each choice's first chunk, one stable id, valid UTF-8,
// exactly one finish_reason per choice, the include_usage chunk, `data: [DONE]` last and exactly
// once (also after an error), keep-alive comments while nothing is sent (also during a long
// prefill). Every stream also goes through eventsource-parser, whose onError fails the test.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import { Server, errorShapeProblems, makeTinyQwen2, postJson, slow, startFixture, tempDir, tokenize } from '../lib/harness.mjs';
import { checkCompletionChunks, checkSseBody, streamRequest } from '../lib/sse.mjs';

const KEEPALIVE_MS = 100;
let fx;

before(async () => {
  fx = await startFixture('sse', {
    args: ['--sse-keepalive-ms', String(KEEPALIVE_MS)],
    mock: { eos_period: 0 },
    extraMocks: {
      // 250 ms a step plus 2 ms a token: a 1,500-token prompt prefills for ~3 s in one step.
      slow: { mock: { delay_ms_per_step: 250, delay_us_per_token: 2000, eos_period: 0 }, maxContext: 4096 },
    },
  });
});

after(async () => { await fx?.close(); });

function assertNoProblems(problems, what, text) {
  assert.deepEqual(problems, [], `${what}:\n${problems.join('\n')}\n--- stream (first 2000 chars):\n${(text ?? '').slice(0, 2000)}`);
}

async function rawStream(path, body, options) {
  const res = await streamRequest(fx.server, path, body, options);
  assert.equal(res.status, 200, res.bytes.toString());
  assert.match(String(res.headers['content-type']), /^text\/event-stream\b/);
  const sse = checkSseBody(res.bytes);
  assertNoProblems(sse.problems, 'SSE framing', sse.text);
  return { ...res, sse };
}

test('chat stream with include_usage: framing, role first, one id, one finish_reason, usage chunk, [DONE] last', async () => {
  const messages = [{ role: 'user', content: 'Describe the sea in sixty tokens.' }];
  const body = { model: 'mock', messages, max_tokens: 60, temperature: 0, stream: true, stream_options: { include_usage: true } };
  const { sse } = await rawStream('/v1/chat/completions', body);
  assert.equal(sse.errors.length, 0, JSON.stringify(sse.errors));
  const chunks = checkCompletionChunks(sse.events, { n: 1, chat: true, includeUsage: true });
  assertNoProblems(chunks.problems, 'chunks', sse.text);
  assert.equal(chunks.finishReasons[0], 'length');
  const promptTokens = (await tokenize(fx.server, 'mock', { messages })).length;
  assert.deepEqual(
    { prompt: chunks.usage.prompt_tokens, completion: chunks.usage.completion_tokens, total: chunks.usage.total_tokens },
    { prompt: promptTokens, completion: 60, total: promptTokens + 60 });
  const plain = await postJson(fx.server, '/v1/chat/completions', { ...body, stream: false, stream_options: undefined });
  assert.equal(plain.status, 200, plain.text);
  assert.equal(chunks.texts[0], plain.json.choices[0].message.content);
});

test('completions stream, n=2, tiny-qwen2: per-choice framing and usage', async () => {
  const body = { model: 'tiny-qwen2', prompt: 'A stream of two choices:', max_tokens: 12, temperature: 0.9, seed: 5, n: 2, stream: true, stream_options: { include_usage: true } };
  const { sse } = await rawStream('/v1/completions', body);
  const chunks = checkCompletionChunks(sse.events, { n: 2, chat: false, includeUsage: true });
  assertNoProblems(chunks.problems, 'chunks', sse.text);
  const completionTokens = chunks.usage.completion_tokens;
  assert.ok(completionTokens >= 2 && completionTokens <= 24, `completion_tokens ${completionTokens}`);
  assert.equal(chunks.usage.total_tokens, chunks.usage.prompt_tokens + completionTokens);
});

test('no usage chunk without include_usage; the non-streamed error for a bad streamed request is JSON', async () => {
  const { sse } = await rawStream('/v1/chat/completions', { model: 'mock', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, stream: true });
  assertNoProblems(checkCompletionChunks(sse.events, { n: 1, includeUsage: false }).problems, 'chunks', sse.text);
  const bad = await postJson(fx.server, '/v1/chat/completions', { model: 'mock', messages: [{ role: 'user', content: 'hi' }], max_tokens: -3, stream: true });
  assert.equal(bad.status, 400, bad.text);
  assert.match(String(bad.headers['content-type']), /^application\/json\b/);
  assert.deepEqual(errorShapeProblems(bad.json, { type: 'invalid_request_error' }), []);
});

test('every delta is valid UTF-8 and the deltas add up to the non-streamed text (random tokens, many seeds)', async () => {
  // The mock samples among all 151,936 Qwen2 ids, so byte-fallback tokens that split UTF-8
  // characters come up; the server must hold partial characters back.
  let multiByte = 0;
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const body = { model: 'mock', prompt: `seed ${seed}`, max_tokens: 120, temperature: 1, seed, stream: true };
    const { sse } = await rawStream('/v1/completions', body);
    const chunks = checkCompletionChunks(sse.events, { n: 1, chat: false });
    assertNoProblems(chunks.problems, `seed ${seed}`, sse.text);
    const plain = await postJson(fx.server, '/v1/completions', { ...body, stream: false });
    assert.equal(plain.status, 200, plain.text);
    assert.equal(chunks.texts[0], plain.json.choices[0].text, `seed ${seed}: streamed vs non-streamed text`);
    multiByte += [...chunks.texts[0]].filter((ch) => ch.codePointAt(0) > 0x7f).length;
  }
  assert.ok(multiByte > 20, `only ${multiByte} non-ASCII characters were generated: the test would not see split characters`);
});

test('keep-alive comments while decoding slowly, and during a long prefill before the first token', async () => {
  const prompt = Array.from({ length: 1500 }, (_, i) => 1000 + (i * 7919) % 50000);
  const started = Date.now();
  let firstByteAt;
  const res = await rawStream('/v1/completions', { model: 'slow', prompt, max_tokens: 4, temperature: 0, stream: true }, {
    onResponse: () => { firstByteAt = Date.now(); },
  });
  const { sse } = res;
  assert.ok(sse.comments.length > 0, 'no comment line at all');
  for (const comment of sse.comments) assert.equal(comment, 'keep-alive');
  // Blocks in arrival order: how many comments came before the first data event?
  const blocks = sse.text.split('\n\n');
  const firstData = blocks.findIndex((b) => b.startsWith('data: '));
  const commentsBeforeFirstToken = blocks.slice(0, firstData).filter((b) => b.startsWith(':')).length;
  const firstDataChunk = res.chunks.find((c) => c.bytes.toString('latin1').includes('data: '));
  const prefillMs = firstDataChunk.at - started;
  assert.ok(prefillMs > 2000, `the slow prefill took only ${prefillMs} ms: the test does not test a long prefill`);
  assert.ok(firstByteAt - started < prefillMs, 'the response headers wait for the first token');
  const expected = Math.floor(prefillMs / KEEPALIVE_MS / 4);
  assert.ok(commentsBeforeFirstToken >= expected,
    `${commentsBeforeFirstToken} keep-alive comments during a ${prefillMs} ms prefill (at least ${expected} expected at --sse-keepalive-ms ${KEEPALIVE_MS})`);
  const chunks = checkCompletionChunks(sse.events, { n: 1, chat: false });
  assertNoProblems(chunks.problems, 'chunks', sse.text);
  // Between tokens (250 ms a step) there are comments too.
  const afterFirst = blocks.slice(firstData).filter((b) => b.startsWith(':')).length;
  assert.ok(afterFirst >= 1, `${afterFirst} keep-alive comments between tokens 250 ms apart`);
});

test('a request the KV cache can never hold: a JSON error before the stream, or an error event then exactly one [DONE]', async (t) => {
  // A server whose KV cache (1 MiB: ~340 tokens of the tiny Qwen2) cannot ever hold a 600-token
  // prompt that fits the context. The request is refused either before the stream (a JSON error,
  // status 400 or 413) or inside it (an error event, then [DONE]).
  const dir = tempDir('sse-error');
  const tiny = await makeTinyQwen2(dir);
  const server = new Server({ models: [['tiny-qwen2', tiny]], args: ['--kv-cache-mb', '1'], name: 'kv-small', logDir: dir });
  try {
    await server.start();
    const prompt = Array.from({ length: 600 }, (_, i) => 1000 + i);
    const res = await streamRequest(server, '/v1/completions', { model: 'tiny-qwen2', prompt, max_tokens: 8, stream: true }, { timeoutMs: 60000 * slow });
    t.diagnostic(res.status === 200 ? 'refused inside the stream' : `refused before the stream with ${res.status}`);
    if (res.status === 200) {
      const sse = checkSseBody(res.bytes);
      assertNoProblems(sse.problems, 'SSE framing', sse.text);
      assert.equal(sse.errors.length, 1, `one error event expected: ${sse.text}`);
      assert.deepEqual(errorShapeProblems({ error: sse.errors[0] }), []);
      assert.equal(sse.events.at(-2)?.error !== undefined, true, 'the error event comes right before [DONE]');
    } else {
      assert.ok([400, 413, 503].includes(res.status), `status ${res.status}: ${res.bytes}`);
      assert.deepEqual(errorShapeProblems(JSON.parse(res.bytes.toString())), []);
    }
    server.assertAlive();
    const ok = await postJson(server, '/v1/completions', { model: 'tiny-qwen2', prompt: 'short', max_tokens: 2 });
    assert.equal(ok.status, 200, ok.text);
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
