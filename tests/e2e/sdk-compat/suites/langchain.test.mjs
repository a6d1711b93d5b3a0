// LangChain JS (`@langchain/openai` over `@langchain/core`, versions pinned in ../package.json)
// against llaisys-server: ChatOpenAI invoke (chat completions, and the Responses API when asked),
// stream and batch equal greedy chat completions sent without any SDK; bindTools on the scripted
// mock gives tool_calls with the script's arguments, streamed too, and the tool's result sent back
// gives the script's answer; the completions LLM's generate of 2 prompts is one batched request
// whose 2 generations equal single calls and llaisys-offline; OpenAIEmbeddings.embedDocuments of
// 300 texts is one request whose vectors equal embedQuery's and raw /v1/embeddings'.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI, OpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { z } from 'zod';
import {
  API_KEY, MOCK, PROMPTS, SUM_ANSWER, SUM_QUESTION, SUM_RESULT, TINY, WEATHER_ANSWER, WEATHER_QUESTION, WEATHER_RESULT,
  assertVectorsClose, guardGlobalFetch, norm, offlineGenerate, rawChat, rawEmbeddings, recordingFetch, startCompatServer,
} from '../lib/compat.mjs';

const refused = guardGlobalFetch();
let fx;
let recorder;

before(async () => {
  fx = await startCompatServer('langchain');
  recorder = recordingFetch();
});

after(async () => {
  await fx?.close();
  assert.deepEqual(recorder?.outside ?? [], [], 'an SDK tried to reach beyond the local server');
  assert.deepEqual(refused, [], 'something fetched beyond the local server');
});

const settings = () => ({ apiKey: API_KEY, maxRetries: 0, configuration: { baseURL: fx.baseURL, fetch: recorder.fetch } });
const chatModel = (fields) => new ChatOpenAI({ model: TINY, temperature: 0, maxTokens: 24, ...settings(), ...fields });

async function reference(prompt, { system, maxTokens = 24 } = {}) {
  const messages = [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: prompt }];
  const res = await rawChat(fx.server, { model: TINY, messages, max_tokens: maxTokens });
  return { text: res.choices[0].message.content, usage: res.usage, finish: res.choices[0].finish_reason };
}

test('ChatOpenAI invoke equals a raw greedy chat completion: text, usage, finish_reason; the Responses API path too', async () => {
  const system = 'You are a terse assistant.';
  const expected = await reference(PROMPTS[0], { system });
  for (const [name, fields, route] of [['chat completions', {}, '/v1/chat/completions'], ['useResponsesApi', { useResponsesApi: true }, '/v1/responses']]) {
    const from = recorder.mark();
    const message = await chatModel(fields).invoke([new SystemMessage(system), new HumanMessage(PROMPTS[0])]);
    assert.ok(AIMessage.isInstance(message), `${name}: an AIMessage`);
    assert.equal(message.text, expected.text, `${name}: text`);
    assert.equal(message.usage_metadata?.input_tokens, expected.usage.prompt_tokens, `${name}: input tokens`);
    assert.equal(message.usage_metadata?.output_tokens, expected.usage.completion_tokens, `${name}: output tokens`);
    assert.deepEqual(recorder.routes(from), [`POST ${route}`], `${name}: the route taken`);
    if (route === '/v1/chat/completions') assert.equal(message.response_metadata.finish_reason, expected.finish);
  }
});

test('ChatOpenAI stream: the chunks concatenate to the invoke text; usage on the stream', async () => {
  const expected = await reference(PROMPTS[1]);
  const from = recorder.mark();
  const stream = await chatModel().stream(PROMPTS[1]);
  const pieces = [];
  let whole;
  for await (const chunk of stream) {
    pieces.push(chunk.text);
    whole = whole ? whole.concat(chunk) : chunk;
  }
  assert.ok(pieces.filter((p) => p).length > 1, `streamed in ${pieces.length} chunks`);
  assert.equal(pieces.join(''), expected.text);
  assert.equal(whole.usage_metadata?.input_tokens, expected.usage.prompt_tokens);
  assert.equal(whole.usage_metadata?.output_tokens, expected.usage.completion_tokens);
  assert.deepEqual(recorder.routes(from), ['POST /v1/chat/completions']);
  assert.equal(recorder.calls[from].body.stream, true);
});

test('ChatOpenAI batch of 3 equals 3 invokes and the raw references, in order', async () => {
  const model = chatModel();
  const batch = await model.batch(PROMPTS);
  assert.equal(batch.length, 3);
  const texts = new Set();
  for (const [i, prompt] of PROMPTS.entries()) {
    const single = await model.invoke(prompt);
    const expected = await reference(prompt);
    assert.equal(batch[i].text, single.text, `prompt ${i}: batch vs invoke`);
    assert.equal(batch[i].text, expected.text, `prompt ${i}: batch vs raw`);
    texts.add(expected.text);
  }
  assert.equal(texts.size, 3, 'the three prompts have three different answers (the order is checked)');
});

const weatherTool = tool(async ({ city }) => (city === 'Paris' ? WEATHER_RESULT : `no weather for ${city}`), {
  name: 'get_weather', description: 'The current weather in a city', schema: z.object({ city: z.string() }),
});
const addTool = tool(async ({ a, b }) => (a === 2 && b === 40 ? SUM_RESULT : `${a} + ${b} = ${a + b}`), {
  name: 'add', description: 'Adds two integers', schema: z.object({ a: z.number().int(), b: z.number().int() }),
});

test('bindTools (mock script): tool_calls with the script\'s name and arguments; the tool run by LangChain; the result answered', async () => {
  const model = chatModel({ model: MOCK, maxTokens: 64 }).bindTools([weatherTool, addTool]);
  for (const [question, toolName, args, usedTool, answer] of [
    [WEATHER_QUESTION, 'get_weather', { city: 'Paris' }, weatherTool, WEATHER_ANSWER],
    [SUM_QUESTION, 'add', { a: 2, b: 40 }, addTool, SUM_ANSWER],
  ]) {
    const from = recorder.mark();
    const ai = await model.invoke([new HumanMessage(question)]);
    assert.equal(ai.tool_calls.length, 1, `${toolName}: one call (${JSON.stringify(ai.tool_calls)})`);
    const [call] = ai.tool_calls;
    assert.equal(call.name, toolName);
    assert.deepEqual(call.args, args);
    assert.match(call.id, /^call_/);
    assert.deepEqual(ai.invalid_tool_calls ?? [], []);
    assert.equal(ai.response_metadata.finish_reason, 'tool_calls');
    const sent = recorder.calls[from].body;
    assert.deepEqual(sent.tools.map((t) => t.function.name), ['get_weather', 'add'], 'both tools sent');

    // Streamed: the tool_call_chunks concatenate to the same call.
    let whole;
    for await (const chunk of await model.stream([new HumanMessage(question)])) whole = whole ? whole.concat(chunk) : chunk;
    assert.deepEqual(whole.tool_calls.map((c) => [c.name, c.args]), [[toolName, args]], `${toolName}: streamed tool_calls`);

    // LangChain runs the tool on the call and the ToolMessage goes back.
    const toolMessage = await usedTool.invoke(call);
    assert.ok(ToolMessage.isInstance(toolMessage));
    assert.equal(toolMessage.tool_call_id, call.id);
    const final = await model.invoke([new HumanMessage(question), ai, toolMessage]);
    assert.equal(final.text, answer, `${toolName}: the script's answer to the tool result`);
    assert.deepEqual(final.tool_calls, []);
    const followUp = recorder.calls[recorder.calls.length - 1].body.messages;
    assert.deepEqual(followUp.map((m) => m.role), ['user', 'assistant', 'tool']);
    assert.equal(followUp[2].tool_call_id, call.id);
  }
});

test('OpenAI (completions LLM) generate of 2 prompts: one batched request, 2 generations equal single calls and llaisys-offline; streamed too', async () => {
  const prompts = ['The quick brown fox jumps over', 'Once upon a time, in a small village,'];
  const { outputs } = await offlineGenerate(fx.tiny, prompts.map((prompt) => ({ prompt, max_tokens: 12, temperature: 0 })));
  assert.notEqual(outputs[0].text, outputs[1].text, 'the two prompts have different continuations');
  for (const streaming of [false, true]) {
    const llm = new OpenAI({ model: TINY, temperature: 0, maxTokens: 12, streaming, ...settings() });
    const from = recorder.mark();
    const result = await llm.generate(prompts);
    assert.deepEqual(recorder.routes(from), ['POST /v1/completions'], `streaming ${streaming}: one request`);
    assert.deepEqual(recorder.calls[from].body.prompt, prompts, `streaming ${streaming}: both prompts in it`);
    assert.equal(result.generations.length, 2);
    for (const [i, prompt] of prompts.entries()) {
      assert.equal(result.generations[i].length, 1);
      assert.equal(result.generations[i][0].text, outputs[i].text, `streaming ${streaming}, prompt ${i}: vs llaisys-offline`);
      assert.equal(result.generations[i][0].generationInfo?.finishReason ?? result.generations[i][0].generationInfo?.finish_reason,
        outputs[i].finish_reason, `streaming ${streaming}, prompt ${i}: finish reason`);
      assert.equal(await llm.invoke(prompt), outputs[i].text, `streaming ${streaming}, prompt ${i}: invoke alone`);
    }
    if (!streaming) {
      assert.equal(result.llmOutput.tokenUsage.completionTokens, outputs[0].usage.completion_tokens + outputs[1].usage.completion_tokens);
      assert.equal(result.llmOutput.tokenUsage.promptTokens, outputs[0].usage.prompt_tokens + outputs[1].usage.prompt_tokens);
    }
  }
});

test('OpenAIEmbeddings.embedDocuments of 300 texts: one request (batch 512); equals embedQuery and raw /v1/embeddings; dimensions', async () => {
  const texts = Array.from({ length: 300 }, (_, i) => `Document ${i}: ${PROMPTS[i % PROMPTS.length]} (${i * 7919 % 1000})`);
  const embeddings = new OpenAIEmbeddings({ model: TINY, ...settings() });
  const from = recorder.mark();
  const vectors = await embeddings.embedDocuments(texts);
  assert.deepEqual(recorder.routes(from), ['POST /v1/embeddings'], 'one request');
  assert.equal(recorder.calls[from].body.input.length, 300);
  assert.equal(vectors.length, 300);
  const hidden = vectors[0].length;
  assert.ok(hidden > 0);
  for (const [i, vector] of vectors.entries()) {
    assert.equal(vector.length, hidden, `text ${i}: length`);
    assert.ok(Math.abs(norm(vector) - 1) < 1e-4, `text ${i}: unit norm (${norm(vector)})`);
  }
  const picks = [0, 1, 137, 299];
  const raw = await rawEmbeddings(fx.server, { model: TINY, input: picks.map((i) => texts[i]) });
  for (const [k, i] of picks.entries()) {
    assertVectorsClose(await embeddings.embedQuery(texts[i]), vectors[i], `embedQuery of text ${i}`);
    assertVectorsClose(raw[k], vectors[i], `raw embedding of text ${i}`);
  }
  assert.notDeepEqual(vectors[0], vectors[1], 'different texts, different vectors');

  // dimensions: the head of the full vector, renormalised.
  const short = await new OpenAIEmbeddings({ model: TINY, dimensions: 16, ...settings() }).embedDocuments(texts.slice(0, 3));
  for (const [i, vector] of short.entries()) {
    const head = vectors[i].slice(0, 16);
    const scale = norm(head);
    assertVectorsClose(vector, head.map((x) => x / scale), `dimensions 16, text ${i}`, 1e-5);
  }
});
