// Suite 7: what one client can take from everyone else. Connections per client address
// (--max-connections-per-client) and request-body bytes being received at once
// (--max-body-bytes-in-flight): beyond either the server answers 503 + Retry-After from the request
// head and closes, other addresses are still served (/health included), and what was held is given
// back when the holder goes away. Beyond --max-connections, a few reserved slots still answer
// /health, /ready and /metrics; a prompt of megabytes is processed off the I/O threads; and connections of
// one address still sending their first head beyond --max-pending-heads-per-client get 1 s for it.

import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { errorShapeProblems, postJson, rawResponseJson, request, sleep, slow, startFixture } from '../lib/harness.mjs';

const KEY = 'limits-test-key-51c0';
const PER_CLIENT = 4;
const MAX_BODY = 65536;
const IN_FLIGHT = 2 * MAX_BODY;
let fx;

before(async () => {
  fx = await startFixture('limits', {
    apiKey: KEY,
    args: ['--max-connections-per-client', String(PER_CLIENT), '--max-body-bytes', String(MAX_BODY),
      '--max-body-bytes-in-flight', String(IN_FLIGHT), '--header-timeout-ms', String(20000 * slow),
      '--body-timeout-ms', String(20000 * slow)],
  });
});

after(async () => { await fx?.close(); });

// A connection from `localAddress` that writes `head` and then keeps whatever arrives.
function hold(head, localAddress = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port: fx.server.port, host: '127.0.0.1', localAddress });
    const conn = { socket, bytes: [], closed: false, text: () => Buffer.concat(conn.bytes).toString('latin1') };
    socket.on('data', (chunk) => conn.bytes.push(chunk));
    socket.on('close', () => { conn.closed = true; });
    socket.on('error', () => { conn.closed = true; });
    socket.on('connect', () => { if (head) socket.write(head); resolve(conn); });
    setTimeout(() => reject(new Error('connect timed out')), 5000 * slow);
  });
}

async function answered(conn, what) {
  const deadline = Date.now() + 5000 * slow;
  while (!conn.closed && !/\r\n\r\n/.test(conn.text()) && Date.now() < deadline) await sleep(10);
  const text = conn.text();
  const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
  assert.ok(match, `${what}: no response (${JSON.stringify(text.slice(0, 200))})`);
  return { status: Number(match[1]), text, json: rawResponseJson(Buffer.concat(conn.bytes)) };
}

function bodyHead(length) {
  return `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
}

async function health(localAddress) {
  const conn = await hold('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', localAddress);
  const res = await answered(conn, `/health from ${localAddress}`);
  conn.socket.destroy();
  return res;
}

test(`one address holds at most ${PER_CLIENT} connections; others are still served`, async () => {
  // An address of its own: the fixture's own requests from 127.0.0.1 (its readiness polls) may still
  // be closing on the server's side, and would count against the cap.
  const address = '127.0.0.6';
  const idle = [];
  try {
    for (let i = 0; i < PER_CLIENT; ++i) idle.push(await hold('', address));
    await sleep(100 * slow);
    const refused = await answered(await hold('', address), 'the connection over the per-client cap');
    assert.equal(refused.status, 503, refused.text.slice(0, 300));
    assert.match(refused.text, /\r\nRetry-After: \d+\r\n/i);
    assert.match(refused.json?.error?.message ?? '', /this client has too many open connections/);
    // Another address (all of 127/8 is the loopback) is not affected.
    const other = await health('127.0.0.2');
    assert.equal(other.status, 200, other.text.slice(0, 300));
  } finally {
    for (const conn of idle) conn.socket.destroy();
  }
  // Given back when they close: the same address is served again.
  let again;
  for (let i = 0; i < 50; ++i) {
    again = await health(address);
    if (again.status === 200) break;
    await sleep(20 * slow);
  }
  assert.equal(again.status, 200, again.text.slice(0, 300));
  fx.server.assertAlive();
});

test(`request bodies being received are capped at ${IN_FLIGHT} bytes over all connections`, async () => {
  // Two heads announcing the largest body, from two addresses, neither sending it: the budget is full.
  const a = await hold(bodyHead(MAX_BODY), '127.0.0.3');
  const b = await hold(bodyHead(MAX_BODY), '127.0.0.4');
  await sleep(150 * slow);
  const refused = await answered(await hold(bodyHead(100), '127.0.0.5'), 'a body over the in-flight budget');
  assert.equal(refused.status, 503, refused.text.slice(0, 300));
  assert.match(refused.text, /\r\nRetry-After: \d+\r\n/i);
  assert.deepEqual(errorShapeProblems(refused.json, {}), []);
  assert.match(refused.json.error.message, /too many request bodies at once/);
  assert.equal((await health('127.0.0.5')).status, 200);
  // When the holders go away their bytes come back.
  a.socket.destroy();
  b.socket.destroy();
  let res;
  for (let i = 0; i < 50; ++i) {
    res = await postJson(fx.server, '/v1/completions', { model: 'mock', prompt: 'hi', max_tokens: 2 });
    if (res.status === 200) break;
    await sleep(20 * slow);
  }
  assert.equal(res.status, 200, res.text);
  fx.server.assertAlive();
});

// ~`bytes` of distinct made-up words (a repeated sentence would tokenize from the word cache).
function madeUpWords(bytes, seed) {
  let state = seed;
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const words = [];
  for (let total = 0; total < bytes;) {
    let word = '';
    const length = 3 + (state % 8);
    for (let i = 0; i < length; ++i) {
      state = (state * 1103515245 + 12345) % 2147483648;
      word += letters[state % 26];
    }
    words.push(word);
    total += length + 1;
  }
  return words.join(' ');
}

test('a prompt of megabytes is tokenized off the I/O thread: /health keeps answering meanwhile', async () => {
  // One I/O thread: if tokenizing ran on it, every other request would wait for the whole prompt.
  const big = await startFixture('limits-cpu', {
    apiKey: KEY,
    args: ['--threads', '1', '--max-body-bytes', String(32 << 20), '--max-body-bytes-in-flight', String(64 << 20)],
  });
  try {
    const prompt = madeUpWords(16 << 20, 12345);
    const started = Date.now();
    const pending = postJson(big.server, '/v1/chat/completions',
      { model: 'tiny-qwen2', messages: [{ role: 'user', content: prompt }], max_tokens: 1 },
      { timeoutMs: 300000 * slow });
    // Every /health started before the prompt's answer arrived counts, also one still waiting then.
    const latencies = [];
    let done = false;
    let doneAt = Infinity;
    pending.finally(() => { done = true; doneAt = Date.now(); });
    while (!done) {
      const t0 = Date.now();
      const conn = net.connect({ port: big.server.port, host: '127.0.0.1' });
      const status = await new Promise((resolve) => {
        let text = '';
        conn.on('connect', () => conn.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'));
        conn.on('data', (chunk) => { text += chunk.toString('latin1'); });
        conn.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1])));
        conn.on('error', () => resolve(undefined));
      });
      if (t0 < doneAt) latencies.push({ ms: Date.now() - t0, status });
      await sleep(20);
    }
    const res = await pending;
    const elapsed = Date.now() - started;
    // Too long for the tiny model's context: refused after it was tokenized (the work being measured).
    assert.equal(res.status, 400, res.text.slice(0, 300));
    assert.ok(elapsed > 300, `the prompt took only ${elapsed} ms: too little work to tell (${res.text.slice(0, 200)})`);
    assert.ok(latencies.length >= 3, `only ${latencies.length} health checks while the prompt was processed (${elapsed} ms)`);
    const worst = Math.max(...latencies.map((l) => l.ms));
    console.log(`prompt handled in ${elapsed} ms; ${latencies.length} /health checks meanwhile, the slowest ${worst} ms`);
    assert.ok(latencies.every((l) => l.status === 200), JSON.stringify(latencies.slice(0, 20)));
    assert.ok(worst < elapsed / 4, `a /health took ${worst} ms while the ${elapsed} ms prompt was processed`);
  } finally {
    await big.close();
  }
});

test('while 8 streams run, two 8 MB prompts: no stream gap beyond 4x its inter-token time, /health within 50 ms', async () => {
  const fx8 = await startFixture('limits-streams', {
    apiKey: KEY,
    args: ['--max-body-bytes', String(32 << 20), '--max-body-bytes-in-flight', String(64 << 20), '--max-running-requests', '16'],
    extraMocks: { paced: { mock: { delay_ms_per_step: 50, eos_period: 0 }, maxContext: 4096 } },
  });
  try {
    const auth = `Authorization: Bearer ${KEY}\r\n`;
    // Eight streams of 120 tokens at 50 ms a step: each chunk's arrival time.
    const streams = Array.from({ length: 8 }, (_, i) => {
      const times = [];
      const conn = net.connect({ port: fx8.server.port, host: '127.0.0.1' });
      const body = JSON.stringify({ model: 'paced', prompt: `stream ${i}`, max_tokens: 120, temperature: 0, stream: true });
      let tail = '';
      conn.on('data', (d) => {
        const joined = tail + d.toString('latin1');
        const events = (joined.match(/data: \{/g) || []).length - (tail.match(/data: \{/g) || []).length;
        for (let e = 0; e < events; ++e) times.push(Date.now());
        tail = joined.slice(-16);
      });
      conn.on('error', () => {});
      conn.write(`POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      return { conn, times };
    });
    await sleep(1500);  // the streams' own pace, before the prompts
    // The bodies are serialized before the window: this test's own event loop, busy with 8 MB of
    // JSON, would otherwise timestamp the streams' chunks late (measured: one 50 ms step "missed").
    const bodies = [777, 4242].map((seed) => Buffer.from(JSON.stringify(
      { model: 'tiny-qwen2', messages: [{ role: 'user', content: madeUpWords(8 << 20, seed) }], max_tokens: 1 })));
    await sleep(200);
    const windowStart = Date.now();
    const pending = bodies.map((body) => postJson(fx8.server, '/v1/chat/completions', body, { timeoutMs: 300000 * slow }));
    let done = false;
    const all = Promise.all(pending).finally(() => { done = true; });
    const healthMs = [];
    while (!done) {
      const t0 = Date.now();
      const res = await request(fx8.server, { path: '/health', timeoutMs: 10000 * slow });
      healthMs.push(Date.now() - t0);
      assert.equal(res.status, 200);
      await sleep(20);
    }
    const answers = await all;
    const windowEnd = Date.now();
    for (const a of answers) assert.equal(a.status, 400, `an 8 MB prompt is refused for the context: ${a.text.slice(0, 200)}`);
    assert.ok(windowEnd - windowStart > 300, `the prompts took only ${windowEnd - windowStart} ms: too little work to tell`);
    for (const s of streams) s.conn.destroy();
    // The normal inter-token time: the median gap before the prompts, at least the model's 50 ms step
    // (on a loaded machine this process reads two steps' chunks at once often enough that the median
    // gap is 0, seen in CI); the largest gap while they ran.
    const gaps = (s, from, to) => s.times.slice(1).map((t, k) => [s.times[k], t]).filter(([a]) => a >= from && a < to).map(([a, b]) => b - a);
    const before = streams.flatMap((s) => gaps(s, 0, windowStart)).sort((a, b) => a - b);
    const normal = Math.max(50, before[Math.floor(before.length / 2)]);
    const during = streams.flatMap((s) => gaps(s, windowStart, windowEnd));
    const worst = Math.max(...during);
    console.log(`prompts ${windowEnd - windowStart} ms; stream gaps: normal ${normal} ms, worst ${worst} ms over ${during.length}; ` +
      `/health worst ${Math.max(...healthMs)} ms over ${healthMs.length}`);
    assert.ok(during.length > 8, `only ${during.length} stream gaps while the prompts ran`);
    // What this guards: tokenizing a prompt must not stall the step loop or the I/O thread. A stall
    // shows as a gap of at least one prompt's tokenization (hundreds of ms to seconds). Two tokenizer
    // threads busy on a 2-vCPU runner do take CPU time from the engine: under the full CI's load a
    // stream waited 129-134 ms for a 50 ms step (2.7x, seen twice), so the bound is 4x the step in a
    // real build and 8x in a sanitizer build (slow > 1, whose tokenizer is several times slower).
    // The prompts take over a second here, so a stall still fails the 4x bound.
    const bound = slow > 1 ? 8 : 4;
    assert.ok(worst < bound * normal, `a stream waited ${worst} ms while the prompts were tokenized (normal ${normal} ms)`);
    assert.ok(Math.max(...healthMs) < 50 * slow, `/health took ${Math.max(...healthMs)} ms`);
  } finally {
    await fx8.close();
  }
});

test('1,100 slowloris connections from one address (default limits): /health from another address answers', async () => {
  const fxd = await startFixture('limits-slowloris', { apiKey: KEY });
  const conns = [];
  try {
    for (let i = 0; i < 1100; ++i) {
      const socket = net.connect({ port: fxd.server.port, host: '127.0.0.1', localAddress: '127.0.0.1' });
      socket.on('error', () => {});
      socket.on('connect', () => socket.write('GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '));
      conns.push(socket);
    }
    await sleep(500);
    for (let probe = 0; probe < 5; ++probe) {
      const t0 = Date.now();
      const conn = net.connect({ port: fxd.server.port, host: '127.0.0.1', localAddress: '127.0.0.2' });
      const text = await new Promise((resolve) => {
        let got = '';
        conn.on('connect', () => conn.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'));
        conn.on('data', (d) => { got += d.toString('latin1'); });
        conn.on('close', () => resolve(got));
        conn.on('error', () => resolve(got));
      });
      assert.match(text, /^HTTP\/1\.1 200 /, `/health from 127.0.0.2 while 1,100 connections from 127.0.0.1 stall: ${text.slice(0, 200)}`);
      assert.ok(Date.now() - t0 < 1000 * slow, `/health took ${Date.now() - t0} ms`);
      await sleep(200);
    }
  } finally {
    for (const socket of conns) socket.destroy();
    await fxd.close();
  }
});

test(`beyond --max-connections, 16 reserved slots still answer /health, /ready and /metrics, nothing else`, async () => {
  const full = await startFixture('limits-full', { apiKey: KEY, args: ['--max-connections', '3'] });
  const holders = [];
  try {
    // Three idle connections from three addresses take every ordinary slot.
    for (const address of ['127.0.0.6', '127.0.0.7', '127.0.0.8']) {
      const socket = net.connect({ port: full.server.port, host: '127.0.0.1', localAddress: address });
      await new Promise((resolve) => socket.on('connect', resolve));
      holders.push(socket);
    }
    await sleep(100 * slow);
    const ask = async (head, address) => {
      const socket = net.connect({ port: full.server.port, host: '127.0.0.1', localAddress: address });
      return new Promise((resolve) => {
        let text = '';
        socket.on('connect', () => socket.write(head));
        socket.on('data', (chunk) => { text += chunk.toString('latin1'); });
        socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), text }));
        socket.on('error', () => resolve({ status: undefined, text }));
        setTimeout(() => socket.destroy(), 5000 * slow);  // an ordinary slot would keep it open
      });
    };
    const health = await ask('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', '127.0.0.9');
    assert.equal(health.status, 200, health.text.slice(0, 300));
    const ready = await ask('GET /ready HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', '127.0.0.9');
    assert.equal(ready.status, 200, ready.text.slice(0, 300));
    const metrics = await ask(`GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n\r\n`, '127.0.0.9');
    assert.equal(metrics.status, 200, metrics.text.slice(0, 300));
    const body = JSON.stringify({ model: 'mock', prompt: 'hi', max_tokens: 2 });
    const api = await ask(`POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, '127.0.0.10');
    assert.equal(api.status, 503, api.text.slice(0, 300));
    assert.match(api.text, /too many open connections/);
    full.server.assertAlive();
  } finally {
    for (const socket of holders) socket.destroy();
    await full.close();
  }
});

test('beyond the pending heads of an address, a slow head is dropped within 1 s; prompt heads are served', async () => {
  // A header deadline of 20 s for ordinary connections; 1 s for those admitted while two heads of
  // their address were pending.
  const slowFx = await startFixture('limits-heads', {
    args: ['--max-pending-heads-per-client', '2', '--max-connections-per-client', '8',
      '--header-timeout-ms', String(20000 * slow)],
  });
  const port = slowFx.server.port;
  const open = (localAddress = '127.0.0.11') => new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    const conn = { socket, bytes: [], closed: false, text: () => Buffer.concat(conn.bytes).toString('latin1') };
    socket.on('data', (chunk) => conn.bytes.push(chunk));
    socket.on('close', () => { conn.closed = true; conn.closedAt = Date.now(); });
    socket.on('error', () => { conn.closed = true; });
    socket.on('connect', () => resolve(conn));
    setTimeout(() => reject(new Error('connect timed out')), 5000 * slow);
  });
  const statuses = (conn) => [...conn.text().matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
  const responseOf = async (conn, what, count = 1) => {
    const deadline = Date.now() + 5000 * slow;
    while (!conn.closed && statuses(conn).length < count && Date.now() < deadline) await sleep(10);
    const all = statuses(conn);
    assert.ok(all.length >= count, `${what}: ${count} response(s) expected (${JSON.stringify(conn.text().slice(0, 300))})`);
    return all[count - 1];
  };
  const head = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n';
  const conns = [];
  try {
    // A keep-alive client served once no longer counts as a pending head.
    const served = await open();
    conns.push(served);
    served.socket.write(`${head}\r\n`);
    assert.equal(await responseOf(served, 'the keep-alive client'), 200);
    // Two connections that send part of a head and stall: the two pending heads of the address.
    const slowA = await open();
    const slowB = await open();
    conns.push(slowA, slowB);
    for (const c of [slowA, slowB]) c.socket.write(head);
    await sleep(100 * slow);
    // A third slow head is dropped after about a second (408), not the 20 s the first two get.
    const third = await open();
    conns.push(third);
    const start = Date.now();
    third.socket.write(head);
    assert.equal(await responseOf(third, 'a third stalled head'), 408);
    assert.ok(Date.now() - start < 4000 * slow, `dropped after ${Date.now() - start} ms`);
    assert.ok(!slowA.closed && !slowB.closed, 'the first two stalled heads keep their 20 s deadline');
    // A connection that sends its head at once is served though two are still pending (a burst of
    // fresh connections is not refused); so are the keep-alive client and another address.
    const prompt = await open();
    conns.push(prompt);
    prompt.socket.write(`${head}Connection: close\r\n\r\n`);
    assert.equal(await responseOf(prompt, 'a prompt head while two are pending'), 200);
    served.socket.write(`${head}\r\n`);
    assert.equal(await responseOf(served, 'the keep-alive client again', 2), 200);
    const other = await open('127.0.0.12');
    conns.push(other);
    other.socket.write(`${head}Connection: close\r\n\r\n`);
    assert.equal(await responseOf(other, 'another address'), 200);
    // A stalled head that completes in its deadline is answered.
    slowA.socket.write('\r\n');
    assert.equal(await responseOf(slowA, 'the completed slow head'), 200);
    slowFx.server.assertAlive();
  } finally {
    for (const c of conns) c.socket.destroy();
    await slowFx.close();
  }
});
