// openai-node (`openai`, the current major pinned in ../package.json; the server suites keep their
// own pin) against llaisys-server: chat.completions streamed and not equal llaisys-offline's greedy
// answer; responses.create non-streaming, streaming (raw events and the responses.stream helper)
// and responses.parse with a zod format give the same text as a greedy chat completion sent without
// any SDK; the SDK's tool runners (chat.completions.runTools and ResponsesToolRunner) run the tool
// on the scripted mock's call and return the script's answer.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { ResponsesToolRunner } from 'openai/helpers/responses-tool-runner';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import {
  API_KEY, MOCK, PROMPTS, TINY, WEATHER_ANSWER, WEATHER_PARAMETERS, WEATHER_QUESTION, WEATHER_RESULT,
  guardGlobalFetch, offlineGenerate, rawChat, recordingFetch, slow, startCompatServer,
} from '../lib/compat.mjs';

const refused = guardGlobalFetch();
let fx;
let recorder;
let client;

before(async () => {
  fx = await startCompatServer('openai-node');
  recorder = recordingFetch();
  client = new OpenAI({ baseURL: fx.baseURL, apiKey: API_KEY, maxRetries: 0, timeout: 120000 * slow, fetch: recorder.fetch });
});

after(async () => {
  await fx?.close();
  assert.deepEqual(recorder?.outside ?? [], [], 'the SDK tried to reach beyond the local server');
  assert.deepEqual(refused, [], 'something fetched beyond the local server');
});

test('chat.completions, streamed and not, equal llaisys-offline generate on the same messages', async () => {
  const messages = [{ role: 'system', content: 'You are a terse assistant.' }, { role: 'user', content: PROMPTS[2] }];
  const { outputs: [expected] } = await offlineGenerate(fx.tiny, [{ messages, max_tokens: 24, temperature: 0 }]);
  const plain = await client.chat.completions.create({ model: TINY, messages, max_tokens: 24, temperature: 0 });
  assert.equal(plain.choices[0].message.content, expected.text);
  assert.equal(plain.choices[0].finish_reason, expected.finish_reason);
  assert.equal(plain.usage.prompt_tokens, expected.usage.prompt_tokens);
  assert.equal(plain.usage.completion_tokens, expected.usage.completion_tokens);

  const stream = await client.chat.completions.create({
    model: TINY, messages, max_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  const deltas = [];
  let usage;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) if (choice.delta?.content) deltas.push(choice.delta.content);
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(deltas.length > 1, `streamed in ${deltas.length} deltas`);
  assert.equal(deltas.join(''), expected.text);
  assert.equal(usage?.completion_tokens, expected.usage.completion_tokens);
});

test('responses.create (non-streaming, streaming, the stream helper) equals a raw greedy chat completion', async () => {
  const instructions = 'You are a terse assistant.';
  for (const prompt of PROMPTS.slice(0, 2)) {
    const reference = await rawChat(fx.server, {
      model: TINY, messages: [{ role: 'system', content: instructions }, { role: 'user', content: prompt }], max_tokens: 24,
    });
    const expected = reference.choices[0].message.content;
    const params = { model: TINY, instructions, input: prompt, max_output_tokens: 24, temperature: 0 };
    const from = recorder.mark();

    const response = await client.responses.create(params);
    assert.equal(response.object, 'response');
    assert.equal(response.output_text, expected, 'non-streaming output_text');
    assert.equal(response.status, reference.choices[0].finish_reason === 'length' ? 'incomplete' : 'completed');
    assert.equal(response.usage.input_tokens, reference.usage.prompt_tokens);
    assert.equal(response.usage.output_tokens, reference.usage.completion_tokens);

    const stream = await client.responses.create({ ...params, stream: true });
    const deltas = [];
    let final;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') deltas.push(event.delta);
      if (event.type === 'response.completed' || event.type === 'response.incomplete') final = event.response;
      assert.notEqual(event.type, 'error', `error event: ${JSON.stringify(event)}`);
    }
    assert.ok(deltas.length > 1, `streamed in ${deltas.length} deltas`);
    assert.equal(deltas.join(''), expected, 'streamed deltas');
    assert.equal(final?.usage.output_tokens, reference.usage.completion_tokens);

    const helper = client.responses.stream(params);
    let helperText = '';
    helper.on('response.output_text.delta', (event) => { helperText += event.delta; });
    const helperFinal = await helper.finalResponse();
    assert.equal(helperText, expected, 'responses.stream deltas');
    assert.equal(helperFinal.output_text, expected, 'responses.stream finalResponse().output_text');

    assert.deepEqual(recorder.routes(from), Array(3).fill('POST /v1/responses'));
  }
});

test('responses.parse with zodTextFormat: the parsed object fits the schema and equals chat with the same json_schema', async () => {
  const Person = z.object({ name: z.string().max(12), age: z.number().int().min(0).max(120), member: z.boolean() });
  const input = 'Describe a club member as JSON.';
  const from = recorder.mark();
  const response = await client.responses.parse({
    model: TINY, input, temperature: 0, max_output_tokens: 120, text: { format: zodTextFormat(Person, 'person') },
  });
  assert.deepEqual(Person.parse(response.output_parsed), response.output_parsed);
  const format = recorder.calls[from].body.text.format;
  assert.equal(format.type, 'json_schema');
  const reference = await rawChat(fx.server, {
    model: TINY, messages: [{ role: 'user', content: input }], max_tokens: 120,
    response_format: { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, strict: format.strict } },
  });
  assert.equal(response.output_text, reference.choices[0].message.content);
});

test('tool runners on the mock script: chat.completions.runTools and ResponsesToolRunner run get_weather and return the answer', async () => {
  const executed = [];
  const getWeather = async ({ city }) => { executed.push(city); return WEATHER_RESULT; };

  const from = recorder.mark();
  const runner = client.chat.completions.runTools({
    model: MOCK, temperature: 0, messages: [{ role: 'user', content: WEATHER_QUESTION }],
    tools: [{
      type: 'function',
      function: {
        name: 'get_weather', description: 'The current weather in a city', parameters: WEATHER_PARAMETERS,
        function: (args) => getWeather(args), parse: JSON.parse,
      },
    }],
  });
  assert.equal(await runner.finalContent(), WEATHER_ANSWER, 'runTools final content');
  assert.deepEqual(executed, ['Paris']);
  assert.deepEqual(recorder.routes(from), Array(2).fill('POST /v1/chat/completions'));
  const followUp = recorder.calls[from + 1].body.messages;
  assert.deepEqual(followUp.map((m) => m.role), ['user', 'assistant', 'tool']);
  assert.equal(followUp[2].content, WEATHER_RESULT);

  for (const stream of [false, true]) {
    executed.length = 0;
    const start = recorder.mark();
    const toolRunner = new ResponsesToolRunner({
      functions: [{
        tool: { type: 'function', name: 'get_weather', description: 'The current weather in a city', parameters: WEATHER_PARAMETERS, strict: true },
        execute: (args) => getWeather(args),
      }],
    });
    const final = await toolRunner.run(client, { model: MOCK, input: WEATHER_QUESTION, temperature: 0 }, { stream });
    assert.equal(final.output_text, WEATHER_ANSWER, `ResponsesToolRunner (stream ${stream}) final output_text`);
    assert.deepEqual(executed, ['Paris'], `ResponsesToolRunner (stream ${stream}) ran the tool once`);
    assert.deepEqual(recorder.routes(start), Array(2).fill('POST /v1/responses'));
    assert.equal(Boolean(recorder.calls[start].body.stream), stream, `ResponsesToolRunner (stream ${stream}) streams or not`);
    const outputs = recorder.calls[start + 1].body.input.filter((item) => item.type === 'function_call_output');
    assert.equal(outputs.length, 1);
    assert.equal(outputs[0].output, WEATHER_RESULT);
  }
});
