// OpenAI parity of /v1/completions, /v1/embeddings and logprobs (issue 25 items 2-4), through the
// official openai client against the tiny Qwen2 and stories260K (a SentencePiece-style vocabulary
// with byte-fallback tokens). Every expectation comes from an independent source: single-prompt
// requests for batches, llaisys-offline's greedy tokens and logprobs for teacher forcing and token
// bytes, stories260K's tokenizer.json read here for the bytes, a manual truncation for dimensions.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { makeTinyQwen2, offlineGenerate, postJson, request, Server, stopAndClean, tempDir, tokenize } from '../lib/harness.mjs';

const STORIES = fileURLToPath(new URL('../../../../models/stories260K', import.meta.url));
const STORY_PROMPTS = ['Once upon a time', 'The little dog ran to the park', 'Lily saw a big red ball'];

let dir;
let server;
let client;

before(async () => {
  dir = tempDir('completions-parity');
  const tiny = await makeTinyQwen2(dir);
  server = new Server({ models: [['tiny-qwen2', tiny], ['stories', STORIES]], name: 'completions-parity', logDir: dir });
  await server.start();
  client = server.client();
});

after(() => stopAndClean(server, dir));

// stories260K's token bytes, from its tokenizer.json: "▁" is a space, "<0xNN>" the byte NN, special
// tokens their own text.
const storiesTokenizer = JSON.parse(fs.readFileSync(path.join(STORIES, 'tokenizer.json'), 'utf8'));
const storiesPieces = [];
for (const [piece, id] of Object.entries(storiesTokenizer.model.vocab)) storiesPieces[id] = piece;
const storiesSpecial = new Set(storiesTokenizer.added_tokens.filter((t) => t.special).map((t) => t.id));
function storiesBytes(id) {
  const piece = storiesPieces[id];
  if (storiesSpecial.has(id)) return [...Buffer.from(piece, 'utf8')];
  const byte = /^<0x([0-9A-F]{2})>$/.exec(piece);
  if (byte) return [parseInt(byte[1], 16)];
  return [...Buffer.from(piece.replaceAll('\u2581', ' '), 'utf8')];
}
const storiesText = (id) => Buffer.from(storiesBytes(id)).toString('utf8');

function closeTo(a, b, what, tolerance = 1e-4) {
  assert.ok(Math.abs(a - b) <= tolerance * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
}

async function expect400(urlPath, body, param) {
  const res = await postJson(server, urlPath, body);
  assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 120)}: ${res.text}`);
  assert.equal(res.json?.error?.type, 'invalid_request_error');
  assert.equal(res.json?.error?.param, param, res.text);
  assert.match(res.json.error.message, new RegExp(param));
}

test('a batch of prompts x n=2: choice i*n+j is choice j of prompt i alone (seeded), streamed too; usage summed', async () => {
  const params = { model: 'tiny-qwen2', max_tokens: 6, temperature: 1, seed: 11, n: 2 };
  const singles = [];
  for (const prompt of STORY_PROMPTS) singles.push(await client.completions.create({ ...params, prompt }));
  const batch = await client.completions.create({ ...params, prompt: STORY_PROMPTS });
  assert.deepEqual(batch.choices.map((c) => c.index), [0, 1, 2, 3, 4, 5]);
  for (const [i, single] of singles.entries()) {
    for (let j = 0; j < 2; ++j) {
      assert.equal(batch.choices[i * 2 + j].text, single.choices[j].text, `prompt ${i} choice ${j}`);
      assert.equal(batch.choices[i * 2 + j].finish_reason, single.choices[j].finish_reason);
    }
  }
  const sum = (key) => singles.reduce((total, s) => total + s.usage[key], 0);
  assert.equal(batch.usage.prompt_tokens, sum('prompt_tokens'));
  assert.equal(batch.usage.completion_tokens, sum('completion_tokens'));
  assert.equal(batch.usage.total_tokens, batch.usage.prompt_tokens + batch.usage.completion_tokens);

  // The same prompts as token-id lists, streamed: every chunk names its choice by index.
  const ids = await Promise.all(STORY_PROMPTS.map((p) => tokenize(server, 'tiny-qwen2', p)));
  const stream = await client.completions.create({ ...params, prompt: ids, stream: true, stream_options: { include_usage: true } });
  const texts = [];
  const finishes = [];
  let usage;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      texts[choice.index] = (texts[choice.index] ?? '') + choice.text;
      if (choice.finish_reason) finishes[choice.index] = (finishes[choice.index] ?? 0) + 1;
    }
  }
  assert.deepEqual(texts, batch.choices.map((c) => c.text));
  assert.deepEqual(finishes, [1, 1, 1, 1, 1, 1]);
  assert.deepEqual(usage && [usage.prompt_tokens, usage.completion_tokens], [batch.usage.prompt_tokens, batch.usage.completion_tokens]);

  // echo in a batch: each choice starts with its own prompt.
  const echoed = await client.completions.create({ ...params, prompt: STORY_PROMPTS, echo: true });
  for (const [k, choice] of echoed.choices.entries()) {
    assert.equal(choice.text, STORY_PROMPTS[Math.floor(k / 2)] + batch.choices[k].text, `choice ${k}`);
  }
});

test('max_tokens defaults to 16 on /v1/completions (each prompt of a batch); chat keeps the rest of the context', async () => {
  const one = await client.completions.create({ model: 'stories', prompt: 'Once upon a time', temperature: 0, ignore_eos: true });
  assert.equal(one.usage.completion_tokens, 16);
  assert.equal(one.choices[0].finish_reason, 'length');
  const batch = await client.completions.create({ model: 'stories', prompt: STORY_PROMPTS.slice(0, 2), temperature: 0, ignore_eos: true });
  assert.equal(batch.usage.completion_tokens, 32);
  // Without ignore_eos a story may end sooner, never later.
  const natural = await client.completions.create({ model: 'tiny-qwen2', prompt: 'The lighthouse keeper', temperature: 0 });
  assert.ok(natural.usage.completion_tokens === 16 || natural.choices[0].finish_reason === 'stop', JSON.stringify(natural.usage));
  const chat = await client.chat.completions.create({
    model: 'stories', messages: [{ role: 'user', content: 'Tell me a story.' }], temperature: 0, ignore_eos: true,
  });
  assert.ok(chat.usage.completion_tokens > 16, JSON.stringify(chat.usage));
  if (chat.choices[0].finish_reason === 'length') {
    assert.equal(chat.usage.prompt_tokens + chat.usage.completion_tokens, 512, 'chat generates to the end of the context');
  }
});

test('echo + logprobs: the prompt\'s logprobs equal the logprobs of the same tokens generated (teacher forcing)', async () => {
  const prompt = await tokenize(server, 'stories', 'Once upon a time, there was a');
  // Independent generation: llaisys-offline, greedy, with each token's logprob and top 3.
  const { outputs } = await offlineGenerate(STORIES, [{ prompt_ids: prompt, max_tokens: 12, temperature: 0, logprobs: 3 }]);
  const generated = outputs[0].output_ids;
  assert.equal(generated.length, 12);
  // The server's own generation agrees with it.
  const live = await client.completions.create({ model: 'stories', prompt, max_tokens: 12, temperature: 0, logprobs: 3 });
  for (let i = 0; i < 12; ++i) closeTo(live.choices[0].logprobs.token_logprobs[i], outputs[0].logprobs[i].logprob, `generated ${i}`);

  // The prompt plus those tokens, scored by echo.
  const forced = [...prompt, ...generated];
  const plain = await client.completions.create({ model: 'stories', prompt: forced, max_tokens: 1, temperature: 0 });
  // Streamed first, so that the whole run finds the forced prompt's blocks in the prefix cache.
  for (const stream of [true, false]) {
    const params = { model: 'stories', prompt: forced, max_tokens: 1, temperature: 0, echo: true, logprobs: 3 };
    let lp;
    let text = '';
    if (stream) {
      lp = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
      for await (const chunk of await client.completions.create({ ...params, stream: true })) {
        for (const choice of chunk.choices) {
          text += choice.text;
          for (const key of Object.keys(lp)) lp[key].push(...(choice.logprobs?.[key] ?? []));
        }
      }
    } else {
      const res = await client.completions.create(params);
      lp = res.choices[0].logprobs;
      text = res.choices[0].text;
      assert.equal(res.usage.prompt_tokens, forced.length);
      assert.equal(res.usage.prompt_tokens_details?.cached_tokens ?? 0, 0, 'scored prompts bypass the prefix cache');
    }
    const what = stream ? 'streamed' : 'whole';
    assert.equal(lp.tokens.length, forced.length + 1, `${what}: one entry per prompt token, then the generated one`);
    assert.equal(lp.token_logprobs[0], null, 'the first prompt token has no logprob');
    assert.equal(lp.top_logprobs[0], null);
    for (const [i, id] of forced.entries()) assert.equal(lp.tokens[i], storiesText(id), `${what}: token ${i}`);
    for (let i = 0; i < 12; ++i) {
      const at = prompt.length + i;
      const reference = outputs[0].logprobs[i];
      closeTo(lp.token_logprobs[at], reference.logprob, `${what}: forced token ${i}`);
      const expectedTop = new Map();
      for (const [id, value] of reference.top) if (!expectedTop.has(storiesText(id))) expectedTop.set(storiesText(id), value);
      assert.deepEqual(Object.keys(lp.top_logprobs[at]).sort(), [...expectedTop.keys()].sort(), `${what}: top of ${i}`);
      for (const [key, value] of expectedTop) closeTo(lp.top_logprobs[at][key], value, `${what}: top ${JSON.stringify(key)} of ${i}`);
    }
    // Offsets add up the prompt tokens' bytes; the text is the prompt's decoding, then the answer.
    let offset = 0;
    for (let i = 0; i < forced.length; ++i) {
      assert.equal(lp.text_offset[i], offset);
      offset += storiesBytes(forced[i]).length;
    }
    assert.ok(text.startsWith('Once upon a time, there was a'), `${what}: ${JSON.stringify(text)}`);
    assert.ok(text.endsWith(plain.choices[0].text), `${what}: ${JSON.stringify(text)}`);
  }
});

test('best_of: the n returned are the candidates with the highest cumulative logprob, best first', async () => {
  const params = { model: 'stories', prompt: 'Once upon a time', max_tokens: 8, temperature: 1, seed: 5 };
  // The same candidates as n = 4 (the engine's choices 0..3 of the same seed), each with its logprobs.
  const all = await client.completions.create({ ...params, n: 4, logprobs: 0 });
  const ranked = all.choices
    .map((c) => ({ text: c.text, score: c.logprobs.token_logprobs.reduce((a, b) => a + b, 0) }))
    .sort((a, b) => b.score - a.score);
  assert.ok(new Set(all.choices.map((c) => c.text)).size > 1, 'the candidates differ');
  const best = await client.completions.create({ ...params, n: 2, best_of: 4 });
  assert.deepEqual(best.choices.map((c) => c.index), [0, 1]);
  assert.deepEqual(best.choices.map((c) => c.text), ranked.slice(0, 2).map((r) => r.text));
  assert.equal(best.choices[0].logprobs, null, 'logprobs were not asked for');
  assert.equal(best.usage.completion_tokens, all.usage.completion_tokens, 'every candidate counts');
  const withLogprobs = await client.completions.create({ ...params, n: 1, best_of: 4, logprobs: 1 });
  assert.equal(withLogprobs.choices.length, 1);
  assert.equal(withLogprobs.choices[0].text, ranked[0].text);
  closeTo(withLogprobs.choices[0].logprobs.token_logprobs.reduce((a, b) => a + b, 0), ranked[0].score, 'best score');
});

test('embeddings: 300 and 2048 inputs equal the same inputs requested in smaller batches; every input form', async () => {
  const texts = Array.from({ length: 2048 }, (_, i) => `Story ${i}: the ${['cat', 'dog', 'bird', 'fish'][i % 4]} number ${i * 7}`);
  const embed = async (input, extra = {}) => (await client.embeddings.create({ model: 'stories', input, encoding_format: 'float', ...extra })).data;
  for (const count of [300, 2048]) {
    const whole = await embed(texts.slice(0, count));
    assert.deepEqual(whole.map((d) => d.index), Array.from({ length: count }, (_, i) => i));
    const parts = [];
    for (let start = 0; start < count; start += 200) parts.push(...await embed(texts.slice(start, Math.min(count, start + 200))));
    for (let i = 0; i < count; ++i) {
      assert.equal(whole[i].embedding.length, 64);
      for (let k = 0; k < 64; ++k) closeTo(whole[i].embedding[k], parts[i].embedding[k], `input ${i}[${k}]`, 1e-6);
    }
  }
  // A string, a list of strings, a token-id list and a list of token-id lists agree.
  const ids = await Promise.all(texts.slice(0, 2).map((t) => tokenize(server, 'stories', t)));
  const [a] = await embed(texts[0]);
  const [b] = await embed(ids[0]);
  const listOfIds = await embed(ids);
  const listOfTexts = await embed(texts.slice(0, 2));
  for (let k = 0; k < 64; ++k) {
    closeTo(b.embedding[k], a.embedding[k], `ids[${k}]`, 1e-6);
    closeTo(listOfIds[1].embedding[k], listOfTexts[1].embedding[k], `list of ids[${k}]`, 1e-6);
  }
  await expect400('/v1/embeddings', { model: 'stories', input: texts.concat(['one more']) }, 'input');
});

test('embeddings dimensions: the first d components of the full vector, L2-normalised again; float and base64', async () => {
  const input = 'The little dog ran to the park';
  const [full] = (await client.embeddings.create({ model: 'stories', input, encoding_format: 'float' })).data;
  for (const d of [1, 16, 64]) {
    const [short] = (await client.embeddings.create({ model: 'stories', input, encoding_format: 'float', dimensions: d })).data;
    const head = full.embedding.slice(0, d);
    const norm = Math.hypot(...head);
    assert.equal(short.embedding.length, d);
    for (let k = 0; k < d; ++k) closeTo(short.embedding[k], head[k] / norm, `d=${d} [${k}]`, 1e-6);
    const b64 = await postJson(server, '/v1/embeddings', { model: 'stories', input, encoding_format: 'base64', dimensions: d });
    const bytes = Buffer.from(b64.json.data[0].embedding, 'base64');
    assert.equal(bytes.length, 4 * d);
    for (let k = 0; k < d; ++k) assert.equal(bytes.readFloatLE(4 * k), short.embedding[k]);
  }
  await expect400('/v1/embeddings', { model: 'stories', input, dimensions: 0 }, 'dimensions');
  await expect400('/v1/embeddings', { model: 'stories', input, dimensions: 65 }, 'dimensions');
});

test('stories260K logprobs: token and bytes are each token\'s own bytes (byte tokens, spaces), chat and completions', async () => {
  const prompt = await tokenize(server, 'stories', 'Once upon a time');
  const { outputs } = await offlineGenerate(STORIES, [{ prompt_ids: prompt, max_tokens: 24, temperature: 0, logprobs: 5 }]);
  const generated = outputs[0].output_ids;
  const completion = await client.completions.create({ model: 'stories', prompt, max_tokens: 24, temperature: 0, logprobs: 5 });
  const lp = completion.choices[0].logprobs;
  assert.deepEqual(lp.tokens, generated.map(storiesText));
  for (const [i, top] of lp.top_logprobs.entries()) {
    const keys = new Set(outputs[0].logprobs[i].top.map(([id]) => storiesText(id)));
    assert.deepEqual(Object.keys(top).sort(), [...keys].sort(), `completions top ${i}`);
  }

  // Chat: generated ids from the same engine path for the rendered messages.
  const messages = [{ role: 'user', content: 'Tell me about a cat.' }];
  const rendered = await tokenize(server, 'stories', { messages });
  const reference = (await offlineGenerate(STORIES, [{ prompt_ids: rendered, max_tokens: 24, temperature: 0, logprobs: 5 }])).outputs[0];
  const chat = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 24, temperature: 0, logprobs: true, top_logprobs: 5 });
  const content = chat.choices[0].logprobs.content;
  // The ChatML fallback's stop string could end the chat sooner than the reference.
  assert.ok(content.length > 0 && content.length <= reference.output_ids.length, `${content.length} entries`);
  for (const [i, entry] of content.entries()) {
    const id = reference.output_ids[i];
    assert.deepEqual(entry.bytes, storiesBytes(id), `chat token ${i} bytes`);
    assert.equal(entry.token, storiesText(id), `chat token ${i} text`);
    // A list keeps one entry per token id, also when two ids have the same text.
    assert.equal(entry.top_logprobs.length, 5);
    assert.deepEqual(entry.top_logprobs.map((t) => t.bytes), reference.logprobs[i].top.map(([t]) => storiesBytes(t)), `top ${i}`);
  }
  const spelled = Buffer.from(content.flatMap((e) => e.bytes)).toString('utf8');
  const answer = chat.choices[0].message.content;
  if (!answer.includes('\uFFFD')) assert.ok(spelled.endsWith(answer.trimStart()), 'the bytes spell the answer');
});

test('refused fields get 400 naming them, and the server keeps serving', async () => {
  const completion = { model: 'stories', prompt: 'Once', max_tokens: 2 };
  await expect400('/v1/completions', { ...completion, suffix: 'the end' }, 'suffix');
  await expect400('/v1/completions', { ...completion, n: 3, best_of: 2 }, 'best_of');
  await expect400('/v1/completions', { ...completion, best_of: 17 }, 'best_of');
  await expect400('/v1/completions', { ...completion, best_of: 2, stream: true }, 'best_of');
  await expect400('/v1/completions', { ...completion, prompt: ['a', [1, 2]] }, 'prompt');
  await expect400('/v1/completions', { ...completion, prompt: Array.from({ length: 257 }, () => 'a') }, 'prompt');
  await expect400('/v1/completions', { ...completion, logit_bias: { 512: 5 } }, 'logit_bias');
  await expect400('/v1/completions', { ...completion, prompt: Array.from({ length: 600 }, () => 5) }, 'prompt');
  const chat = { model: 'stories', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 };
  await expect400('/v1/chat/completions', { ...chat, top_logprobs: 2 }, 'top_logprobs');
  await expect400('/v1/chat/completions', { ...chat, logprobs: false, top_logprobs: 0 }, 'top_logprobs');
  await expect400('/v1/chat/completions', { ...chat, logit_bias: { 9999: 1 } }, 'logit_bias');
  // Accepted: an empty suffix, best_of equal to n, top_logprobs with logprobs.
  assert.equal((await postJson(server, '/v1/completions', { ...completion, suffix: '', best_of: 1 })).status, 200);
  assert.equal((await postJson(server, '/v1/chat/completions', { ...chat, logprobs: true, top_logprobs: 2 })).status, 200);
  assert.equal((await request(server, { path: '/health' })).status, 200);
  server.assertAlive();
});
