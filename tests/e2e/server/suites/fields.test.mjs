// Request fields (issue 25 item 5; docs/SERVER.md "Request fields") through the official openai
// client against the tiny Qwen2 (a template that renders tools) and stories260K (the ChatML
// fallback, which does not): refused and unknown fields come back 400 naming them, ignored fields
// and the values that ask for nothing leave the answer as it is without them, tools are refused for
// a template that would drop them, and cache_salt keeps requests apart in the prefix cache.

import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { makeTinyQwen2, Server, stopAndClean, tempDir } from '../lib/harness.mjs';

const STORIES = fileURLToPath(new URL('../../../../models/stories260K', import.meta.url));
const TOOLS = [{
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
}];

let dir;
let server;
let client;

before(async () => {
  dir = tempDir('fields');
  const tiny = await makeTinyQwen2(dir);
  server = new Server({ models: [['tiny-qwen2', tiny], ['stories', STORIES]], name: 'fields', logDir: dir });
  await server.start();
  client = server.client();
});

after(() => stopAndClean(server, dir));

const chat = (extra = {}) => ({ model: 'tiny-qwen2', messages: [{ role: 'user', content: 'Name three colours.' }], max_tokens: 8, temperature: 0, ...extra });
const completion = (extra = {}) => ({ model: 'tiny-qwen2', prompt: 'Three colours:', max_tokens: 8, temperature: 0, ...extra });

// The client's error for a request that must be refused with a 400 naming `param`.
async function refusedWith(promise, param, what) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof OpenAI.BadRequestError, `${what}: ${error}`);
    assert.equal(error.status, 400, what);
    assert.equal(error.param, param, `${what}: ${error.message}`);
    assert.equal(error.type, 'invalid_request_error', what);
    assert.ok(error.message.includes(`'${param}'`), `${what}: the message does not name '${param}': ${error.message}`);
    return true;
  });
  server.assertAlive();
}

test('refused fields are 400 naming them, on each endpoint', async () => {
  const cases = [
    ['functions', () => client.chat.completions.create(chat({ functions: [{ name: 'get_weather', parameters: { type: 'object' } }] }))],
    ['function_call', () => client.chat.completions.create(chat({ function_call: 'auto' }))],
    ['audio', () => client.chat.completions.create(chat({ audio: { voice: 'alloy', format: 'wav' } }))],
    ['modalities', () => client.chat.completions.create(chat({ modalities: ['text', 'audio'] }))],
    ['reasoning_effort', () => client.chat.completions.create(chat({ reasoning_effort: 'high' }))],
    ['verbosity', () => client.chat.completions.create(chat({ verbosity: 'low' }))],
    ['web_search_options', () => client.chat.completions.create(chat({ web_search_options: {} }))],
    ['stream_options.include_obfuscation',
      () => client.chat.completions.create(chat({ stream: true, stream_options: { include_obfuscation: true } }))],
    ['suffix', () => client.completions.create(completion({ suffix: ' and that is all.' }))],
    ['include_stop_str_in_output', () => client.completions.create(completion({ stop: ['.'], include_stop_str_in_output: true }))],
  ];
  for (const [param, send] of cases) await refusedWith(send(), param, param);
});

test('unknown fields are 400 naming them: typos, another endpoint\'s fields, vLLM extensions llaisys lacks', async () => {
  await refusedWith(client.chat.completions.create(chat({ temprature: 0.5 })), 'temprature', 'chat typo');
  await refusedWith(client.chat.completions.create(chat({ use_beam_search: true })), 'use_beam_search', 'chat vLLM extension');
  await refusedWith(client.completions.create(completion({ top_logprobs: 2 })), 'top_logprobs', 'a chat field on completions');
  await refusedWith(client.completions.create(completion({ store: true })), 'store', 'store on completions');
  await refusedWith(client.embeddings.create({ model: 'tiny-qwen2', input: 'x', temperature: 0 }), 'temperature', 'embeddings');
  await refusedWith(client.chat.completions.create(chat({ stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } })),
    'stream_options.continuous_usage_stats', 'a stream_options member');
});

test('ignored fields, and refused fields set to what asks for nothing, leave the answer as it is', async () => {
  const plain = await client.chat.completions.create(chat());
  const variants = {
    store: true,
    metadata: { team: 'search', run: '7' },
    user: 'user-1234',
    safety_identifier: 'hash-of-user',
    prompt_cache_key: 'colours',
    prompt_cache_retention: '24h',
    service_tier: 'flex',
    prediction: { type: 'content', content: 'Red, green and blue.' },
    modalities: ['text'],
    reasoning_effort: 'none',
    verbosity: 'medium',
    include_stop_str_in_output: false,
  };
  for (const [field, value] of Object.entries(variants)) {
    const res = await client.chat.completions.create(chat({ [field]: value }));
    assert.equal(res.choices[0].message.content, plain.choices[0].message.content, field);
    assert.equal(res.choices[0].finish_reason, plain.choices[0].finish_reason, field);
    assert.equal(res.usage.prompt_tokens, plain.usage.prompt_tokens, field);
    assert.equal(res.usage.completion_tokens, plain.usage.completion_tokens, field);
  }
  const text = await client.completions.create(completion());
  const withUser = await client.completions.create(completion({ user: 'user-1234', suffix: '' }));
  assert.equal(withUser.choices[0].text, text.choices[0].text);
  // A malformed ignored field is still a 400.
  await refusedWith(client.chat.completions.create(chat({ metadata: { team: 7 } })), 'metadata', 'metadata of a number');
});

test('tools are refused for a model whose chat template does not render them (stories260K: ChatML fallback)', async () => {
  const models = await client.models.list();
  assert.equal(models.data.find((m) => m.id === 'stories').chat_template_source, 'fallback: chatml');
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  await refusedWith(client.chat.completions.create({ model: 'stories', messages, tools: TOOLS, max_tokens: 4 }), 'tools', 'chat');
  await refusedWith(client.chat.completions.create({ model: 'stories', messages, tools: TOOLS, tool_choice: 'none', max_tokens: 4 }),
    'tools', 'chat, tool_choice none');
  await refusedWith(client.responses.create({ model: 'stories', input: 'Weather?', tools: [{ type: 'function', name: 'get_weather' }], max_output_tokens: 4 }),
    'tools', 'responses');
  const plain = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 4 });
  assert.equal(plain.choices.length, 1);
  const tiny = await client.chat.completions.create({ model: 'tiny-qwen2', messages, tools: TOOLS, max_tokens: 4, temperature: 0 });
  assert.equal(tiny.choices.length, 1);
});

test('cache_salt: requests with different salts never share prefix-cache blocks', async () => {
  const messages = [{ role: 'user', content: 'A salted conversation about lighthouses, '.repeat(6) }];
  const send = (salt) => client.chat.completions.create({ model: 'tiny-qwen2', messages, max_tokens: 2, temperature: 0, cache_salt: salt });
  const first = await send('tenant-a');
  const other = await send('tenant-b');
  const again = await send('tenant-a');
  assert.ok(first.usage.prompt_tokens >= 48, `prompt ${first.usage.prompt_tokens} tokens: too short to fill a block`);
  assert.equal(other.usage.prompt_tokens_details.cached_tokens, 0, 'another salt found tenant-a\'s blocks');
  assert.ok(again.usage.prompt_tokens_details.cached_tokens > 0, 'the same salt did not reuse its own blocks');
  assert.equal(again.choices[0].message.content, first.choices[0].message.content);
});
