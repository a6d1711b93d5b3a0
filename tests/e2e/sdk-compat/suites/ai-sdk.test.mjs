// The Vercel AI SDK (`ai` with `@ai-sdk/openai` and `@ai-sdk/openai-compatible`, versions pinned in
// ../package.json) against llaisys-server. Three providers: `openai(id)` (the default: the Responses
// API), `openai.chat(id)` (chat completions) and `createOpenAICompatible(...)`. For each: the text
// of generateText and of streamText's deltas equals a greedy chat completion sent without any SDK,
// with the route the provider is meant to use; usage equals the reference's; a tool round trip on
// the scripted mock (the SDK runs the tool, sends its result back and returns the script's final
// sentence), streamed and not; structured output parses and equals the raw request with the same
// schema; embedMany equals raw /v1/embeddings.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { embed, embedMany, generateText, Output, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import {
  API_KEY, MOCK, PROMPTS, TINY, WEATHER_ANSWER, WEATHER_QUESTION, WEATHER_RESULT,
  assertVectorsClose, guardGlobalFetch, rawChat, rawEmbeddings, recordingFetch, startCompatServer,
} from '../lib/compat.mjs';

const refused = guardGlobalFetch();
let fx;
let recorder;
let providers;
let embeddingProviders;

before(async () => {
  fx = await startCompatServer('ai-sdk');
  recorder = recordingFetch();
  const openai = createOpenAI({ baseURL: fx.baseURL, apiKey: API_KEY, fetch: recorder.fetch });
  const compatible = createOpenAICompatible({
    name: 'llaisys', baseURL: fx.baseURL, apiKey: API_KEY, fetch: recorder.fetch, includeUsage: true, supportsStructuredOutputs: true,
  });
  // [name, model for an id, the route it must take]
  providers = [
    ['openai (Responses API)', (id) => openai(id), '/v1/responses'],
    ['openai.chat', (id) => openai.chat(id), '/v1/chat/completions'],
    ['openai-compatible', (id) => compatible(id), '/v1/chat/completions'],
  ];
  embeddingProviders = [['openai', (id) => openai.embedding(id)], ['openai-compatible', (id) => compatible.embeddingModel(id)]];
});

after(async () => {
  await fx?.close();
  assert.deepEqual(recorder?.outside ?? [], [], 'an SDK tried to reach beyond the local server');
  assert.deepEqual(refused, [], 'something fetched beyond the local server');
});

// streamText's deltas and results; any error part fails the test (streamText does not throw).
async function collectStream(options) {
  const errors = [];
  const result = streamText({ ...options, maxRetries: 0, onError: ({ error }) => errors.push(error) });
  const deltas = [];
  for await (const part of result.fullStream) {
    if (part.type === 'text-delta') deltas.push(part.text);
    if (part.type === 'error') errors.push(part.error);
  }
  if (errors.length) throw errors[0];
  return {
    deltas,
    text: await result.text,
    finishReason: await result.finishReason,
    usage: await result.totalUsage,
    steps: await result.steps,
  };
}

for (const [index, prompt] of PROMPTS.slice(0, 2).entries()) {
  const system = index === 1 ? 'You are a terse assistant.' : undefined;
  test(`generateText and streamText (${system ? 'system + ' : ''}prompt ${index}) on every provider equal a raw greedy chat completion`, async () => {
    const messages = [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: prompt }];
    const reference = await rawChat(fx.server, { model: TINY, messages, max_tokens: 24 });
    const expected = reference.choices[0].message.content;
    assert.ok(expected.length > 0, 'the reference has text');
    for (const [name, model, route] of providers) {
      const from = recorder.mark();
      const options = { model: model(TINY), system, prompt, temperature: 0, maxOutputTokens: 24 };
      const generated = await generateText({ ...options, maxRetries: 0 });
      assert.equal(generated.text, expected, `${name}: generateText`);
      assert.equal(generated.finishReason, reference.choices[0].finish_reason === 'length' ? 'length' : 'stop', `${name}: finishReason`);
      assert.equal(generated.usage.inputTokens, reference.usage.prompt_tokens, `${name}: input tokens`);
      assert.equal(generated.usage.outputTokens, reference.usage.completion_tokens, `${name}: output tokens`);

      const streamed = await collectStream(options);
      assert.ok(streamed.deltas.length > 1, `${name}: streamed in ${streamed.deltas.length} deltas`);
      assert.equal(streamed.deltas.join(''), expected, `${name}: streamText deltas`);
      assert.equal(streamed.text, expected, `${name}: streamText text`);
      assert.equal(streamed.finishReason, generated.finishReason, `${name}: streamed finishReason`);
      assert.equal(streamed.usage.inputTokens, reference.usage.prompt_tokens, `${name}: streamed input tokens`);
      assert.equal(streamed.usage.outputTokens, reference.usage.completion_tokens, `${name}: streamed output tokens`);

      assert.deepEqual(recorder.routes(from), [`POST ${route}`, `POST ${route}`], `${name}: the routes taken`);
      const [plainBody, streamBody] = recorder.calls.slice(from).map((c) => c.body);
      assert.equal(plainBody.model, TINY);
      assert.ok(!plainBody.stream, `${name}: generateText does not stream`);
      assert.equal(streamBody.stream, true, `${name}: streamText streams`);
    }
  });
}

test('tool round trip on the mock script, every provider, generateText and streamText: the SDK runs get_weather and returns the final answer', async () => {
  for (const [name, model, route] of providers) {
    for (const streaming of [false, true]) {
      const what = `${name}${streaming ? ' (streamText)' : ''}`;
      const executed = [];
      const tools = {
        get_weather: tool({
          description: 'The current weather in a city',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => { executed.push(city); return WEATHER_RESULT; },
        }),
      };
      const from = recorder.mark();
      const options = { model: model(MOCK), prompt: WEATHER_QUESTION, tools, temperature: 0, stopWhen: stepCountIs(4) };
      const result = streaming ? await collectStream(options) : await generateText({ ...options, maxRetries: 0 });
      assert.deepEqual(executed, ['Paris'], `${what}: the tool ran once with the script's argument`);
      assert.equal(result.text, WEATHER_ANSWER, `${what}: the final text`);
      assert.equal(result.steps.length, 2, `${what}: a tool step and an answer step`);
      const [call] = result.steps[0].toolCalls;
      assert.equal(result.steps[0].toolCalls.length, 1, `${what}: one call`);
      assert.equal(call.toolName, 'get_weather');
      assert.deepEqual(call.input, { city: 'Paris' });
      assert.match(call.toolCallId, /^call_/);
      assert.equal(result.steps[0].finishReason, 'tool-calls', `${what}: the first step's finishReason`);
      assert.equal(result.steps[0].toolResults[0].output, WEATHER_RESULT);
      assert.equal(result.steps[1].finishReason, 'stop', `${what}: the last step's finishReason`);

      // Two requests on the provider's route, the second carrying the call and the tool's result.
      assert.deepEqual(recorder.routes(from), [`POST ${route}`, `POST ${route}`], `${what}: the routes taken`);
      const followUp = recorder.calls[from + 1].body;
      if (route === '/v1/responses') {
        const items = followUp.input.filter((item) => item.type === 'function_call' || item.type === 'function_call_output');
        assert.deepEqual(items.map((item) => item.type), ['function_call', 'function_call_output'], `${what}: follow-up items`);
        assert.equal(items[0].call_id, call.toolCallId);
        assert.equal(items[1].call_id, call.toolCallId);
      } else {
        const roles = followUp.messages.map((m) => m.role);
        assert.deepEqual(roles, ['user', 'assistant', 'tool'], `${what}: follow-up messages`);
        assert.equal(followUp.messages[1].tool_calls[0].id, call.toolCallId);
        assert.equal(followUp.messages[2].tool_call_id, call.toolCallId);
      }
    }
  }
});

test('structured output (Output.object with a zod schema) on every provider parses and equals the raw request with the same schema', async () => {
  const schema = z.object({
    name: z.string().max(12),
    age: z.number().int().min(0).max(120),
    member: z.boolean(),
  });
  for (const [name, model, route] of providers) {
    const from = recorder.mark();
    const result = await generateText({
      model: model(TINY), prompt: 'Describe a club member as JSON.', temperature: 0, maxOutputTokens: 120, maxRetries: 0,
      output: Output.object({ schema }),
    });
    assert.deepEqual(schema.parse(result.output), result.output, `${name}: the object fits the schema`);
    assert.deepEqual(recorder.routes(from), [`POST ${route}`]);
    // The schema as the SDK sent it, asked again without the SDK on chat completions.
    const body = recorder.calls[from].body;
    const format = route === '/v1/responses' ? body.text?.format : body.response_format;
    assert.equal(format?.type, 'json_schema', `${name}: sends a json_schema format (${JSON.stringify(format)})`);
    const jsonSchema = route === '/v1/responses'
      ? { name: format.name, schema: format.schema, strict: format.strict }
      : format.json_schema;
    const reference = await rawChat(fx.server, {
      model: TINY, messages: [{ role: 'user', content: 'Describe a club member as JSON.' }], max_tokens: 120,
      response_format: { type: 'json_schema', json_schema: jsonSchema },
    });
    assert.equal(result.text, reference.choices[0].message.content, `${name}: the JSON text`);
  }
});

test('embedMany (40 texts) and embed on the openai and openai-compatible providers equal raw /v1/embeddings', async () => {
  const texts = Array.from({ length: 40 }, (_, i) => `Embedding text number ${i}: ${PROMPTS[i % PROMPTS.length]}`);
  const reference = await rawEmbeddings(fx.server, { model: TINY, input: texts });
  for (const [name, model] of embeddingProviders) {
    const from = recorder.mark();
    const { embeddings } = await embedMany({ model: model(TINY), values: texts, maxRetries: 0 });
    assert.equal(embeddings.length, texts.length, `${name}: one vector per text`);
    embeddings.forEach((vector, i) => assertVectorsClose(vector, reference[i], `${name}: text ${i}`));
    assert.deepEqual(recorder.routes(from), ['POST /v1/embeddings'], `${name}: one request for 40 texts`);
    assert.equal(recorder.calls[from].body.input.length, texts.length);
    const { embedding } = await embed({ model: model(TINY), value: texts[7], maxRetries: 0 });
    assertVectorsClose(embedding, reference[7], `${name}: embed of text 7`);
  }
});
