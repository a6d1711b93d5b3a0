// Suite 4: isolation under batching. 64 different prompts at temperature 0 on the tiny Qwen2, first
// one at a time, then all 64 as concurrent streams: each concurrent stream carries exactly its
// serial text, one id for all its chunks, and no two requests share an id.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startFixture } from '../lib/harness.mjs';

const COUNT = 64;
const MAX_TOKENS = 16;
let fx;
let client;

before(async () => {
  fx = await startFixture('isolation', { args: ['--max-running-requests', String(COUNT), '--max-queued-requests', String(COUNT)] });
  client = fx.server.client();
});

after(async () => { await fx?.close(); });

const words = ['harbour', 'lantern', 'granite', 'comet', 'orchard', 'violin', 'glacier', 'saffron'];
// Prompts of different lengths and contents; every other one is a chat request.
function requestFor(i) {
  const text = `Request ${i}: ${words[i % 8]} ${words[(i * 3) % 8]} ${'and more '.repeat(i % 7)}${words[(i * 5) % 8]}`;
  return i % 2 === 0
    ? { kind: 'chat', params: { model: 'tiny-qwen2', messages: [{ role: 'user', content: text }], max_tokens: MAX_TOKENS, temperature: 0 } }
    : { kind: 'completion', params: { model: 'tiny-qwen2', prompt: text, max_tokens: MAX_TOKENS, temperature: 0 } };
}

async function streamOne({ kind, params }) {
  const api = kind === 'chat' ? client.chat.completions : client.completions;
  const stream = await api.create({ ...params, stream: true });
  let text = '';
  const ids = new Set();
  const finish = [];
  for await (const chunk of stream) {
    ids.add(chunk.id);
    for (const choice of chunk.choices) {
      text += kind === 'chat' ? (choice.delta?.content ?? '') : (choice.text ?? '');
      if (choice.finish_reason) finish.push(choice.finish_reason);
    }
  }
  return { text, ids, finish };
}

test(`${COUNT} concurrent streams at temperature 0 each get exactly their serial output, with unique ids`, async () => {
  const requests = Array.from({ length: COUNT }, (_, i) => requestFor(i));
  const serial = [];
  for (const r of requests) serial.push(await streamOne(r));
  const distinctTexts = new Set(serial.map((s) => s.text));
  assert.ok(distinctTexts.size > COUNT / 2, `the prompts should give different answers (${distinctTexts.size} distinct)`);

  const concurrent = await Promise.all(requests.map((r) => streamOne(r)));
  const allIds = new Set();
  const mismatches = [];
  for (let i = 0; i < COUNT; ++i) {
    assert.equal(concurrent[i].ids.size, 1, `request ${i}: ${concurrent[i].ids.size} ids in one stream`);
    assert.deepEqual(concurrent[i].finish, serial[i].finish, `request ${i}: finish_reason`);
    if (concurrent[i].text !== serial[i].text) mismatches.push(`request ${i}: ${JSON.stringify(concurrent[i].text)} != serial ${JSON.stringify(serial[i].text)}`);
    for (const id of [...concurrent[i].ids, ...serial[i].ids]) allIds.add(id);
  }
  assert.deepEqual(mismatches, [], `${mismatches.length} concurrent answers differ from the serial ones`);
  assert.equal(allIds.size, 2 * COUNT, 'every request (serial and concurrent) has its own id');
});
