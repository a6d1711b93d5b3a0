// Suite: structured output through the official openai npm client against the tiny Qwen2 (random
// weights, temperature 1): response_format json_schema / json_object, forced tool calls (named and
// "required") whose arguments validate with ajv, vLLM's guided_* fields on completions, streaming
// equal to non-streaming, refusals that name the keyword, and the mask-time metric.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { metrics, postJson, startFixture } from '../lib/harness.mjs';

const MODEL = 'tiny-qwen2';
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv, { mode: 'full' });

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 20 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    email: { type: 'string', format: 'email' },
    tags: { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c'] }, maxItems: 3 },
    address: {
      type: ['object', 'null'],
      properties: { city: { type: 'string', maxLength: 12 }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
  required: ['name', 'age', 'tags'],
  additionalProperties: false,
};
const TREE = {
  $defs: { node: { type: 'object', properties: { v: { type: 'integer' }, kids: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 } }, required: ['v'], additionalProperties: false } },
  $ref: '#/$defs/node',
};
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The current weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 16 }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'add',
      parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'], additionalProperties: false },
    },
  },
];

let fx;
let client;

before(async () => {
  fx = await startFixture('structured');
  client = fx.server.client();
});

after(async () => { await fx?.close(); });

const messages = [{ role: 'user', content: 'Reply with the record as JSON.' }];

function checkJson(text, finish, schema, what) {
  if (finish === 'length') return false;
  assert.equal(finish, 'stop', `${what}: finish_reason ${finish}`);
  let value;
  assert.doesNotThrow(() => { value = JSON.parse(text); }, `${what}: not JSON: ${text}`);
  const validate = ajv.compile(schema);
  assert.ok(validate(value), `${what}: ${JSON.stringify(validate.errors)} for ${text}`);
  return true;
}

test('response_format json_schema: every stopped completion validates (8 seeds, 2 schemas)', async () => {
  let stops = 0;
  for (const [name, schema] of [['person', PERSON], ['tree', TREE]]) {
    for (let seed = 0; seed < 8; seed += 1) {
      const r = await client.chat.completions.create({
        model: MODEL, messages, temperature: 1, seed, max_tokens: 400,
        response_format: { type: 'json_schema', json_schema: { name, schema, strict: true } },
      });
      const c = r.choices[0];
      if (checkJson(c.message.content, c.finish_reason, schema, `${name} seed ${seed}`)) stops += 1;
    }
  }
  assert.ok(stops >= 8, `only ${stops} of 16 completions finished`);
});

test('json_object: the output is a JSON object; streaming gives the same text as not streaming', async () => {
  const params = { model: MODEL, messages, temperature: 1, seed: 3, max_tokens: 200, response_format: { type: 'json_object' } };
  const r = await client.chat.completions.create(params);
  const stream = await client.chat.completions.create({ ...params, stream: true });
  let text = '';
  let finish;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, r.choices[0].message.content);
  assert.equal(finish, r.choices[0].finish_reason);
  if (finish === 'stop') {
    const value = JSON.parse(text);
    assert.equal(typeof value, 'object');
    assert.ok(value !== null && !Array.isArray(value));
  }
});

test('tool_choice names a function: one call of it, arguments valid, finish_reason tool_calls', async () => {
  for (let seed = 0; seed < 6; seed += 1) {
    const r = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: TOOLS, seed, temperature: 1,
      max_tokens: 300, tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const c = r.choices[0];
    if (c.finish_reason === 'length') continue;
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.equal(c.message.tool_calls.length, 1);
    const call = c.message.tool_calls[0];
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    const args = JSON.parse(call.function.arguments);
    const validate = ajv.compile(TOOLS[0].function.parameters);
    assert.ok(validate(args), `${JSON.stringify(validate.errors)} for ${call.function.arguments}`);
  }
});

test('tool_choice "required": one or more calls of the given tools, each valid', async () => {
  let calls = 0;
  for (let seed = 0; seed < 6; seed += 1) {
    const r = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Do something.' }], tools: TOOLS, seed, temperature: 1,
      max_tokens: 300, tool_choice: 'required',
    });
    const c = r.choices[0];
    if (c.finish_reason === 'length') continue;
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.ok(c.message.tool_calls.length >= 1);
    for (const call of c.message.tool_calls) {
      const tool = TOOLS.find((t) => t.function.name === call.function.name);
      assert.ok(tool, `unknown tool ${call.function.name}`);
      const validate = ajv.compile(tool.function.parameters);
      assert.ok(validate(JSON.parse(call.function.arguments)), JSON.stringify(validate.errors));
      calls += 1;
    }
  }
  assert.ok(calls >= 3, `only ${calls} calls`);
});

test('completions with guided_choice, guided_regex and guided_grammar', async () => {
  for (let seed = 0; seed < 4; seed += 1) {
    const choice = await postJson(fx.server, '/v1/completions', {
      model: MODEL, prompt: 'Answer:', guided_choice: ['yes', 'no', 'it depends'], temperature: 1, seed, max_tokens: 20,
    });
    assert.equal(choice.status, 200, choice.text);
    assert.ok(['yes', 'no', 'it depends'].includes(choice.json.choices[0].text), choice.text);
    assert.equal(choice.json.choices[0].finish_reason, 'stop');
    const regex = await postJson(fx.server, '/v1/completions', {
      model: MODEL, prompt: 'Date:', guided_regex: '\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])', temperature: 1, seed, max_tokens: 30,
    });
    assert.equal(regex.status, 200, regex.text);
    assert.match(regex.json.choices[0].text, /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/u);
    const gbnf = await postJson(fx.server, '/v1/completions', {
      model: MODEL, prompt: 'List:', guided_grammar: 'root ::= "[" num ("," num){0,3} "]"\nnum ::= [1-9] [0-9]{0,2}\n',
      temperature: 1, seed, max_tokens: 40,
    });
    assert.equal(gbnf.status, 200, gbnf.text);
    assert.match(gbnf.json.choices[0].text, /^\[[1-9]\d{0,2}(,[1-9]\d{0,2}){0,3}\]$/);
  }
  const m = await metrics(fx.server);
  assert.ok(m.get('llaisys_structured_output_mask_seconds_total', { model: MODEL }) > 0);
});

test('refusals name what is not supported; the server keeps serving', async () => {
  const cases = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', uniqueItems: true } } } }, 'uniqueItems'],
    [{ guided_json: { type: 'object', patternProperties: { '^a': {} } } }, 'patternProperties'],
    [{ guided_regex: '(a)\\1' }, 'backreference'],
    [{ guided_grammar: 'root ::= missing\n' }, 'missing'],
    [{ guided_json: { $ref: '#' } }, 'never reaches a schema'],
    [{ guided_json: { $defs: { a: { type: 'object', properties: { x: { $ref: '#/$defs/a' } }, required: ['x'] } }, $ref: '#/$defs/a' } }, 'no finite text'],
    [{ response_format: { type: 'yaml' } }, 'yaml'],
    [{ guided_whitespace_pattern: ' *', guided_json: {} }, 'guided_whitespace_pattern'],
    [{ guided_choice: ['a'], guided_regex: 'a' }, 'give one'],
    [{ tool_choice: 'required' }, 'no \'tools\''],
    [{ tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'nope'],
  ];
  for (const [fields, needle] of cases) {
    const res = await postJson(fx.server, '/v1/chat/completions', { model: MODEL, messages, max_tokens: 5, ...fields });
    assert.equal(res.status, 400, `${JSON.stringify(fields)}: ${res.text}`);
    assert.ok(res.json.error.message.includes(needle), `${JSON.stringify(fields)}: ${res.json.error.message}`);
  }
  const ok = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 3 });
  assert.equal(ok.choices.length, 1);
});
