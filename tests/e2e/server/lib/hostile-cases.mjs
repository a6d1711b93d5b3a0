// The table of malformed and hostile requests for suites/hostile.test.mjs. Each row: a name, the
// request (method, path, body: object | string | Buffer, headers, auth: false to send no key), and
// what must come back: status plus the error body's type / code / param where they are meaningful,
// and strings the message must contain. The server runs with the API key KEY, --max-body-bytes
// MAX_BODY, and a mock model whose context is MOCK_CONTEXT tokens.

export const KEY = 'hostile-test-key-3f9a1c';
export const MAX_BODY = 65536;
export const MOCK_CONTEXT = 256;

const CHAT = '/v1/chat/completions';
const COMPLETIONS = '/v1/completions';
const EMBEDDINGS = '/v1/embeddings';
const OOV = 99999999;

const user = (content) => [{ role: 'user', content }];
const chat = (extra) => ({ model: 'mock', messages: user('hello'), max_tokens: 2, ...extra });
const completion = (extra) => ({ model: 'mock', prompt: 'hello', max_tokens: 2, ...extra });
const bad = (param) => ({ status: 400, type: 'invalid_request_error', param });
const unauthorized = { status: 401, type: 'authentication_error', code: 'invalid_api_key' };

function deepArray(depth) { return '['.repeat(depth) + ']'.repeat(depth); }
function deepObject(depth) { return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth); }

export const cases = [
  // The body as JSON.
  { name: 'truncated JSON', path: CHAT, body: '{"model": "mock", "messages": [{"role": "user", "con', expect: bad() },
  { name: 'empty body', path: CHAT, body: '', expect: bad() },
  { name: 'body is an array', path: CHAT, body: '[1, 2, 3]', expect: bad() },
  { name: 'body is a string', path: CHAT, body: '"hello"', expect: bad() },
  { name: 'body is null', path: CHAT, body: 'null', expect: bad() },
  { name: 'garbage after the object', path: CHAT, body: `${JSON.stringify(chat())} trailing`, expect: bad() },
  { name: 'NaN literal', path: CHAT, body: '{"model": "mock", "messages": [{"role": "user", "content": "x"}], "temperature": NaN}', expect: bad() },
  { name: '10,000-deep array nesting in a field', path: CHAT, body: `{"model": "mock", "messages": ${deepArray(10000)}}`, expect: bad() },
  { name: '10,000-deep object nesting as the body', path: CHAT, body: deepObject(10000), expect: bad() },
  { name: 'body over --max-body-bytes', path: CHAT, body: chat({ messages: user('x'.repeat(MAX_BODY + 1000)) }), expect: { status: 413 } },
  // model
  { name: 'model missing', path: CHAT, body: { messages: user('hi') }, expect: bad('model') },
  { name: 'model is a number', path: CHAT, body: chat({ model: 42 }), expect: bad('model') },
  { name: 'unknown model (chat)', path: CHAT, body: chat({ model: 'gpt-4o' }), expect: { status: 404, code: 'model_not_found', message: ['tiny-qwen2', 'mock'] } },
  { name: 'unknown model (completions)', path: COMPLETIONS, body: completion({ model: 'nope' }), expect: { status: 404, code: 'model_not_found', message: ['tiny-qwen2', 'mock'] } },
  { name: 'unknown model (embeddings)', path: EMBEDDINGS, body: { model: 'nope', input: 'x' }, expect: { status: 404, code: 'model_not_found' } },
  // messages
  { name: 'messages missing', path: CHAT, body: { model: 'mock' }, expect: bad('messages') },
  { name: 'messages is a string', path: CHAT, body: chat({ messages: 'hello' }), expect: bad('messages') },
  { name: 'messages empty', path: CHAT, body: chat({ messages: [] }), expect: bad('messages') },
  { name: 'a message is a number', path: CHAT, body: chat({ messages: [42] }), expect: bad() },
  { name: 'unknown role', path: CHAT, body: chat({ messages: [{ role: 'wizard', content: 'hi' }] }), expect: bad() },
  { name: 'role missing', path: CHAT, body: chat({ messages: [{ content: 'hi' }] }), expect: bad() },
  { name: 'content is a number', path: CHAT, body: chat({ messages: [{ role: 'user', content: 42 }] }), expect: bad() },
  { name: 'content part of an unsupported type', path: CHAT, body: chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://x/y.png' } }] }] }), expect: bad() },
  { name: 'text content part without a string', path: CHAT, body: chat({ messages: [{ role: 'user', content: [{ type: 'text', text: 7 }] }] }), expect: bad() },
  // Sampling and limits.
  { name: 'max_tokens negative', path: CHAT, body: chat({ max_tokens: -5 }), expect: bad('max_tokens') },
  { name: 'max_tokens huge (1e12)', path: CHAT, body: chat({ max_tokens: 1e12 }), expect: bad('max_tokens') },
  { name: 'max_tokens is a string', path: CHAT, body: chat({ max_tokens: '10' }), expect: bad('max_tokens') },
  { name: 'max_tokens is fractional', path: CHAT, body: chat({ max_tokens: 2.5 }), expect: bad('max_tokens') },
  { name: 'max_completion_tokens negative', path: CHAT, body: chat({ max_tokens: undefined, max_completion_tokens: -1 }), expect: bad('max_completion_tokens') },
  { name: 'n = 0', path: CHAT, body: chat({ n: 0 }), expect: bad('n') },
  { name: 'n huge (1,000,000)', path: CHAT, body: chat({ n: 1000000 }), expect: bad('n') },
  { name: 'temperature 3', path: CHAT, body: chat({ temperature: 3 }), expect: bad('temperature') },
  { name: 'temperature negative', path: CHAT, body: chat({ temperature: -1 }), expect: bad('temperature') },
  { name: 'temperature is a string', path: CHAT, body: chat({ temperature: 'hot' }), expect: bad('temperature') },
  { name: 'top_p 1.5', path: CHAT, body: chat({ top_p: 1.5 }), expect: bad('top_p') },
  { name: 'top_p negative', path: CHAT, body: chat({ top_p: -0.5 }), expect: bad('top_p') },
  { name: 'presence_penalty 5', path: CHAT, body: chat({ presence_penalty: 5 }), expect: bad('presence_penalty') },
  { name: 'stream is a string', path: CHAT, body: chat({ stream: 'yes' }), expect: bad('stream') },
  { name: 'stop is a number', path: CHAT, body: chat({ stop: 42 }), expect: bad('stop') },
  { name: 'logprobs is a string', path: CHAT, body: chat({ logprobs: 'yes' }), expect: bad('logprobs') },
  { name: 'top_logprobs 50', path: CHAT, body: chat({ logprobs: true, top_logprobs: 50 }), expect: bad('top_logprobs') },
  { name: 'seed is a string', path: CHAT, body: chat({ seed: 'abc' }), expect: bad('seed') },
  { name: 'logit_bias with a non-numeric key', path: CHAT, body: chat({ logit_bias: { abc: 1 } }), expect: bad('logit_bias') },
  { name: 'logit_bias with an out-of-vocabulary key', path: CHAT, body: chat({ logit_bias: { [OOV]: 1 } }), expect: bad('logit_bias') },
  { name: 'logit_bias with a negative key', path: CHAT, body: chat({ logit_bias: { '-3': 1 } }), expect: bad('logit_bias') },
  { name: 'logit_bias value 500', path: CHAT, body: chat({ logit_bias: { 100: 500 } }), expect: bad('logit_bias') },
  { name: 'logit_bias is an array', path: CHAT, body: chat({ logit_bias: [1, 2] }), expect: bad('logit_bias') },
  { name: 'tools is not an array', path: CHAT, body: chat({ tools: 'get_weather' }), expect: bad('tools') },
  // Completions prompts.
  { name: 'prompt is a number', path: COMPLETIONS, body: completion({ prompt: 42 }), expect: bad('prompt') },
  { name: 'prompt holds an out-of-vocabulary id', path: COMPLETIONS, body: completion({ prompt: [1, 2, OOV] }), expect: bad('prompt') },
  { name: 'prompt holds a negative id', path: COMPLETIONS, body: completion({ prompt: [-1] }), expect: bad('prompt') },
  { name: 'prompt holds a fractional id', path: COMPLETIONS, body: completion({ prompt: [1.5] }), expect: bad('prompt') },
  { name: 'prompt is an empty array', path: COMPLETIONS, body: completion({ prompt: [] }), expect: bad('prompt') },
  { name: 'prompt mixes a string and a list of ids', path: COMPLETIONS, body: completion({ prompt: ['a', [1, 2]] }), expect: bad('prompt') },
  {
    name: 'prompt ids longer than the context', path: COMPLETIONS,
    body: completion({ prompt: Array.from({ length: 300 }, (_, i) => 100 + i) }),
    expect: { status: 400, type: 'invalid_request_error', code: 'context_length_exceeded', message: ['300', String(MOCK_CONTEXT)] },
  },
  {
    name: 'chat messages longer than the context', path: CHAT,
    body: chat({ messages: user('lighthouse '.repeat(400)) }),
    expect: { status: 400, type: 'invalid_request_error', code: 'context_length_exceeded', message: [String(MOCK_CONTEXT)] },
  },
  // Embeddings.
  { name: 'embeddings input missing', path: EMBEDDINGS, body: { model: 'mock' }, expect: bad('input') },
  { name: 'embeddings input is a number', path: EMBEDDINGS, body: { model: 'mock', input: 42 }, expect: bad('input') },
  { name: 'embeddings input is empty', path: EMBEDDINGS, body: { model: 'mock', input: [] }, expect: bad('input') },
  { name: 'embeddings input holds an out-of-vocabulary id', path: EMBEDDINGS, body: { model: 'mock', input: [[5, OOV]] }, expect: bad('input') },
  { name: 'embeddings encoding_format "hex"', path: EMBEDDINGS, body: { model: 'mock', input: 'x', encoding_format: 'hex' }, expect: bad('encoding_format') },
  // tokenize / detokenize
  { name: 'detokenize an out-of-vocabulary id', path: '/detokenize', body: { model: 'mock', tokens: [5, OOV] }, expect: bad('tokens') },
  { name: 'detokenize a negative id', path: '/detokenize', body: { model: 'mock', tokens: [-5] }, expect: bad('tokens') },
  { name: 'detokenize a string', path: '/detokenize', body: { model: 'mock', tokens: 'abc' }, expect: bad('tokens') },
  { name: 'tokenize a number', path: '/tokenize', body: { model: 'mock', prompt: 42 }, expect: bad('prompt') },
  { name: 'tokenize with an unknown model', path: '/tokenize', body: { model: 'nope', prompt: 'x' }, expect: { status: 404, code: 'model_not_found' } },
  // API keys.
  { name: 'no API key', path: CHAT, body: chat(), auth: false, expect: unauthorized },
  { name: 'wrong Bearer key', path: CHAT, body: chat(), auth: false, headers: { authorization: 'Bearer wrong-key' }, expect: unauthorized },
  { name: 'wrong x-api-key', path: CHAT, body: chat(), auth: false, headers: { 'x-api-key': 'wrong-key' }, expect: unauthorized },
  { name: 'Bearer with a prefix of the key', path: CHAT, body: chat(), auth: false, headers: { authorization: `Bearer ${KEY.slice(0, -1)}` }, expect: unauthorized },
  { name: 'Bearer with the key plus a character', path: CHAT, body: chat(), auth: false, headers: { authorization: `Bearer ${KEY}x` }, expect: unauthorized },
  { name: 'the key under the Basic scheme', path: CHAT, body: chat(), auth: false, headers: { authorization: `Basic ${KEY}` }, expect: unauthorized },
  { name: '/metrics without a key', method: 'GET', path: '/metrics', auth: false, expect: unauthorized },
  { name: '/tokenize without a key', path: '/tokenize', body: { model: 'mock', prompt: 'x' }, auth: false, expect: unauthorized },
  { name: '/v1/models is public', method: 'GET', path: '/v1/models', auth: false, expect: { status: 200 } },
  { name: 'the right x-api-key is accepted', path: '/tokenize', body: { model: 'mock', prompt: 'x' }, auth: false, headers: { 'x-api-key': KEY }, expect: { status: 200 } },
  // Methods and routes.
  { name: 'GET on /v1/chat/completions', method: 'GET', path: CHAT, expect: { status: 405 } },
  { name: 'DELETE on /v1/models', method: 'DELETE', path: '/v1/models', expect: { status: 405 } },
  { name: 'PUT on /tokenize', method: 'PUT', path: '/tokenize', body: { model: 'mock', prompt: 'x' }, expect: { status: 405 } },
  { name: 'unknown route under /v1', path: '/v1/unknown', body: {}, expect: { status: 404, code: 'not_found' } },
  { name: 'unknown model id in /v1/models/{id}', method: 'GET', path: '/v1/models/nope', expect: { status: 404, code: 'model_not_found' } },
];

// Cases that need a raw socket: {name, run(server) -> {status, json, closed, elapsedMs}, expect}.
// Built in the suite (they need the server's port); listed here for the count.
export const rawCaseNames = [
  'invalid UTF-8 bytes inside a JSON string (raw socket)',
  'overlong UTF-8 encoding of "/" (raw socket)',
  'malformed request line',
  'bad chunk size in a chunked body',
  'a 100 KB header line',
  'chunked body over --max-body-bytes (no Content-Length)',
  'slow headers: the header deadline closes the connection',
  'slow body: the body deadline closes the connection',
  'a chunk-size line that never ends is cut at the read limit, not buffered',
  'a 100 KB pipelined request behind a non-streamed one: both answered in order',
  'an HTTP/1.0 stream is sent unframed and ends with the connection',
  'HEAD, then garbage: the 400 keeps its body',
  'an error quoting a model name cut mid-character is valid UTF-8',
  'Transfer-Encoding: gzip is refused, its body never read as a second request',
  'Transfer-Encoding: chunked beside Content-Length is refused',
  'no key and Expect: 100-continue: 401 from the head, no 100 Continue, no body read',
];
