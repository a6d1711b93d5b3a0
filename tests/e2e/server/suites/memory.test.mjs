// Memory under large request bodies. After bursts of authenticated ones RSS returns to its idle
// level; unauthenticated ones are refused from their head and never cost memory. Eight concurrent
// 28 MB /v1/completions bodies (a 4M-token prompt array, refused for the context after parsing),
// three rounds: after each, the server's RSS must be within 10% of what it was before the first.
// glibc's default raises its mmap threshold after large frees, so such bursts used to leave ~100 MB
// per round behind, growing (apps/server/main.cpp: the threshold is fixed at start-up).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { postJson, sleep, slow, startFixture } from '../lib/harness.mjs';

let fx;

const KEY = 'memory-test-key-7d1e';

before(async () => { fx = await startFixture('memory', { apiKey: KEY }); });
after(async () => { await fx?.close(); });

function rssMb(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
}

// A sanitizer build's server (LLAISYS_E2E_SLOW > 1) allocates through ASan, which holds freed
// memory in its quarantine: RSS says nothing about glibc there.
const skip = slow > 1 ? 'sanitizer build: ASan keeps freed memory in its quarantine' : false;

test('RSS returns to within 10% of idle after bursts of 8 concurrent 28 MB bodies', { skip }, async () => {
  const pid = fx.server.child.pid;
  const prompt = Array.from({ length: 4_000_000 }, (_, i) => 100000 + (i % 50000));
  const body = JSON.stringify({ model: 'mock', prompt, max_tokens: 1 });
  assert.ok(body.length > 25_000_000 && body.length < 32 << 20, `body of ${body.length} bytes`);
  // Warm-up: a small request of each kind the burst uses, so first-use allocations are in the baseline.
  assert.equal((await postJson(fx.server, '/v1/completions', { model: 'mock', prompt: [1000, 1001], max_tokens: 1 })).status, 200);
  await sleep(200);
  const idle = rssMb(pid);
  const rounds = [];
  for (let round = 0; round < 3; ++round) {
    const answers = await Promise.all(Array.from({ length: 8 }, () =>
      postJson(fx.server, '/v1/completions', body, { timeoutMs: 120000 * slow })));
    for (const a of answers) assert.equal(a.status, 400, `a 4M-token prompt is refused for the context: ${a.text.slice(0, 200)}`);
    await sleep(500);
    rounds.push(rssMb(pid));
  }
  for (const [i, after] of rounds.entries()) {
    assert.ok(after <= idle * 1.1, `round ${i}: RSS ${after.toFixed(0)} MB after the burst, idle ${idle.toFixed(0)} MB (rounds: ${rounds.map((r) => r.toFixed(0)).join(', ')})`);
  }
  fx.server.assertAlive();
});

test('200 unauthenticated connections sending 31 MB bodies slowly: 401 from the head, RSS flat and back within 10%', { skip }, async () => {
  const pid = fx.server.child.pid;
  await sleep(200);
  const idle = rssMb(pid);
  const head = 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
    `Content-Length: ${31 << 20}\r\n\r\n`;
  const chunk = Buffer.alloc(64 << 10, 0x20);
  let peak = idle;
  const conns = await Promise.all(Array.from({ length: 200 }, () => new Promise((resolve) => {
    const socket = net.connect(fx.server.port, '127.0.0.1');
    const conn = { socket, text: '', closed: false };
    socket.on('data', (d) => { conn.text += d.toString('latin1'); });
    socket.on('close', () => { conn.closed = true; });
    socket.on('error', () => { conn.closed = true; });
    socket.on('connect', () => { socket.write(head); socket.write(chunk); resolve(conn); });
  })));
  // Keep sending slowly for a while: nothing of it may be kept by the server.
  for (let round = 0; round < 10; ++round) {
    for (const c of conns) if (!c.closed) c.socket.write(chunk);
    peak = Math.max(peak, rssMb(pid));
    await sleep(100);
  }
  const statuses = conns.map((c) => Number(/^HTTP\/1\.1 (\d{3})/.exec(c.text)?.[1]));
  assert.ok(statuses.every((st) => st === 401), `statuses: ${[...new Set(statuses)].join(', ')}`);
  for (const c of conns) c.socket.destroy();
  await sleep(500);
  const after = rssMb(pid);
  assert.ok(peak < idle + 64, `RSS rose from ${idle.toFixed(0)} to ${peak.toFixed(0)} MB`);
  assert.ok(after <= idle * 1.1, `RSS ${after.toFixed(0)} MB after, idle ${idle.toFixed(0)} MB`);
  fx.server.assertAlive();
});

test('no key and a 30 MB body sent at once: the 401 arrives within 100 ms (decided from the head)', { skip }, async () => {
  // That the body is not kept is the test above (200 such senders, RSS flat); here the answer does
  // not wait for it either. (The server's own reads cannot be counted from outside: /proc's rchar
  // leaves out socket reads.)
  const body = Buffer.alloc(30 << 20, 0x20);
  const head = 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
    `Content-Length: ${body.length}\r\n\r\n`;
  const started = Date.now();
  const { text, ms } = await new Promise((resolve) => {
    const socket = net.connect(fx.server.port, '127.0.0.1');
    let got = '';
    let at;
    socket.on('data', (d) => {
      got += d.toString('latin1');
      if (at === undefined && /\r\n\r\n/.test(got)) at = Date.now() - started;
    });
    socket.on('close', () => resolve({ text: got, ms: at }));
    socket.on('error', () => {});
    socket.on('connect', () => { socket.write(head); socket.write(body); });
  });
  assert.match(text, /^HTTP\/1\.1 401 /, text.slice(0, 200));
  assert.ok(ms < 100 * slow, `401 after ${ms} ms`);
  fx.server.assertAlive();
});
