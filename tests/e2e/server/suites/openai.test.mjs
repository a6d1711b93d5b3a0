// Suite 1: the official openai npm client (maxRetries 0) against llaisys-server serving the tiny
// Qwen2 and the mock model: models, chat, completions, embeddings, streamed and not; streamed text ==
// non-streamed text at temperature 0; answers equal llaisys-offline's for the same request; n=2;
// logprobs in both formats; a tools round trip through scripted mock replies; multi-turn reuse.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { offlineGenerate, offlineTokenize, postJson, startFixture, tokenize } from '../lib/harness.mjs';

const MODELS = ['tiny-qwen2', 'mock'];
const TOOL_CALL_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const QUESTION = 'What is the weather like in Paris today, please?';
const TOOL_RESULT = 'Sunny with a light breeze, twenty-one degrees Celsius.';
const FINAL_ANSWER = 'It is sunny in Paris and 21 degrees.';
const TOOLS = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];

let fx;
let client;

before(async () => {
  fx = await startFixture('openai', {
    // Scripted mock answers. The first match wins, so the follow-up turn (which holds both the
    // question and the tool result) is matched by the tool result before the question's entry.
    mock: async (tinyDir) => {
      const [call, question, result, final] = await Promise.all(
        [TOOL_CALL_TEXT, QUESTION, TOOL_RESULT, FINAL_ANSWER].map((text) => offlineTokenize(tinyDir, text)));
      return {
        replies: [
          { when_prompt_contains: result.slice(1, -1), ids: final },
          { when_prompt_contains: question.slice(1, -1), ids: call },
        ],
      };
    },
  });
  client = fx.server.client();
});

after(async () => { await fx?.close(); });

async function collectChatStream(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  const texts = [];
  const finish = [];
  const ids = new Set();
  const toolCalls = [];
  const logprobs = [];
  let usage;
  for await (const chunk of stream) {
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      texts[choice.index] = (texts[choice.index] ?? '') + (choice.delta?.content ?? '');
      if (choice.finish_reason) (finish[choice.index] ??= []).push(choice.finish_reason);
      if (choice.logprobs?.content) logprobs.push(...choice.logprobs.content);
      for (const call of choice.delta?.tool_calls ?? []) {
        const acc = (toolCalls[call.index] ??= { id: '', name: '', arguments: '' });
        if (call.id) acc.id += call.id;
        if (call.function?.name) acc.name += call.function.name;
        if (call.function?.arguments) acc.arguments += call.function.arguments;
      }
    }
  }
  return { texts, finish, ids, toolCalls, logprobs, usage };
}

test('models: both ids with max_model_len and chat_template_source; retrieve by id', async () => {
  const list = await client.models.list();
  const ids = list.data.map((m) => m.id).sort();
  assert.deepEqual(ids, [...MODELS].sort());
  for (const model of list.data) {
    assert.equal(model.object, 'model');
    assert.equal(model.owned_by, 'llaisys');
    assert.ok(Number.isInteger(model.created) && model.created > 1.6e9, `created ${model.created}`);
    assert.ok(Number.isInteger(model.max_model_len) && model.max_model_len > 0, `max_model_len ${model.max_model_len}`);
    // Both directories carry the Qwen2 tokenizer_config.json with its chat template.
    assert.equal(model.chat_template_source, 'model', `${model.id}: chat_template_source`);
    assert.deepEqual(await client.models.retrieve(model.id), model);
  }
  assert.equal(list.data.find((m) => m.id === 'mock').max_model_len, 1024);
});

test('chat (tiny-qwen2, temperature 0) equals llaisys-offline generate on the same messages', async () => {
  const messages = [{ role: 'user', content: 'Hello there, how are you doing today?' }];
  const res = await client.chat.completions.create({ model: 'tiny-qwen2', messages, max_tokens: 12, temperature: 0 });
  const { outputs } = await offlineGenerate(fx.tiny, [{ messages, max_tokens: 12, temperature: 0 }]);
  assert.equal(res.object, 'chat.completion');
  assert.match(res.id, /\S/);
  assert.equal(res.model, 'tiny-qwen2');
  assert.equal(res.choices.length, 1);
  assert.equal(res.choices[0].index, 0);
  assert.equal(res.choices[0].message.role, 'assistant');
  assert.equal(res.choices[0].message.content, outputs[0].text);
  assert.equal(res.choices[0].finish_reason, outputs[0].finish_reason);
  assert.equal(res.usage.prompt_tokens, outputs[0].usage.prompt_tokens);
  assert.equal(res.usage.completion_tokens, outputs[0].usage.completion_tokens);
  assert.equal(res.usage.total_tokens, res.usage.prompt_tokens + res.usage.completion_tokens);
  assert.equal(typeof res.usage.prompt_tokens_details?.cached_tokens, 'number');
  const counted = await tokenize(fx.server, 'tiny-qwen2', { messages });
  assert.equal(res.usage.prompt_tokens, counted.length, '/tokenize of the messages counts the prompt tokens');
});

test('completions (tiny-qwen2, temperature 0) equal llaisys-offline generate on the same prompt', async () => {
  const prompt = 'The quick brown fox jumps over';
  const res = await client.completions.create({ model: 'tiny-qwen2', prompt, max_tokens: 12, temperature: 0 });
  const { outputs } = await offlineGenerate(fx.tiny, [{ prompt, max_tokens: 12, temperature: 0 }]);
  assert.equal(res.object, 'text_completion');
  assert.equal(res.choices[0].text, outputs[0].text);
  assert.equal(res.choices[0].finish_reason, outputs[0].finish_reason);
  assert.equal(res.usage.prompt_tokens, outputs[0].usage.prompt_tokens);
  assert.equal(res.usage.completion_tokens, outputs[0].usage.completion_tokens);
  // The same prompt as token ids gives the same answer.
  const ids = await tokenize(fx.server, 'tiny-qwen2', prompt);
  const byIds = await client.completions.create({ model: 'tiny-qwen2', prompt: ids, max_tokens: 12, temperature: 0 });
  assert.equal(byIds.choices[0].text, res.choices[0].text);
});

for (const model of MODELS) {
  test(`${model}: streamed text equals non-streamed text at temperature 0 (chat and completions), usage too`, async () => {
    const messages = [{ role: 'user', content: `Tell me a story about ${model} and a lighthouse.` }];
    const plain = await client.chat.completions.create({ model, messages, max_tokens: 40, temperature: 0 });
    const streamed = await collectChatStream({ model, messages, max_tokens: 40, temperature: 0, stream_options: { include_usage: true } });
    assert.equal(streamed.ids.size, 1, 'one id for every chunk');
    assert.equal(streamed.texts.length, 1);
    assert.equal(streamed.texts[0], plain.choices[0].message.content);
    assert.deepEqual(streamed.finish[0], [plain.choices[0].finish_reason]);
    assert.equal(streamed.usage?.prompt_tokens, plain.usage.prompt_tokens);
    assert.equal(streamed.usage?.completion_tokens, plain.usage.completion_tokens);

    const prompt = `Once upon a time, ${model} said`;
    const plainText = await client.completions.create({ model, prompt, max_tokens: 40, temperature: 0 });
    const stream = await client.completions.create({ model, prompt, max_tokens: 40, temperature: 0, stream: true });
    let text = '';
    const reasons = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text += choice.text ?? '';
        if (choice.finish_reason) reasons.push(choice.finish_reason);
      }
    }
    assert.equal(text, plainText.choices[0].text);
    assert.deepEqual(reasons, [plainText.choices[0].finish_reason]);
  });
}

test('n=2: two choices with indices 0 and 1, streamed and not', async () => {
  const messages = [{ role: 'user', content: 'Give me two different names for a cat.' }];
  const res = await client.chat.completions.create({ model: 'mock', messages, max_tokens: 8, temperature: 1, seed: 3, n: 2 });
  assert.deepEqual(res.choices.map((c) => c.index).sort(), [0, 1]);
  for (const choice of res.choices) {
    assert.equal(choice.message.role, 'assistant');
    assert.equal(typeof choice.message.content, 'string');
    assert.equal(choice.finish_reason, 'length'); // the mock never ends early (eos_period 0)
  }
  assert.equal(res.usage.completion_tokens, 16, 'completion_tokens counts both choices');
  const streamed = await collectChatStream({ model: 'mock', messages, max_tokens: 8, temperature: 1, seed: 3, n: 2 });
  assert.equal(streamed.ids.size, 1);
  assert.equal(streamed.texts.length, 2);
  assert.deepEqual(streamed.finish, [['length'], ['length']]);
  // The same seed gives the same two answers (in some order).
  assert.deepEqual([...streamed.texts].sort(), res.choices.map((c) => c.message.content).sort());
  const completions = await client.completions.create({ model: 'tiny-qwen2', prompt: 'Two cats', max_tokens: 4, temperature: 0, n: 2 });
  assert.deepEqual(completions.choices.map((c) => c.index).sort(), [0, 1]);
  assert.equal(completions.choices[0].text, completions.choices[1].text, 'greedy choices agree');
});

function closeTo(a, b, what) {
  assert.ok(Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
}

test('chat logprobs: top_logprobs sorted, chosen token = the max at temperature 0; bytes spell the text; stream agrees', async () => {
  const params = { model: 'tiny-qwen2', messages: [{ role: 'user', content: 'Count to five.' }], max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3 };
  const res = await client.chat.completions.create(params);
  const content = res.choices[0].logprobs?.content;
  assert.ok(Array.isArray(content), 'choices[0].logprobs.content is an array');
  assert.equal(content.length, res.usage.completion_tokens);
  const bytes = [];
  for (const [i, entry] of content.entries()) {
    assert.equal(typeof entry.token, 'string');
    assert.ok(entry.logprob <= 0, `token ${i}: logprob ${entry.logprob} > 0`);
    assert.equal(entry.top_logprobs.length, 3);
    for (let k = 1; k < 3; ++k) assert.ok(entry.top_logprobs[k - 1].logprob >= entry.top_logprobs[k].logprob, `token ${i}: top_logprobs not sorted`);
    closeTo(entry.logprob, Math.max(...entry.top_logprobs.map((t) => t.logprob)), `token ${i}: chosen vs max`);
    assert.equal(entry.token, entry.top_logprobs[0].token);
    const mass = entry.top_logprobs.reduce((sum, t) => sum + Math.exp(t.logprob), 0);
    assert.ok(mass <= 1 + 1e-4, `token ${i}: top_logprobs hold probability ${mass} > 1`);
    assert.ok(Array.isArray(entry.bytes));
    bytes.push(...entry.bytes);
  }
  const text = res.choices[0].message.content;
  if (!text.includes('\uFFFD')) assert.deepEqual(Buffer.from(bytes), Buffer.from(text, 'utf8'), 'the tokens\' bytes spell the content');
  const streamed = await collectChatStream(params);
  assert.deepEqual(streamed.logprobs.map((e) => [e.token, e.logprob]), content.map((e) => [e.token, e.logprob]));
});

test('completions logprobs: tokens, token_logprobs = the max of top_logprobs at temperature 0, text_offset', async () => {
  const res = await client.completions.create({ model: 'tiny-qwen2', prompt: 'Count to five:', max_tokens: 8, temperature: 0, logprobs: 3 });
  const lp = res.choices[0].logprobs;
  assert.ok(lp, 'choices[0].logprobs');
  const n = res.usage.completion_tokens;
  assert.equal(lp.tokens.length, n);
  assert.equal(lp.token_logprobs.length, n);
  assert.equal(lp.top_logprobs.length, n);
  assert.equal(lp.text_offset.length, n);
  for (let i = 0; i < n; ++i) {
    const top = lp.top_logprobs[i];
    const values = Object.values(top);
    assert.ok(values.length >= 1 && values.length <= 3, `token ${i}: ${values.length} alternatives`);
    closeTo(lp.token_logprobs[i], Math.max(...values), `token ${i}: chosen vs max`);
    assert.ok(lp.tokens[i] in top, `token ${i}: the chosen token is among top_logprobs`);
    if (i > 0) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1], 'text_offset does not decrease');
  }
  if (!res.choices[0].text.includes('\uFFFD')) assert.equal(lp.tokens.join(''), res.choices[0].text);
  // The values themselves: llaisys-offline's logprobs for the same prompt.
  const { outputs } = await offlineGenerate(fx.tiny, [{ prompt: 'Count to five:', max_tokens: 8, temperature: 0, logprobs: 3 }]);
  assert.equal(outputs[0].logprobs.length, n);
  for (let i = 0; i < n; ++i) closeTo(lp.token_logprobs[i], outputs[0].logprobs[i].logprob, `token ${i}: server vs offline logprob`);
});

test('tools round trip (mock script): tool_calls parsed, the tool result answered, streamed too', async () => {
  const messages = [{ role: 'user', content: QUESTION }];
  const first = await client.chat.completions.create({ model: 'mock', messages, tools: TOOLS, temperature: 0, max_tokens: 64 });
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls?.length, 1, JSON.stringify(choice.message));
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.match(call.id, /\S/);
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
  assert.ok(!(choice.message.content ?? '').includes('<tool_call>'), 'the markup is not in content');

  const streamed = await collectChatStream({ model: 'mock', messages, tools: TOOLS, temperature: 0, max_tokens: 64 });
  assert.deepEqual(streamed.finish[0], ['tool_calls']);
  assert.equal(streamed.toolCalls.length, 1);
  assert.equal(streamed.toolCalls[0].name, 'get_weather');
  assert.match(streamed.toolCalls[0].id, /\S/);
  assert.deepEqual(JSON.parse(streamed.toolCalls[0].arguments), { city: 'Paris' });
  assert.ok(!(streamed.texts[0] ?? '').includes('<tool_call>'), 'the markup is not streamed as content');

  const followUp = [...messages, choice.message, { role: 'tool', tool_call_id: call.id, content: TOOL_RESULT }];
  const second = await client.chat.completions.create({ model: 'mock', messages: followUp, tools: TOOLS, temperature: 0, max_tokens: 64 });
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.equal(second.choices[0].message.content, FINAL_ANSWER);
  assert.ok(!second.choices[0].message.tool_calls?.length, 'no tool call in the answer');
  const secondStreamed = await collectChatStream({ model: 'mock', messages: followUp, tools: TOOLS, temperature: 0, max_tokens: 64 });
  assert.equal(secondStreamed.texts[0], FINAL_ANSWER);
  assert.deepEqual(secondStreamed.finish[0], ['stop']);
});

function norm(v) { return Math.sqrt(v.reduce((s, x) => s + x * x, 0)); }

for (const [model, hidden] of [['tiny-qwen2', 256], ['mock', 64]]) {
  test(`${model}: embeddings have the hidden size, unit norm; base64 (client default) equals float`, async () => {
    const viaClient = await client.embeddings.create({ model, input: 'The lighthouse keeper' });
    assert.equal(viaClient.object, 'list');
    assert.equal(viaClient.data.length, 1);
    const vector = viaClient.data[0].embedding;
    assert.equal(vector.length, hidden);
    closeTo(norm(vector), 1, 'L2 norm');
    const ids = await tokenize(fx.server, model, 'The lighthouse keeper');
    assert.equal(viaClient.usage.prompt_tokens, ids.length);

    const float = await postJson(fx.server, '/v1/embeddings', { model, input: 'The lighthouse keeper', encoding_format: 'float' });
    assert.equal(float.status, 200, float.text);
    const floats = float.json.data[0].embedding;
    const b64 = await postJson(fx.server, '/v1/embeddings', { model, input: 'The lighthouse keeper', encoding_format: 'base64' });
    assert.equal(b64.status, 200, b64.text);
    const raw = Buffer.from(b64.json.data[0].embedding, 'base64');
    assert.equal(raw.length, 4 * hidden);
    for (let i = 0; i < hidden; ++i) {
      closeTo(raw.readFloatLE(4 * i), floats[i], `base64[${i}] vs float`);
      closeTo(vector[i], floats[i], `client[${i}] vs float`);
    }

    const batch = await client.embeddings.create({ model, input: ['first text', 'second text'], encoding_format: 'float' });
    assert.deepEqual(batch.data.map((d) => d.index), [0, 1]);
    assert.notDeepEqual(batch.data[0].embedding, batch.data[1].embedding);
    const byIds = await client.embeddings.create({ model, input: ids, encoding_format: 'float' });
    const byIdsList = await client.embeddings.create({ model, input: [ids, ids.slice(0, 2)], encoding_format: 'float' });
    for (let i = 0; i < hidden; ++i) {
      closeTo(byIds.data[0].embedding[i], floats[i], `ids[${i}] vs text`);
      closeTo(byIdsList.data[0].embedding[i], floats[i], `[[ids]][${i}] vs text`);
    }
    assert.equal(byIdsList.data.length, 2);
  });
}

test('multi-turn reuse: re-sending a growing conversation reports cached prompt tokens', async () => {
  const system = 'You are a meticulous assistant for the lighthouse of Saint-Malo. ' +
    'Answer with care, cite the logbook, and never invent tide tables. '.repeat(6);
  const conversation = [{ role: 'system', content: system }, { role: 'user', content: 'When was the lamp last cleaned?' }];
  const first = await client.chat.completions.create({ model: 'tiny-qwen2', messages: conversation, max_tokens: 8, temperature: 0 });
  assert.equal(first.usage.prompt_tokens_details?.cached_tokens, 0, 'a new system prompt is not cached');
  conversation.push(first.choices[0].message, { role: 'user', content: 'And the lens?' });
  const second = await client.chat.completions.create({ model: 'tiny-qwen2', messages: conversation, max_tokens: 8, temperature: 0 });
  const cached = second.usage.prompt_tokens_details?.cached_tokens;
  assert.ok(cached > 0, `cached_tokens ${cached}`);
  assert.ok(cached < second.usage.prompt_tokens, `cached ${cached} < prompt ${second.usage.prompt_tokens}`);
  assert.ok(cached >= first.usage.prompt_tokens - 32, `cached ${cached} covers the first prompt (${first.usage.prompt_tokens}) but for its last blocks`);
});
