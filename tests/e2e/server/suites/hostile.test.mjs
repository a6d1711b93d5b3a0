// Suite 6: a table of malformed and hostile requests (lib/hostile-cases.mjs plus raw-socket cases
// here), each with its expected status and OpenAI error body. The server must stay up through all of
// them: afterwards /health is 200 and a normal request succeeds. Also run by ctest in the
// asan-ubsan build, against that build's server.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KEY, MAX_BODY, MOCK_CONTEXT, cases, rawCaseNames } from '../lib/hostile-cases.mjs';
import { errorShapeProblems, postJson, rawExchange, rawResponseJson, request, slow, startFixture } from '../lib/harness.mjs';

const HEADER_TIMEOUT_MS = 1000;
const BODY_TIMEOUT_MS = 1000;
let fx;

before(async () => {
  fx = await startFixture('hostile', {
    apiKey: KEY,
    mockContext: MOCK_CONTEXT,
    args: ['--max-body-bytes', String(MAX_BODY), '--header-timeout-ms', String(HEADER_TIMEOUT_MS), '--body-timeout-ms', String(BODY_TIMEOUT_MS),
      '--cors-origin', 'https://app.example'],
    // 100 ms per step: a client's EOF arrives while its request is still generating.
    extraMocks: { slow: { mock: { delay_ms_per_step: 100, eos_period: 0 } } },
  });
});

after(async () => { await fx?.close(); });

function checkAnswer(what, { status, json, text }, expect) {
  assert.equal(status, expect.status, `${what}: status ${status}, expected ${expect.status}; body: ${String(text).slice(0, 300)}`);
  if (expect.status >= 400) {
    const problems = errorShapeProblems(json, { type: expect.type, code: expect.code, param: expect.param });
    for (const part of expect.message ?? []) {
      if (!String(json?.error?.message).includes(part)) problems.push(`error.message does not mention ${JSON.stringify(part)}`);
    }
    assert.deepEqual(problems, [], `${what}: ${problems.join('; ')}; body: ${String(text).slice(0, 300)}`);
  }
  fx.server.assertAlive();
}

test(`the table holds at least 40 hostile requests (${cases.length} + ${rawCaseNames.length} raw)`, () => {
  assert.ok(cases.length + rawCaseNames.length >= 40);
});

for (const c of cases) {
  test(`${c.expect.status}: ${c.name}`, async () => {
    const res = await request(fx.server, { method: c.method ?? 'POST', path: c.path, body: c.body, headers: c.headers, auth: c.auth !== false });
    checkAnswer(c.name, res, c.expect);
  });
}

const auth = `Authorization: Bearer ${KEY}\r\n`;
function rawPost(path, body, extraHeaders = '') {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  return Buffer.concat([
    Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n${extraHeaders}\r\n`),
    bytes,
  ]);
}

async function rawCase(name, data, expect, options = {}) {
  const res = await rawExchange(fx.server, data, { timeoutMs: 10000 * slow, ...options });
  const json = rawResponseJson(res.bytes);
  checkAnswer(name, { status: res.status, json, text: res.text }, expect);
}

test(`400: ${rawCaseNames[0]}`, async () => {
  const body = Buffer.concat([Buffer.from('{"model": "mock", "max_tokens": 2, "messages": [{"role": "user", "content": "bad '), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(' bytes"}]}')]);
  await rawCase(rawCaseNames[0], rawPost('/v1/chat/completions', body), { status: 400, type: 'invalid_request_error' });
});

test(`400: ${rawCaseNames[1]}`, async () => {
  const body = Buffer.concat([Buffer.from('{"model": "mock", "prompt": "a'), Buffer.from([0xc0, 0xaf]), Buffer.from('b", "max_tokens": 2}')]);
  await rawCase(rawCaseNames[1], rawPost('/v1/completions', body), { status: 400, type: 'invalid_request_error' });
});

test(`400: ${rawCaseNames[2]}`, async () => {
  await rawCase(rawCaseNames[2], 'GARBAGE\r\n\r\n', { status: 400 });
});

test(`400: ${rawCaseNames[3]}`, async () => {
  const data = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nZZZ\r\n{}\r\n0\r\n\r\n`;
  await rawCase(rawCaseNames[3], data, { status: 400 });
});

test(`431 or 400: ${rawCaseNames[4]}`, async () => {
  const data = `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${'p'.repeat(100 * 1024)}\r\nConnection: close\r\n\r\n`;
  const res = await rawExchange(fx.server, data, { timeoutMs: 10000 * slow });
  assert.ok(res.status === 431 || res.status === 400, `status ${res.status}: ${res.text.slice(0, 200)}`);
  assert.deepEqual(errorShapeProblems(rawResponseJson(res.bytes)), [], res.text.slice(0, 300));
  fx.server.assertAlive();
});

test(`413: ${rawCaseNames[5]}`, async () => {
  const json = JSON.stringify({ model: 'mock', prompt: 'x'.repeat(MAX_BODY + 4096), max_tokens: 2 });
  const chunks = [];
  for (let i = 0; i < json.length; i += 8192) {
    const piece = json.slice(i, i + 8192);
    chunks.push(`${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`);
  }
  const data = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunks.join('')}0\r\n\r\n`;
  await rawCase(rawCaseNames[5], data, { status: 413 });
});

// A deadline: the server closes the connection (answering 408 first, or nothing) within the
// deadline plus a margin, and well before our own 10 s wait.
async function deadlineCase(name, parts, deadlineMs) {
  const res = await rawExchange(fx.server, parts, { timeoutMs: 10000 * slow });
  assert.ok(res.closed, `${name}: the server kept the connection open for ${res.elapsedMs} ms`);
  assert.ok(res.elapsedMs >= deadlineMs * 0.8, `${name}: closed after ${res.elapsedMs} ms, before the ${deadlineMs} ms deadline`);
  assert.ok(res.elapsedMs <= deadlineMs + 3000 * slow, `${name}: closed only after ${res.elapsedMs} ms (deadline ${deadlineMs} ms)`);
  if (res.bytes.length > 0) {
    assert.equal(res.status, 408, `${name}: answered ${res.text.slice(0, 200)}`);
    assert.deepEqual(errorShapeProblems(rawResponseJson(res.bytes)), [], res.text.slice(0, 300));
  }
  fx.server.assertAlive();
}

test(`closed: ${rawCaseNames[6]}`, async () => {
  await deadlineCase(rawCaseNames[6], `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}`, HEADER_TIMEOUT_MS);
});

test(`closed: ${rawCaseNames[7]}`, async () => {
  const head = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{"model": "mock",`;
  await deadlineCase(rawCaseNames[7], head, BODY_TIMEOUT_MS);
});

test(`closed at once: ${rawCaseNames[8]}`, async () => {
  // A chunk extension that never ends: the server used to keep every byte until the body deadline.
  const head = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1;ext=`;
  const res = await rawExchange(fx.server, [head, 'a'.repeat(3 << 20)], { timeoutMs: 10000 * slow });
  assert.ok(res.closed, 'the connection stayed open');
  assert.ok(res.elapsedMs < BODY_TIMEOUT_MS * 0.8, `closed after ${res.elapsedMs} ms: at the body deadline, not at the read limit`);
  if (res.status !== undefined) assert.equal(res.status, 400, res.text.slice(0, 200));
  fx.server.assertAlive();
});

test(`200 then 413: ${rawCaseNames[9]}`, async () => {
  const first = rawPost('/v1/completions', JSON.stringify({ model: 'tiny-qwen2', prompt: 'pipelined', max_tokens: 16 }))
    .toString('latin1').replace('Connection: close\r\n', '');
  const second = rawPost('/v1/completions', JSON.stringify({ model: 'mock', prompt: 'y'.repeat(100 * 1024), max_tokens: 2 }));
  const res = await rawExchange(fx.server, Buffer.concat([Buffer.from(first, 'latin1'), second]), { timeoutMs: 20000 * slow });
  assert.equal(res.status, 200, `first response: ${res.text.slice(0, 300)}`);
  assert.match(res.text, /"completion_tokens":16/);
  assert.match(res.text, /HTTP\/1\.1 413/, 'the pipelined request got no answer');
  fx.server.assertAlive();
});

test(`200: ${rawCaseNames[10]}`, async () => {
  const body = JSON.stringify({ model: 'mock', prompt: 'old client', max_tokens: 3, stream: true });
  const data = `POST /v1/completions HTTP/1.0\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const res = await rawExchange(fx.server, data, { timeoutMs: 10000 * slow });
  assert.equal(res.status, 200, res.text.slice(0, 300));
  assert.ok(res.closed, 'an HTTP/1.0 stream must end with the connection');
  const split = res.text.indexOf('\r\n\r\n');
  assert.doesNotMatch(res.text.slice(0, split).toLowerCase(), /transfer-encoding/);
  const events = res.text.slice(split + 4);
  assert.ok(events.startsWith('data: {'), `not an unframed event stream: ${JSON.stringify(events.slice(0, 80))}`);
  assert.ok(events.trimEnd().endsWith('data: [DONE]'), `no [DONE] at the end: ${JSON.stringify(events.slice(-80))}`);
  fx.server.assertAlive();
});

test(`200 then 400: ${rawCaseNames[11]}`, async () => {
  const res = await rawExchange(fx.server, 'HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGARBAGE\r\n\r\n', { timeoutMs: 10000 * slow });
  assert.equal(res.status, 200, res.text.slice(0, 300));
  const second = res.text.indexOf('HTTP/1.1 400');
  assert.ok(second > 0, `no 400 for the garbage: ${res.text.slice(0, 300)}`);
  const json = rawResponseJson(res.bytes.subarray(second));
  assert.deepEqual(errorShapeProblems(json), [], `the 400 lost its body: ${res.text.slice(second, second + 300)}`);
  fx.server.assertAlive();
});

test(`404: ${rawCaseNames[12]}`, async () => {
  const body = Buffer.from(JSON.stringify({ model: `${'a'.repeat(199)}é`, messages: [{ role: 'user', content: 'x' }] }));
  const res = await rawExchange(fx.server, rawPost('/v1/chat/completions', body), { timeoutMs: 10000 * slow });
  assert.equal(res.status, 404, res.text.slice(0, 300));
  const bytes = res.bytes.subarray(res.bytes.indexOf('\r\n\r\n') + 4);
  const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);  // throws on invalid UTF-8
  assert.deepEqual(errorShapeProblems(JSON.parse(text), { code: 'model_not_found' }), []);
  fx.server.assertAlive();
});

test(`501: ${rawCaseNames[13]}`, async () => {
  // The body is a whole second request: read as "no body" (as it was), it got its own 200.
  const smuggled = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
  const data = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n${smuggled}`;
  const res = await rawExchange(fx.server, data, { timeoutMs: 5000 * slow });
  assert.equal(res.status, 501, res.text.slice(0, 300));
  assert.match(rawResponseJson(res.bytes)?.error?.message ?? '', /Transfer-Encoding 'gzip' is not supported/);
  assert.equal((res.text.match(/^HTTP\/1\.1 /gm) ?? []).length, 1, `more than one response: ${res.text.slice(0, 600)}`);
  assert.ok(res.closed, 'the connection stayed open');
  fx.server.assertAlive();
});

test(`400: ${rawCaseNames[14]}`, async () => {
  const data = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`;
  const res = await rawExchange(fx.server, data, { timeoutMs: 5000 * slow });
  assert.equal(res.status, 400, res.text.slice(0, 300));
  assert.equal((res.text.match(/^HTTP\/1\.1 /gm) ?? []).length, 1, `more than one response: ${res.text.slice(0, 600)}`);
  fx.server.assertAlive();
});

test(`401: ${rawCaseNames[15]}`, async () => {
  // A body within --max-body-bytes announced, none sent: the answer must come from the head alone
  // (a body over the limit gets 413 from the head, also unread).
  const head = 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
    `Content-Length: ${MAX_BODY - 1}\r\nExpect: 100-continue\r\n\r\n`;
  const res = await rawExchange(fx.server, head, { timeoutMs: 5000 * slow });
  assert.equal(res.status, 401, res.text.slice(0, 300));
  assert.ok(!res.text.includes('100 Continue'), `the server invited the body: ${res.text.slice(0, 300)}`);
  assert.ok(res.closed, 'the connection stayed open');
  assert.ok(res.elapsedMs < BODY_TIMEOUT_MS * 0.8, `answered after ${res.elapsedMs} ms: the body deadline, not the head`);
  assert.deepEqual(errorShapeProblems(rawResponseJson(res.bytes), { type: 'authentication_error', code: 'invalid_api_key' }), []);
  fx.server.assertAlive();
});

// The response after any interim (1xx) ones.
function finalResponse(text) {
  let rest = text;
  while (/^HTTP\/1\.1 1\d\d /.test(rest)) rest = rest.slice(rest.indexOf('\r\n\r\n') + 4);
  return rest;
}

test('200: a half-closed request (the client shuts down its sending side after sending it) is answered', async () => {
  // RFC 9112 lets a client close its side once the request is sent; EOF is then no disconnect. The
  // server tells the two apart by writing what a client skips (interim 100 Continue, SSE comments).
  const body = { model: 'slow', prompt: 'hello there', max_tokens: 8, temperature: 0 };
  const plain = await rawExchange(fx.server, rawPost('/v1/completions', JSON.stringify(body)), { endAfterWrite: true });
  const final = finalResponse(plain.text);
  assert.match(final, /^HTTP\/1\.1 200 /, `non-streamed: ${plain.text.slice(0, 300)}`);
  const json = rawResponseJson(Buffer.from(final, 'latin1'));
  assert.equal(json?.usage?.completion_tokens, 8, final.slice(0, 300));
  assert.equal(json.choices[0].finish_reason, 'length');
  const streamed = await rawExchange(fx.server, rawPost('/v1/completions', JSON.stringify({ ...body, stream: true })), { endAfterWrite: true });
  assert.match(streamed.text, /^HTTP\/1\.1 200 /, `streamed: ${streamed.text.slice(0, 300)}`);
  assert.ok(streamed.text.includes('data: [DONE]'), `streamed: no [DONE]: ${streamed.text.slice(-300)}`);
  assert.equal((streamed.text.match(/"finish_reason":"length"/g) || []).length, 1);
  fx.server.assertAlive();
});

test('CORS preflight: the allowed origin gets the headers its SDK asks for; others get no CORS headers', async () => {
  const preflight = (origin, requested) => rawExchange(fx.server,
    `OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: ${origin}\r\nAccess-Control-Request-Method: POST\r\n` +
    `Access-Control-Request-Headers: ${requested}\r\nConnection: close\r\n\r\n`, { timeoutMs: 10000 * slow });
  const sdk = await preflight('https://app.example', 'authorization, content-type, x-stainless-os, x-stainless-retry-count');
  assert.equal(sdk.status, 204, sdk.text);
  const head = sdk.text.toLowerCase();
  assert.match(head, /access-control-allow-origin: https:\/\/app\.example/);
  assert.match(head, /access-control-allow-headers: [^\r]*x-stainless-retry-count/);
  // The key travels in a header, never a cookie: no credentials mode.
  assert.doesNotMatch(head, /access-control-allow-credentials/);
  const odd = await preflight('https://app.example', 'x-a;evil=1');
  assert.match(odd.text.toLowerCase(), /access-control-allow-headers: authorization, content-type, x-api-key\r\n/);
  const other = await preflight('https://elsewhere.example', 'authorization');
  assert.equal(other.status, 204, other.text);
  assert.doesNotMatch(other.text.toLowerCase(), /access-control-allow/);
  fx.server.assertAlive();
});

test('SIGHUP is logged and ignored: the server keeps serving', async () => {
  for (let i = 0; i < 2; ++i) {
    fx.server.child.kill('SIGHUP');
    await new Promise((resolve) => setTimeout(resolve, 200 * slow));
    fx.server.assertAlive();
  }
  const health = await request(fx.server, { path: '/health', auth: false });
  assert.equal(health.status, 200, health.text);
  assert.equal((fx.server.logTail(400).match(/SIGHUP received: ignored/g) ?? []).length, 2, fx.server.logTail(20));
});

test('after the table: /health is 200 and normal requests succeed', async () => {
  fx.server.assertAlive();
  const health = await request(fx.server, { path: '/health', auth: false });
  assert.equal(health.status, 200, health.text);
  assert.deepEqual(health.json, { status: 'ok' });
  const chat = await postJson(fx.server, '/v1/chat/completions', { model: 'mock', messages: [{ role: 'user', content: 'still there?' }], max_tokens: 4 });
  assert.equal(chat.status, 200, chat.text);
  assert.equal(chat.json.usage.completion_tokens, 4);
  const tiny = await postJson(fx.server, '/v1/completions', { model: 'tiny-qwen2', prompt: 'still there?', max_tokens: 4 });
  assert.equal(tiny.status, 200, tiny.text);
});
