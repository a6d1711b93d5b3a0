// Suite: the Responses API (POST /v1/responses) through the official openai npm client and raw HTTP,
// against the tiny Qwen2 and the scripted mock model. Every response object and every stream event
// validates against OpenAI's own schemas (tests/data/openai/openapi.yaml, with Ajv); output_text
// equals the chat completion's content for the same greedy request; streamed deltas make the final
// text, with the events in the documented order; usage equals /tokenize's counts; text.format
// json_schema is enforced; a tool round trip (function_call item, then function_call_output) on
// scripted mock replies; forced tool calls; refused fields name themselves; a client that leaves a
// stream frees its request.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Ajv2020 from 'ajv/dist/2020.js';
import { createParser } from 'eventsource-parser';
import {
  errorShapeProblems, metrics, offlineTokenize, postJson, request, slow, startFixture, tokenize, waitForMetrics,
} from '../lib/harness.mjs';
import { openapiProblems } from '../lib/openapi.mjs';
import { streamRequest } from '../lib/sse.mjs';

const TINY = 'tiny-qwen2';
const TOOL_CALL_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const QUESTION = 'What is the weather like in Paris today, please?';
const TOOL_RESULT = 'Sunny with a light breeze, twenty-one degrees Celsius.';
const FINAL_ANSWER = 'It is sunny in Paris and 21 degrees.';
const TWO_CALLS_QUESTION = 'Compare the weather in Paris and in Rome, please.';
const TWO_CALLS_TEXT = `${TOOL_CALL_TEXT}\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>`;
const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 16 } }, required: ['city'], additionalProperties: false },
};
const ADD = {
  type: 'function',
  name: 'add',
  parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'], additionalProperties: false },
};
const RECORD = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    member: { type: 'boolean' },
  },
  required: ['name', 'age', 'member'],
  additionalProperties: false,
};

const ajv = new Ajv2020({ strict: false, allErrors: true });
let fx;
let client;

before(async () => {
  fx = await startFixture('responses', {
    // The openai suite's script: the question is answered by a get_weather call, the tool's result
    // by the final answer (matched first: the follow-up prompt holds both).
    mock: async (tinyDir) => {
      const [call, question, result, final, twoQuestion, twoCalls] = await Promise.all(
        [TOOL_CALL_TEXT, QUESTION, TOOL_RESULT, FINAL_ANSWER, TWO_CALLS_QUESTION, TWO_CALLS_TEXT].map((text) => offlineTokenize(tinyDir, text)));
      return {
        replies: [
          { when_prompt_contains: result.slice(1, -1), ids: final },
          { when_prompt_contains: question.slice(1, -1), ids: call },
          { when_prompt_contains: twoQuestion.slice(1, -1), ids: twoCalls },
        ],
      };
    },
    extraMocks: { slow: { mock: { delay_ms_per_step: 20 } } },
  });
  client = fx.server.client();
});

after(async () => { await fx?.close(); });

function assertValid(schema, value, what) {
  const problems = openapiProblems(schema, value);
  assert.deepEqual(problems, [], `${what} does not validate against ${schema}: ${JSON.stringify(value).slice(0, 600)}`);
}

// The text of a response's message items (what the SDK's output_text is).
function outputText(response) {
  return response.output.filter((item) => item.type === 'message')
    .flatMap((item) => item.content).filter((part) => part.type === 'output_text').map((part) => part.text).join('');
}

// The documented order: response.created, response.in_progress, then each item from
// output_item.added to output_item.done (one at a time, indices 0, 1, ...), a message's
// content_part.added, output_text.delta..., output_text.done, content_part.done, a call's
// function_call_arguments.delta... and .done; last response.completed or response.incomplete. The
// done events repeat exactly what the deltas made; the terminal response holds exactly the items.
// Every event validates against ResponseStreamEvent and carries sequence_number = its position.
function checkEvents(events) {
  events.forEach((event, i) => {
    assertValid('ResponseStreamEvent', event, `event ${i} (${event.type})`);
    assert.equal(event.sequence_number, i, `event ${i} (${event.type}) has sequence_number ${event.sequence_number}`);
  });
  assert.equal(events[0]?.type, 'response.created');
  assert.equal(events[1]?.type, 'response.in_progress');
  assert.equal(events[0].response.status, 'in_progress');
  assert.deepEqual(events[0].response.output, []);
  const terminal = events[events.length - 1];
  assert.ok(['response.completed', 'response.incomplete'].includes(terminal.type), `last event ${terminal.type}`);
  const items = [];
  let open = null;
  for (const event of events.slice(2, -1)) {
    const where = `${event.type} (sequence ${event.sequence_number})`;
    if (event.type === 'response.output_item.added') {
      assert.equal(open, null, `${where}: an item is still open`);
      assert.equal(event.output_index, items.length, where);
      assert.equal(event.item.status, 'in_progress', where);
      open = { item: event.item, text: '', args: '', part: false, textDone: false, partDone: false, argsDone: false };
      continue;
    }
    assert.ok(open, `${where}: no item is open`);
    assert.equal(event.output_index, items.length, where);
    if (event.type !== 'response.output_item.done') assert.equal(event.item_id, open.item.id, where);
    switch (event.type) {
      case 'response.content_part.added':
        assert.ok(open.item.type === 'message' && !open.part, where);
        assert.equal(event.content_index, 0, where);
        open.part = true;
        break;
      case 'response.output_text.delta':
        assert.ok(open.part && !open.textDone, where);
        open.text += event.delta;
        break;
      case 'response.output_text.done':
        assert.ok(open.part && !open.textDone, where);
        assert.equal(event.text, open.text, `${where}: the done text is not the deltas'`);
        open.textDone = true;
        break;
      case 'response.content_part.done':
        assert.ok(open.textDone && !open.partDone, where);
        assert.equal(event.part.text, open.text, where);
        open.partDone = true;
        break;
      case 'response.function_call_arguments.delta':
        assert.ok(open.item.type === 'function_call' && !open.argsDone, where);
        open.args += event.delta;
        break;
      case 'response.function_call_arguments.done':
        assert.ok(open.item.type === 'function_call' && !open.argsDone, where);
        assert.equal(event.arguments, open.args, where);
        assert.equal(event.name, open.item.name, where);
        open.argsDone = true;
        break;
      case 'response.output_item.done':
        assert.equal(event.item.id, open.item.id, where);
        if (open.item.type === 'message') {
          assert.ok(open.partDone, `${where}: the message's part is not done`);
          assert.equal(event.item.content[0].text, open.text, where);
        } else {
          assert.ok(open.argsDone, `${where}: the call's arguments are not done`);
          assert.equal(event.item.arguments, open.args, where);
        }
        items.push(event.item);
        open = null;
        break;
      default:
        assert.fail(`unexpected event ${where}`);
    }
  }
  assert.equal(open, null, 'an item is still open at the end');
  assert.deepEqual(terminal.response.output, items, 'the final response holds exactly the items streamed');
  return { response: terminal.response, items, text: outputText(terminal.response) };
}

async function streamEvents(params) {
  const stream = await client.responses.create({ ...params, stream: true });
  const events = [];
  for await (const event of stream) events.push(event);
  return events;
}

// Raw bytes: every event is "event: TYPE\ndata: JSON\n\n" with TYPE = the JSON's type, the stream
// is valid UTF-8 and eventsource-parser reports no error; no "data: [DONE]" (the Responses API has
// none). Returns the parsed events.
function rawEvents(bytes) {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  const events = [];
  const parser = createParser({
    onEvent: (e) => {
      assert.notEqual(e.data, '[DONE]');
      const data = JSON.parse(e.data);
      assert.equal(e.event, data.type, 'the event: line names the data\'s type');
      events.push(data);
    },
    onError: (error) => assert.fail(`eventsource-parser: ${error.type}: ${error.message}`),
  });
  parser.feed(text);
  assert.ok(text.endsWith('\n\n'));
  for (const block of text.split('\n\n').filter((b) => b && !b.startsWith(':'))) {
    assert.match(block, /^event: [a-z_.]+\ndata: [^\n]+$/, `an event block: ${JSON.stringify(block.slice(0, 200))}`);
  }
  return events;
}

const GREEDY = {
  model: TINY,
  instructions: 'You are terse.',
  input: 'Name three colours of the sea at dawn.',
  temperature: 0,
  max_output_tokens: 24,
};
const GREEDY_MESSAGES = [{ role: 'system', content: GREEDY.instructions }, { role: 'user', content: GREEDY.input }];

test('greedy text: output_text equals the chat completion; the object validates; usage equals /tokenize', async () => {
  const raw = await postJson(fx.server, '/v1/responses', GREEDY);
  assert.equal(raw.status, 200, raw.text);
  assertValid('Response', raw.json, 'the response');
  const r = raw.json;
  const chat = await client.chat.completions.create({ model: TINY, messages: GREEDY_MESSAGES, temperature: 0, max_tokens: 24 });
  const content = chat.choices[0].message.content;
  assert.ok(content.length > 0);
  assert.equal(outputText(r), content);
  assert.match(r.id, /^resp_[0-9a-f]+$/);
  assert.equal(r.object, 'response');
  assert.equal(r.model, TINY);
  assert.ok(Math.abs(r.created_at - Date.now() / 1000) < 300, `created_at ${r.created_at}`);
  assert.equal(r.instructions, GREEDY.instructions);
  assert.equal(r.temperature, 0);
  assert.equal(r.max_output_tokens, 24);
  assert.equal(r.store, false);
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].role, 'assistant');
  assert.match(r.output[0].id, /^msg_/);
  if (chat.choices[0].finish_reason === 'length') {
    assert.equal(r.status, 'incomplete');
    assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(r.output[0].status, 'incomplete');
  } else {
    assert.equal(r.status, 'completed');
    assert.equal(r.incomplete_details, null);
  }
  // usage: the prompt as /tokenize renders the same messages, the output as the chat counted it.
  const prompt = await tokenize(fx.server, TINY, { messages: GREEDY_MESSAGES });
  assert.equal(r.usage.input_tokens, prompt.length);
  assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(r.usage.output_tokens, chat.usage.completion_tokens);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(r.usage.output_tokens_details.reasoning_tokens, 0);

  // The SDK's object (output_text is its convenience) and the same turn as input items.
  const viaClient = await client.responses.create(GREEDY);
  assert.equal(viaClient.output_text, content);
  const items = await client.responses.create({
    ...GREEDY,
    instructions: undefined,
    input: [
      { role: 'developer', content: [{ type: 'input_text', text: GREEDY.instructions }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Name three colours ' }, { type: 'input_text', text: 'of the sea at dawn.' }] },
    ],
  });
  assert.equal(items.output_text, content);
});

test('mock: the scripted answer to the tool result equals the chat completion; output_tokens counts it and EOS', async () => {
  const messages = [{ role: 'user', content: TOOL_RESULT }];
  const r = await client.responses.create({ model: 'mock', input: messages, temperature: 0 });
  assert.equal(r.status, 'completed');
  assert.equal(r.output_text, FINAL_ANSWER);
  const chat = await client.chat.completions.create({ model: 'mock', messages, temperature: 0 });
  assert.equal(chat.choices[0].message.content, FINAL_ANSWER);
  const answerIds = await offlineTokenize(fx.tiny, FINAL_ANSWER);
  assert.equal(r.usage.output_tokens, answerIds.length + 1, 'the answer\'s tokens and the EOS that ended it');
  assert.equal(r.usage.input_tokens, (await tokenize(fx.server, 'mock', { messages })).length);
});

test('streaming: every event validates, in order; deltas make the final text, equal to the non-streamed one', async () => {
  const events = await streamEvents(GREEDY);
  const streamed = checkEvents(events);
  const whole = await client.responses.create(GREEDY);
  assert.equal(streamed.text, whole.output_text);
  assert.ok(streamed.text.length > 0);
  assert.equal(streamed.response.status, whole.status);
  assert.deepEqual(streamed.response.usage, whole.usage);
  assert.equal(events[events.length - 1].type, whole.status === 'completed' ? 'response.completed' : 'response.incomplete');
  assertValid('Response', streamed.response, 'the terminal event\'s response');

  // The same stream as raw bytes, and through the SDK's stream helper.
  const raw = await streamRequest(fx.server, '/v1/responses', { ...GREEDY, stream: true });
  assert.equal(raw.status, 200);
  assert.match(raw.headers['content-type'], /^text\/event-stream/);
  assert.equal(checkEvents(rawEvents(raw.bytes)).text, whole.output_text);
  const helper = client.responses.stream(GREEDY);
  const final = await helper.finalResponse();
  assert.equal(final.output_text, whole.output_text);
});

test('max_output_tokens cuts the output: status incomplete, reason max_output_tokens, the limit in usage', async () => {
  const params = { model: 'mock', input: 'Tell me a long story about a lighthouse.', temperature: 0, max_output_tokens: 5 };
  const r = await postJson(fx.server, '/v1/responses', params);
  assert.equal(r.status, 200, r.text);
  assertValid('Response', r.json, 'an incomplete response');
  assert.equal(r.json.status, 'incomplete');
  assert.deepEqual(r.json.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.json.usage.output_tokens, 5);
  assert.equal(r.json.completed_at, null);
  const events = await streamEvents(params);
  const streamed = checkEvents(events);
  assert.equal(events[events.length - 1].type, 'response.incomplete');
  assert.equal(streamed.response.usage.output_tokens, 5);
  assert.equal(streamed.text, outputText(r.json));
});

test('usage: cached_tokens come from the prefix cache when a conversation is sent again', async () => {
  const instructions = 'You keep the lighthouse of Saint-Malo. Answer with care and cite the logbook. '.repeat(8);
  const first = await client.responses.create({ model: TINY, instructions, input: 'When was the lamp cleaned?', temperature: 0, max_output_tokens: 4 });
  assert.equal(first.usage.input_tokens_details.cached_tokens, 0, 'new instructions are not cached');
  const second = await client.responses.create({
    model: TINY, instructions, temperature: 0, max_output_tokens: 4,
    input: [{ role: 'user', content: 'When was the lamp cleaned?' }, ...first.output, { role: 'user', content: 'And the lens?' }],
  });
  const cached = second.usage.input_tokens_details.cached_tokens;
  assert.ok(cached > 0 && cached < second.usage.input_tokens, `cached_tokens ${cached} of ${second.usage.input_tokens}`);
  assert.ok(cached >= first.usage.input_tokens - 32, `cached ${cached} covers the first prompt (${first.usage.input_tokens}) but its last blocks`);
});

test('text.format json_schema is enforced: outputs validate (ajv) and equal chat\'s response_format at temperature 0', async () => {
  const validate = ajv.compile(RECORD);
  const format = { type: 'json_schema', name: 'record', schema: RECORD, strict: true };
  const input = 'Reply with the record as JSON.';
  const greedy = await postJson(fx.server, '/v1/responses', { model: TINY, input, temperature: 0, max_output_tokens: 200, text: { format } });
  assert.equal(greedy.status, 200, greedy.text);
  assertValid('Response', greedy.json, 'a json_schema response');
  assert.deepEqual(greedy.json.text.format, format);
  assert.equal(greedy.json.status, 'completed');
  const text = outputText(greedy.json);
  assert.ok(validate(JSON.parse(text)), `${JSON.stringify(validate.errors)} for ${text}`);
  const chat = await client.chat.completions.create({
    model: TINY, messages: [{ role: 'user', content: input }], temperature: 0, max_tokens: 200,
    response_format: { type: 'json_schema', json_schema: { name: 'record', schema: RECORD, strict: true } },
  });
  assert.equal(text, chat.choices[0].message.content);
  let completed = 0;
  for (let i = 0; i < 4; i += 1) {
    const r = await client.responses.create({ model: TINY, input, temperature: 1, max_output_tokens: 200, text: { format } });
    if (r.status !== 'completed') continue;
    completed += 1;
    assert.ok(validate(JSON.parse(r.output_text)), `${JSON.stringify(validate.errors)} for ${r.output_text}`);
  }
  assert.ok(completed >= 2, `only ${completed} of 4 sampled records completed`);
  const object = await client.responses.create({ model: TINY, input, temperature: 1, max_output_tokens: 200, text: { format: { type: 'json_object' } } });
  if (object.status === 'completed') {
    const value = JSON.parse(object.output_text);
    assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value));
  }
});

test('tool round trip (mock script): a function_call item, then function_call_output answered; streamed too', async () => {
  const first = await postJson(fx.server, '/v1/responses', { model: 'mock', input: QUESTION, tools: [WEATHER], temperature: 0 });
  assert.equal(first.status, 200, first.text);
  assertValid('Response', first.json, 'a function_call response');
  const r = first.json;
  assert.equal(r.status, 'completed');
  assert.equal(r.output.length, 1, JSON.stringify(r.output));
  const call = r.output[0];
  assert.equal(call.type, 'function_call');
  assert.equal(call.status, 'completed');
  assert.equal(call.name, 'get_weather');
  assert.match(call.call_id, /^call_/);
  assert.match(call.id, /^fc_/);
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
  assert.deepEqual(r.tools, [{ ...WEATHER, strict: true }]);
  assert.equal(r.tool_choice, 'auto');
  assert.equal(r.parallel_tool_calls, true);

  const streamed = checkEvents(await streamEvents({ model: 'mock', input: QUESTION, tools: [WEATHER], temperature: 0 }));
  assert.equal(streamed.items.length, 1);
  assert.equal(streamed.items[0].type, 'function_call');
  assert.deepEqual(JSON.parse(streamed.items[0].arguments), { city: 'Paris' });

  // The SDK's way: the previous output items, then the tool's output.
  const input = [{ role: 'user', content: QUESTION }, ...r.output,
    { type: 'function_call_output', call_id: call.call_id, output: TOOL_RESULT }];
  const second = await client.responses.create({ model: 'mock', input, tools: [WEATHER], temperature: 0 });
  assert.equal(second.status, 'completed');
  assert.equal(second.output_text, FINAL_ANSWER);
  assert.ok(second.output.every((item) => item.type === 'message'));
  // The prompt is the chat turn with the same call and result.
  const chatMessages = [{ role: 'user', content: QUESTION },
    { role: 'assistant', content: null, tool_calls: [{ id: call.call_id, type: 'function', function: { name: call.name, arguments: call.arguments } }] },
    { role: 'tool', tool_call_id: call.call_id, content: TOOL_RESULT }];
  const chatTools = [{ type: 'function', function: { name: WEATHER.name, description: WEATHER.description, parameters: WEATHER.parameters, strict: true } }];
  const prompt = await tokenize(fx.server, 'mock', { messages: chatMessages, tools: chatTools });
  assert.equal(second.usage.input_tokens, prompt.length);
  const secondStreamed = checkEvents(await streamEvents({ model: 'mock', input, tools: [WEATHER], temperature: 0 }));
  assert.equal(secondStreamed.text, FINAL_ANSWER);
});

test('parallel_tool_calls false: the model\'s choice ends after its first call (mock script with two calls)', async () => {
  const params = { model: 'mock', input: TWO_CALLS_QUESTION, tools: [WEATHER], temperature: 0 };
  const both = await client.responses.create(params);
  assert.deepEqual(both.output.map((item) => JSON.parse(item.arguments).city), ['Paris', 'Rome']);
  const one = await postJson(fx.server, '/v1/responses', { ...params, parallel_tool_calls: false });
  assert.equal(one.status, 200, one.text);
  assertValid('Response', one.json, 'a one-call response');
  assert.equal(one.json.status, 'completed');
  assert.equal(one.json.parallel_tool_calls, false);
  assert.deepEqual(one.json.output.map((item) => [item.type, JSON.parse(item.arguments).city]), [['function_call', 'Paris']]);
  const streamed = checkEvents(await streamEvents({ ...params, parallel_tool_calls: false }));
  assert.deepEqual(streamed.items.map((item) => item.name), ['get_weather']);
  // The same on chat completions, which shares the machinery.
  const chat = await client.chat.completions.create({
    model: 'mock', messages: [{ role: 'user', content: TWO_CALLS_QUESTION }], temperature: 0, parallel_tool_calls: false,
    tools: [{ type: 'function', function: { name: WEATHER.name, parameters: WEATHER.parameters } }],
  });
  assert.equal(chat.choices[0].finish_reason, 'tool_calls');
  assert.deepEqual(chat.choices[0].message.tool_calls.map((c) => JSON.parse(c.function.arguments).city), ['Paris']);
});

test('forced tool calls on the tiny Qwen2: named and "required" calls validate; parallel_tool_calls false gives one', async () => {
  const validators = { get_weather: ajv.compile(WEATHER.parameters), add: ajv.compile(ADD.parameters) };
  const cases = [
    { tool_choice: { type: 'function', name: 'get_weather' }, exactlyOne: true, only: 'get_weather' },
    { tool_choice: 'required', exactlyOne: false },
    { tool_choice: 'required', parallel_tool_calls: false, exactlyOne: true },
  ];
  let completed = 0;
  for (const c of cases) {
    for (let i = 0; i < 2; i += 1) {
      const params = { model: TINY, input: 'Do something useful.', tools: [WEATHER, ADD], temperature: 1, max_output_tokens: 300, ...c };
      delete params.exactlyOne;
      delete params.only;
      const raw = await postJson(fx.server, '/v1/responses', params);
      assert.equal(raw.status, 200, raw.text);
      assertValid('Response', raw.json, 'a forced-call response');
      if (raw.json.status !== 'completed') continue;
      completed += 1;
      const items = raw.json.output;
      assert.ok(items.length >= 1 && items.every((item) => item.type === 'function_call'), JSON.stringify(items));
      if (c.exactlyOne) assert.equal(items.length, 1, JSON.stringify(items));
      for (const item of items) {
        if (c.only) assert.equal(item.name, c.only);
        const validate = validators[item.name];
        assert.ok(validate, `unknown tool ${item.name}`);
        assert.ok(validate(JSON.parse(item.arguments)), `${JSON.stringify(validate.errors)} for ${item.arguments}`);
      }
      assert.deepEqual(raw.json.tool_choice, c.tool_choice);
      assert.equal(raw.json.parallel_tool_calls, c.parallel_tool_calls ?? true);
    }
  }
  assert.ok(completed >= 3, `only ${completed} of 6 forced calls completed`);
});

const REFUSED = [
  [{ previous_response_id: 'resp_123' }, 'previous_response_id'],
  [{ conversation: 'conv_123' }, 'conversation'],
  [{ background: true }, 'background'],
  [{ include: ['message.output_text.logprobs'] }, 'include'],
  [{ reasoning: { effort: 'high' } }, 'reasoning.effort'],
  [{ truncation: 'auto' }, 'truncation'],
  [{ prompt: { id: 'pmpt_1' } }, 'prompt'],
  [{ tools: [{ type: 'web_search' }] }, 'tools'],
  [{ tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] }, 'tools'],
  [{ tool_choice: { type: 'web_search_preview' } }, 'tool_choice'],
  // A schema keyword the grammar cannot enforce is named by the grammar compiler, as on chat.
  [{ text: { format: { type: 'json_schema', name: 'x', schema: { type: 'array', uniqueItems: true } } } }, null, 'uniqueItems'],
  [{ text: { format: { type: 'json_schema', schema: { type: 'object' } } } }, 'text.format.name'],
  [{ text: { format: { type: 'yaml' } } }, 'text.format'],
  [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] }, 'input'],
  [{ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] }, 'input'],
  [{ input: [{ type: 'reasoning', summary: [] }] }, 'input'],
  [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input'],
  [{ stream_options: { include_obfuscation: true } }, 'stream_options.include_obfuscation'],
  [{ max_output_tokens: 0 }, 'max_output_tokens'],
  [{ temperature: 5 }, 'temperature'],
  [{ seed: 3 }, 'seed'],
  [{ messages: [{ role: 'user', content: 'hi' }] }, 'messages'],
];

test('refused fields: 400 whose message names the field; the server keeps serving', async () => {
  for (const [fields, param, needle = param] of REFUSED) {
    const body = { model: TINY, input: 'hi', ...fields };
    const res = await postJson(fx.server, '/v1/responses', body);
    const what = JSON.stringify(fields);
    assert.equal(res.status, 400, `${what}: ${res.text}`);
    const expected = param === null ? { type: 'invalid_request_error' } : { type: 'invalid_request_error', param };
    assert.deepEqual(errorShapeProblems(res.json, expected), [], `${what}: ${res.text}`);
    assert.ok(res.json.error.message.includes(needle), `${what}: the message names ${needle}: ${res.json.error.message}`);
  }
  // The SDK sees the same 400 as an APIError.
  await assert.rejects(client.responses.create({ model: TINY, input: 'hi', previous_response_id: 'resp_1' }),
    (error) => error.status === 400 && /previous_response_id/.test(error.message));
  // Accepted without effect: store, metadata, user, safety_identifier, prompt_cache_key, service_tier.
  const accepted = await client.responses.create({
    model: 'mock', input: 'hi', max_output_tokens: 2, store: true, metadata: { team: 'a' }, user: 'u',
    safety_identifier: 'sid', prompt_cache_key: 'k', service_tier: 'auto', include: [], reasoning: { effort: 'none' },
  });
  assert.equal(accepted.status, 'incomplete');
  assert.equal(accepted.store, false);
  assert.deepEqual(accepted.metadata, { team: 'a' });
  const health = await request(fx.server, { path: '/health' });
  assert.equal(health.status, 200);
  fx.server.assertAlive();
});

test('a client that leaves a Responses stream frees its request within a bounded poll', async () => {
  const labels = { model: 'slow' };
  const stream = await client.responses.create({ model: 'slow', input: 'Tell me everything.', max_output_tokens: 900, stream: true });
  let deltas = 0;
  for await (const event of stream) {
    if (event.type === 'response.output_text.delta') deltas += 1;
    if (deltas === 3) break;  // the SDK aborts the request
  }
  assert.equal(deltas, 3);
  await waitForMetrics(fx.server, (m) => m.get('llaisys_requests_running', labels) === 0 && m.get('llaisys_requests_waiting', labels) === 0,
    { timeoutMs: 2000 * slow, what: 'the abandoned stream freed' });
  const m = await metrics(fx.server);
  assert.ok(m.get('llaisys_requests_total', { model: 'slow', status: '499' }) >= 1, 'counted as 499');
  const after = await client.responses.create({ model: 'slow', input: 'Short.', max_output_tokens: 3 });
  assert.equal(after.usage.output_tokens, 3);
});
