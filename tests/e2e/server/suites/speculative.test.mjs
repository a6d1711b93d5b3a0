// Speculative decoding in the server: every model drafted by the tiny Qwen2 itself
// (--speculative draft:DIR, k = 3; the mock models share its tokenizer).
//  - greedy answers equal those of the same request opted out ("speculative": false), and the
//    drafts show up in /metrics under the method "draft";
//  - a seeded sampled request gives the same answer twice;
//  - clients that disconnect while their streams are being verified leave no KV block behind, in
//    the target's pool or the draft model's, and the server goes on serving.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { metrics, postJson, slow, startFixture, waitForMetrics } from '../lib/harness.mjs';

const T = { model: 'tiny-qwen2' };
const TD = { model: 'tiny-qwen2', method: 'draft' };
let fx;

before(async () => {
  fx = await startFixture('speculative', { args: (tiny) => ['--speculative', `draft:${tiny}`, '--num-speculative-tokens', '3'] });
});

after(async () => { await fx?.close(); });

const chat = (extra) => postJson(fx.server, '/v1/chat/completions', {
  model: 'tiny-qwen2', messages: [{ role: 'user', content: 'Tell me a story about a cat.' }], max_tokens: 48, ...extra,
});

test('greedy answers equal the opted-out ones; drafts and acceptance in /metrics', async () => {
  const before = await metrics(fx.server);
  const drafted0 = before.get('llaisys_spec_decode_draft_tokens_total', TD);
  assert.equal(typeof drafted0, 'number', 'no llaisys_spec_decode_draft_tokens_total series for the draft method');
  const spec = await chat({ temperature: 0 });
  const plain = await chat({ temperature: 0, speculative: false });
  assert.equal(spec.status, 200, spec.text);
  assert.equal(plain.status, 200, plain.text);
  assert.equal(spec.json.choices[0].message.content, plain.json.choices[0].message.content);
  assert.equal(spec.json.usage.completion_tokens, plain.json.usage.completion_tokens);
  const m = await metrics(fx.server);
  const drafted = m.get('llaisys_spec_decode_draft_tokens_total', TD) - drafted0;
  const accepted = m.get('llaisys_spec_decode_accepted_tokens_total', TD) - before.get('llaisys_spec_decode_accepted_tokens_total', TD);
  assert.ok(drafted > 0, 'the speculative request drafted nothing');
  // A model drafting for itself is right every time (greedy).
  assert.equal(accepted, drafted, `accepted ${accepted} of ${drafted}`);
  assert.equal(m.get('vllm:spec_decode_num_draft_tokens_total', { model_name: 'tiny-qwen2' }), m.get('llaisys_spec_decode_draft_tokens_total', TD));
  assert.ok(m.get('llaisys_spec_decode_acceptance_ratio', TD) > 0.99);
});

test('a seeded sampled request gives the same answer twice', async () => {
  const a = await chat({ temperature: 1.0, top_p: 0.9, seed: 42 });
  const b = await chat({ temperature: 1.0, top_p: 0.9, seed: 42 });
  assert.equal(a.status, 200, a.text);
  assert.equal(a.json.choices[0].message.content, b.json.choices[0].message.content);
});

test('disconnects during verification free every block of both pools; the server goes on', async () => {
  const idle = await waitForMetrics(fx.server, (x) => x.get('llaisys_requests_running', T) === 0,
    { timeoutMs: 30000 * slow, what: 'an idle server' });
  const baseline = idle.get('llaisys_kv_blocks_used', T);
  const open = [];
  for (let i = 0; i < 6; i++) {
    const payload = Buffer.from(JSON.stringify({
      model: 'tiny-qwen2', prompt: `Story ${i}: once upon a time`, max_tokens: 400, temperature: i % 2 ? 0.9 : 0,
      ignore_eos: true, stream: true,
    }));
    const req = http.request({ host: '127.0.0.1', port: fx.server.port, method: 'POST', path: '/v1/completions', agent: false,
      headers: { 'content-type': 'application/json', 'content-length': payload.length } });
    const state = { events: 0 };
    req.on('response', (res) => {
      res.on('data', (d) => { state.events += (d.toString().match(/^data: /gm) || []).length; });
      res.on('error', () => {});
    });
    req.on('error', () => {});
    req.end(payload);
    open.push({ req, state });
  }
  // Streams are under way and the draft pool holds their blocks.
  await waitForMetrics(fx.server, (x) => open.every((o) => o.state.events >= 3) && x.get('llaisys_spec_decode_draft_kv_blocks_used', TD) > 0,
    { timeoutMs: 30000 * slow, intervalMs: 10, what: 'six streams drafting' });
  for (const o of open) o.req.destroy();
  await waitForMetrics(fx.server, (x) => x.get('llaisys_kv_blocks_used', T) === baseline && x.get('llaisys_requests_running', T) === 0 &&
    x.get('llaisys_requests_waiting', T) === 0 && x.get('llaisys_spec_decode_draft_kv_blocks_used', TD) === 0,
  { timeoutMs: 5000 * slow, what: `KV blocks back to ${baseline}, the draft pool empty` });
  const after = await chat({ temperature: 0 });
  assert.equal(after.status, 200, after.text);
});
