// Suite: reasoning models through a real server. Every model is served with Qwen3's chat template
// (tests/data/chat-templates/qwen3, --chat-template), so the think-block format is detected (auto).
// The scripted mock model writes "<think>\n...\n</think>\n\n" then an answer, with a token boundary
// forced at every byte of that text (one script per cut: the text's two halves tokenized apart):
// reasoning_content and content must be exact, streamed (the deltas put together) and not, and
// completion_tokens_details.reasoning_tokens must count the tokens up to the one that completes
// "</think>" (each token's bytes from the response's own logprobs). Also: chat_template_kwargs
// {"enable_thinking": false} renders what Python's Jinja2 renders (tests/data), a tool call after
// the reasoning, the Responses API's reasoning item (validated against OpenAI's schemas), and
// --reasoning-format none keeping the raw text.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { offlineTokenizeAll, postJson, startFixture } from '../lib/harness.mjs';
import { openapiProblems } from '../lib/openapi.mjs';
import { checkSseBody, streamRequest } from '../lib/sse.mjs';

const QWEN3 = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../data/chat-templates/qwen3');
const TEMPLATE = path.join(QWEN3, 'Qwen-Qwen3-8B.jinja');
const JINJA2 = JSON.parse(fs.readFileSync(path.join(QWEN3, 'expected.json'), 'utf8'));

const TEXT = '<think>\nThe user asks 2+2.\nThat is 4.\n</think>\n\nThe answer is 4.';
const REASONING = 'The user asks 2+2.\nThat is 4.';
const ANSWER = 'The answer is 4.';
const CLOSE_END = TEXT.indexOf('</think>') + '</think>'.length;
const TOOL_TEXT = '<think>\nI need the weather tool.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const WEATHER = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

const trigger = (i) => `case ${i} end`;  // the user message that selects cut i
const CUTS = [...Array(TEXT.length + 1).keys()];

async function script(tinyDir) {
  const texts = [];
  for (const i of CUTS) texts.push(trigger(i), TEXT.slice(0, i), TEXT.slice(i));
  texts.push('weather please', TOOL_TEXT, 'no thinking please', ANSWER);
  const ids = await offlineTokenizeAll(tinyDir, texts);
  const replies = CUTS.map((i) => ({ when_prompt_contains: ids[3 * i], ids: [...ids[3 * i + 1], ...ids[3 * i + 2]] }));
  const rest = 3 * CUTS.length;
  replies.push({ when_prompt_contains: ids[rest], ids: ids[rest + 1] });
  replies.push({ when_prompt_contains: ids[rest + 2], ids: ids[rest + 3] });
  return { replies };
}

let fx;
let raw;

before(async () => {
  fx = await startFixture('reasoning', { args: ['--chat-template', TEMPLATE], mock: script });
  raw = await startFixture('reasoning-none', { args: ['--chat-template', TEMPLATE, '--reasoning-format', 'none'], mock: script });
});

after(async () => {
  await fx?.close();
  await raw?.close();
});

const chat = (content, extra = {}) => ({
  model: 'mock', messages: [{ role: 'user', content }], temperature: 0, max_tokens: 200, ...extra,
});

// The generated tokens up to and including the one that completes "</think>", from the response's
// logprobs (each entry's bytes are exactly what its token adds to the text).
function tokensThroughClose(entries) {
  let bytes = 0;
  for (const [k, entry] of entries.entries()) {
    bytes += entry.bytes.length;
    if (bytes >= CLOSE_END) return k + 1;
  }
  return entries.length;
}

test('reasoning_content and content are exact with a token boundary at every byte', async () => {
  for (const i of CUTS) {
    const what = `cut at byte ${i} (${JSON.stringify(TEXT.slice(0, i).slice(-8))} | ${JSON.stringify(TEXT.slice(i, i + 8))})`;
    const whole = await postJson(fx.server, '/v1/chat/completions', chat(trigger(i), { logprobs: true }));
    assert.equal(whole.status, 200, `${what}: ${whole.text}`);
    const message = whole.json.choices[0].message;
    assert.equal(message.reasoning_content, REASONING, what);
    assert.equal(message.content, ANSWER, what);
    assert.equal(whole.json.choices[0].finish_reason, 'stop', what);
    const reasoningTokens = tokensThroughClose(whole.json.choices[0].logprobs.content);
    assert.equal(whole.json.usage.completion_tokens_details.reasoning_tokens, reasoningTokens, what);

    const streamed = await streamRequest(fx.server, '/v1/chat/completions',
      chat(trigger(i), { stream: true, stream_options: { include_usage: true } }));
    const sse = checkSseBody(streamed.bytes);
    assert.deepEqual(sse.problems, [], what);
    let reasoning = '';
    let content = '';
    for (const event of sse.events) {
      if (event === '[DONE]') continue;
      for (const choice of event.choices) {
        reasoning += choice.delta.reasoning_content ?? '';
        content += choice.delta.content ?? '';
      }
    }
    assert.equal(reasoning, REASONING, `${what} (streamed)`);
    assert.equal(content, ANSWER, `${what} (streamed)`);
    const usage = sse.events[sse.events.length - 2].usage;
    assert.equal(usage.completion_tokens_details.reasoning_tokens, reasoningTokens, `${what} (streamed)`);
  }
});

test('enable_thinking false renders the empty think block as Jinja2 does, and the answer is all content', async () => {
  const want = JINJA2.expected.thinking_off;
  const rendered = await postJson(fx.server, '/tokenize', {
    model: 'mock', messages: JINJA2.cases.thinking_off.messages, chat_template_kwargs: { enable_thinking: false },
  });
  assert.equal(rendered.status, 200, rendered.text);
  const text = await postJson(fx.server, '/detokenize', { model: 'mock', tokens: rendered.json.tokens });
  assert.equal(text.json.prompt, want);
  const on = await postJson(fx.server, '/tokenize', { model: 'mock', messages: JINJA2.cases.user_only.messages });
  const onText = await postJson(fx.server, '/detokenize', { model: 'mock', tokens: on.json.tokens });
  assert.equal(onText.json.prompt, JINJA2.expected.user_only);

  const answer = await postJson(fx.server, '/v1/chat/completions',
    chat('no thinking please', { chat_template_kwargs: { enable_thinking: false } }));
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.json.choices[0].message.content, ANSWER);
  assert.equal(answer.json.choices[0].message.reasoning_content, null);
  assert.equal(answer.json.usage.completion_tokens_details.reasoning_tokens, 0);
  // The same through reasoning_effort "none"; a template variable the request may not set is a 400.
  const effort = await postJson(fx.server, '/v1/chat/completions', chat('no thinking please', { reasoning_effort: 'none' }));
  assert.equal(effort.json.usage.prompt_tokens, answer.json.usage.prompt_tokens);
  const bad = await postJson(fx.server, '/v1/chat/completions', chat('hi', { chat_template_kwargs: { messages: [] } }));
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'chat_template_kwargs.messages');
});

test('a tool call after the reasoning is parsed, streamed and not', async () => {
  const body = chat('weather please', { tools: [WEATHER] });
  const whole = await postJson(fx.server, '/v1/chat/completions', body);
  assert.equal(whole.status, 200, whole.text);
  const choice = whole.json.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.reasoning_content, 'I need the weather tool.');
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { city: 'Paris' });

  const streamed = await streamRequest(fx.server, '/v1/chat/completions', { ...body, stream: true });
  const sse = checkSseBody(streamed.bytes);
  assert.deepEqual(sse.problems, []);
  const deltas = sse.events.filter((e) => e !== '[DONE]').flatMap((e) => e.choices.map((c) => c.delta));
  assert.equal(deltas.map((d) => d.reasoning_content ?? '').join(''), 'I need the weather tool.');
  assert.equal(deltas.flatMap((d) => d.tool_calls ?? []).map((c) => c.function.name).join(), 'get_weather');
});

test('Responses API: a reasoning item, then the message; both validate against OpenAI\'s schemas', async () => {
  const request = { model: 'mock', input: trigger(20), temperature: 0 };
  const whole = await postJson(fx.server, '/v1/responses', request);
  assert.equal(whole.status, 200, whole.text);
  assert.deepEqual(openapiProblems('Response', whole.json), []);
  assert.deepEqual(whole.json.output.map((item) => item.type), ['reasoning', 'message']);
  assert.equal(whole.json.output[0].content[0].text, REASONING);
  assert.equal(whole.json.output[1].content[0].text, ANSWER);
  assert.ok(whole.json.usage.output_tokens_details.reasoning_tokens > 0);

  const streamed = await streamRequest(fx.server, '/v1/responses', { ...request, stream: true });
  const events = streamed.bytes.toString('utf8').split('\n\n').filter((b) => b.includes('data: '))
    .map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)));
  for (const event of events) assert.deepEqual(openapiProblems('ResponseStreamEvent', event), [], event.type);
  const reasoning = events.filter((e) => e.type === 'response.reasoning_text.delta').map((e) => e.delta).join('');
  assert.equal(reasoning, REASONING);
  const done = events.find((e) => e.type === 'response.reasoning_text.done');
  assert.equal(done.text, REASONING);
  const terminal = events[events.length - 1].response;
  assert.deepEqual(terminal.output.map((item) => [item.type, item.content[0].text]), [['reasoning', REASONING], ['message', ANSWER]]);
});

test('--reasoning-format none keeps the raw text in content', async () => {
  const whole = await postJson(raw.server, '/v1/chat/completions', chat(trigger(0)));
  assert.equal(whole.status, 200, whole.text);
  assert.equal(whole.json.choices[0].message.content, TEXT);
  assert.equal('reasoning_content' in whole.json.choices[0].message, false);
  assert.equal(whole.json.usage.completion_tokens_details, undefined);
});
