// The shared harness of the server end-to-end suites: builds the two models in a temporary
// directory (the tiny Qwen2 from llaisys-mkmodel and a mock model with the same tokenizer), starts
// llaisys-server on a free loopback port with whatever flags a suite needs, waits for /health 200,
// and stops it at the end (also when a test fails). Plus raw HTTP, /tokenize and /metrics helpers.
//
// Environment:
//   LLAISYS_BUILD_DIR   the build directory whose bin/ holds llaisys-server, llaisys-mkmodel and
//                       llaisys-offline (set by ctest; required)
//   LLAISYS_BIN_DIR     where those programs are instead (default BUILD_DIR/bin)
//   LLAISYS_E2E_KEEP    set to keep the temporary directory (models, server logs) for debugging
//   LLAISYS_E2E_SLOW    a factor for every deadline (e.g. 4 under ASan/UBSan)

import { spawn, execFile } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';

const execFileAsync = promisify(execFile);

export const slow = Number(process.env.LLAISYS_E2E_SLOW || 1);

export function buildDir() {
  const dir = process.env.LLAISYS_BUILD_DIR;
  if (!dir) throw new Error('LLAISYS_BUILD_DIR is not set (the build directory with bin/llaisys-server)');
  return path.resolve(dir);
}

export function program(name) {
  const file = path.join(process.env.LLAISYS_BIN_DIR || path.join(buildDir(), 'bin'), name);
  if (!fs.existsSync(file)) throw new Error(`${file} is not built`);
  return file;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function tempDir(prefix) {
  return fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), `llaisys-e2e-${prefix}-`));
}

export async function freePort() {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}

// The tiny Qwen2 (seed 7) in DIR/tiny-qwen2; written once per directory.
export async function makeTinyQwen2(dir, { shape = 'tiny', seed = 7, name = 'tiny-qwen2' } = {}) {
  const out = path.join(dir, name);
  if (!fs.existsSync(path.join(out, 'config.json'))) {
    await execFileAsync(program('llaisys-mkmodel'), ['--shape', shape, '--seed', String(seed), out]);
  }
  return out;
}

// A mock model directory: config.json for LlaisysMockForCausalLM plus the tiny Qwen2's tokenizer
// files, so that text, chat templates and scripted replies work. `mock` holds the plugin's options
// (delay_ms_per_step, eos_period, replies, ...).
export function makeMock(dir, tinyDir, { name = 'mock', mock = {}, maxContext = 1024, hiddenSize = 64 } = {}) {
  const out = path.join(dir, name);
  fs.mkdirSync(out, { recursive: true });
  for (const file of fs.readdirSync(tinyDir)) {
    if (file.startsWith('tokenizer')) fs.copyFileSync(path.join(tinyDir, file), path.join(out, file));
  }
  const tiny = JSON.parse(fs.readFileSync(path.join(tinyDir, 'config.json'), 'utf8'));
  fs.writeFileSync(path.join(out, 'config.json'), JSON.stringify({
    architectures: ['LlaisysMockForCausalLM'],
    model_type: 'llaisys-mock',
    vocab_size: tiny.vocab_size,
    hidden_size: hiddenSize,
    max_position_embeddings: maxContext,
    eos_token_id: tiny.eos_token_id,
    bos_token_id: tiny.bos_token_id,
    mock: { eos_period: 0, ...mock },
  }, null, 2));
  return out;
}

// Token ids of each text with the model's tokenizer, no special tokens added (llaisys-offline
// tokenize: independent of the server, so that mock scripts can be written before it starts).
export async function offlineTokenize(modelDir, text) {
  const [ids] = await offlineTokenizeAll(modelDir, [text]);
  return ids;
}

export async function offlineTokenizeAll(modelDir, texts) {
  const child = spawn(program('llaisys-offline'), ['tokenize', '--model', modelDir], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  child.stdin.end(texts.map((text) => JSON.stringify({ text })).join('\n') + '\n');
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`llaisys-offline tokenize failed (${code}): ${stderr}`);
  return stdout.trim().split('\n').map((line) => JSON.parse(line).ids);
}

// llaisys-offline generate over JSONL lines; returns the output objects in input order.
export async function offlineGenerate(modelDir, lines, extraArgs = []) {
  const dir = tempDir('offline');
  try {
    const input = path.join(dir, 'input.jsonl');
    fs.writeFileSync(input, lines.map((line) => JSON.stringify(line)).join('\n') + '\n');
    const { stdout, stderr } = await execFileAsync(program('llaisys-offline'),
      ['generate', '--model', modelDir, '--progress', 'off', ...extraArgs, input], { maxBuffer: 256 << 20 });
    return { outputs: stdout.trim().split('\n').map((line) => JSON.parse(line)), stderr };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// A running llaisys-server. start() resolves once /ready answers 200 (every model loaded).
export class Server {
  constructor({ models, args = [], apiKey, env = {}, name = 'server', logDir }) {
    this.models = models;        // [[id, dir], ...]
    this.args = args;
    this.apiKey = apiKey;
    this.env = env;
    this.name = name;
    this.logDir = logDir;
    this.child = null;
    this.exit = null;            // {code, signal} once it exited
  }

  async start({ timeoutMs = 120000 * slow } = {}) {
    this.port = await freePort();
    this.url = `http://127.0.0.1:${this.port}`;
    const argv = ['--host', '127.0.0.1', '--port', String(this.port)];
    for (const [id, dir] of this.models) argv.push('--model', `${id}=${dir}`);
    if (this.apiKey) argv.push('--api-key', this.apiKey);
    argv.push(...this.args);
    this.argv = argv;
    this.logFile = path.join(this.logDir, `${this.name}.log`);
    const log = fs.openSync(this.logFile, 'w');
    // The server's key comes from --api-key alone: a LLAISYS_API_KEY of the caller's is removed (an
    // empty one would be refused at start-up).
    const env = { ...process.env, ...this.env };
    if (!this.env || !('LLAISYS_API_KEY' in this.env)) delete env.LLAISYS_API_KEY;
    this.child = spawn(program('llaisys-server'), argv, { stdio: ['ignore', log, log], env });
    fs.closeSync(log);
    this.child.on('exit', (code, signal) => { this.exit = { code, signal }; });
    liveServers.add(this);
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.exit) throw new Error(`llaisys-server exited while starting (${JSON.stringify(this.exit)}):\n${this.logTail()}`);
      try {
        const res = await request(this, { path: '/ready', timeoutMs: 2000 });
        if (res.status === 200) return this;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`llaisys-server did not answer /ready 200 within ${timeoutMs} ms:\n${this.logTail()}`);
  }

  logTail(lines = 60) {
    try {
      return fs.readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  // Throws when the server is no longer running (it crashed).
  assertAlive() {
    if (this.exit) throw new Error(`llaisys-server died (${JSON.stringify(this.exit)}):\n${this.logTail()}`);
  }

  client(options = {}) {
    return new OpenAI({
      baseURL: `${this.url}/v1`,
      apiKey: this.apiKey || 'unused',
      maxRetries: 0,
      timeout: 120000 * slow,
      ...options,
    });
  }

  authHeaders() {
    return this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {};
  }

  // SIGTERM, then SIGKILL after a grace period. Returns the exit ({code, signal}).
  async stop({ graceMs = 10000 * slow } = {}) {
    liveServers.delete(this);
    if (!this.child) return null;
    if (!this.exit) {
      const exited = once(this.child, 'exit');
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => { if (!this.exit) this.child.kill('SIGKILL'); }, graceMs);
      await exited;
      clearTimeout(timer);
    }
    return this.exit;
  }
}

const liveServers = new Set();
process.on('exit', () => {
  for (const server of liveServers) server.child?.kill('SIGKILL');
});

// A suite's fixture: a temp dir with the models and one started server. `mock` and `mockContext`
// configure the mock model. Call fixture.close() in after(): it stops the server, checks that it
// exited cleanly (no crash, no sanitizer report), and removes the temp dir.
// `extraMocks` adds more mock models: {id: {mock: options, maxContext}}.
// Stops a suite's server and removes its directory (kept with LLAISYS_E2E_KEEP); throws when the
// server had died during the suite or exits uncleanly on SIGTERM.
export async function stopAndClean(server, dir) {
  const alive = server && !server.exit;
  const exit = await server?.stop();
  const log = server?.logTail(80);
  if (dir && !process.env.LLAISYS_E2E_KEEP) fs.rmSync(dir, { recursive: true, force: true });
  if (server && !alive) throw new Error(`llaisys-server had died during the suite (${JSON.stringify(exit)}):\n${log}`);
  if (exit && exit.code !== 0 && exit.signal !== 'SIGTERM') {
    throw new Error(`llaisys-server exited uncleanly on SIGTERM (${JSON.stringify(exit)}):\n${log}`);
  }
}

export async function startFixture(name, { args = [], apiKey, mock = {}, mockContext = 1024, extraMocks = {}, env = {} } = {}) {
  const dir = tempDir(name);
  const tiny = await makeTinyQwen2(dir);
  const mockDir = makeMock(dir, tiny, { mock: typeof mock === 'function' ? await mock(tiny) : mock, maxContext: mockContext });
  const models = [['tiny-qwen2', tiny], ['mock', mockDir]];
  const mockDirs = { mock: mockDir };
  for (const [id, options] of Object.entries(extraMocks)) {
    mockDirs[id] = makeMock(dir, tiny, { name: id, mock: options.mock ?? {}, maxContext: options.maxContext ?? 1024 });
    models.push([id, mockDirs[id]]);
  }
  // args: a list, or a function of the tiny Qwen2's directory returning one.
  const argv = typeof args === 'function' ? args(tiny) : args;
  const server = new Server({ models, args: argv, apiKey, env, name, logDir: dir });
  try {
    await server.start();
  } catch (error) {
    await server.stop();
    throw error;
  }
  return {
    dir, tiny, mockDir, mockDirs, server,
    close: () => stopAndClean(server, dir),
  };
}

// One HTTP request on a fresh connection. body: object (sent as JSON), string or Buffer.
// Resolves {status, headers, body (Buffer), text, json (or undefined)}.
export function request(server, { method = 'GET', path: urlPath, headers = {}, body, timeoutMs = 60000 * slow, auth = true } = {}) {
  return new Promise((resolve, reject) => {
    let payload;
    const allHeaders = { ...(auth ? server.authHeaders() : {}), ...headers };
    if (body !== undefined) {
      payload = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
      if (!Object.keys(allHeaders).some((h) => h.toLowerCase() === 'content-type')) {
        allHeaders['content-type'] = 'application/json';
      }
      allHeaders['content-length'] = payload.length;
    }
    const req = http.request({ host: '127.0.0.1', port: server.port, method, path: urlPath, headers: allHeaders, agent: false });
    const timer = setTimeout(() => req.destroy(new Error(`${method} ${urlPath}: no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (error) => { clearTimeout(timer); reject(error); });
    req.on('response', (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('error', (error) => { clearTimeout(timer); reject(error); });
      res.on('end', () => {
        clearTimeout(timer);
        const buffer = Buffer.concat(chunks);
        const text = buffer.toString('utf8');
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, body: buffer, text, json });
      });
    });
    req.end(payload);
  });
}

export const postJson = (server, urlPath, body, options = {}) =>
  request(server, { method: 'POST', path: urlPath, body, ...options });

// Raw bytes over a socket: writes `data` (string/Buffer, or an array of them written with
// `gapMs` between), then collects everything until the server closes or `timeoutMs` passes.
// Resolves {bytes (Buffer), text, closed (the server closed), elapsedMs, status (from the status line)}.
export function rawExchange(server, data, { timeoutMs = 10000 * slow, gapMs = 0, endAfterWrite = false } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1');
    const chunks = [];
    const start = Date.now();
    let closed = false;
    const parts = Array.isArray(data) ? data : [data];
    const timer = setTimeout(() => finish(), timeoutMs);
    function finish() {
      clearTimeout(timer);
      socket.destroy();
      const bytes = Buffer.concat(chunks);
      const text = bytes.toString('latin1');
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ bytes, text, closed, elapsedMs: Date.now() - start, status: match ? Number(match[1]) : undefined });
    }
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', () => { closed = true; finish(); });
    socket.on('close', () => { closed = true; finish(); });
    socket.on('error', (error) => {
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') { closed = true; finish(); } else { clearTimeout(timer); reject(error); }
    });
    socket.on('connect', async () => {
      for (let i = 0; i < parts.length; ++i) {
        if (i > 0 && gapMs > 0) await sleep(gapMs);
        if (socket.destroyed) return;
        socket.write(parts[i]);
      }
      if (endAfterWrite) socket.end();
    });
  });
}

// A streamed /v1/completions request on a raw socket (`headers`: extra header lines, e.g. the
// Authorization one, each ending in \r\n). `state` counts the bytes and SSE events read so far.
// socket.pause() stops reading from the kernel: the receive buffer fills, then the server's send
// buffer, then the server's writes make no progress (slow-reader tests).
export function rawStream(server, body, headers = '') {
  const payload = JSON.stringify(body);
  const socket = net.connect(server.port, '127.0.0.1');
  const state = { bytes: 0, events: 0, closed: false, tail: '', text: '' };
  socket.on('data', (d) => {
    const t = d.toString('latin1');
    state.bytes += d.length;
    state.text += t;
    const joined = state.tail + t;
    state.events += (joined.match(/data: /g) || []).length - (state.tail.match(/data: /g) || []).length;
    state.tail = joined.slice(-16);
  });
  socket.on('close', () => { state.closed = true; });
  socket.on('error', () => {});
  socket.write(`POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Content-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`);
  return { socket, state };
}

// The JSON body of a raw HTTP/1.1 response (Content-Length or chunked), or undefined.
export function rawResponseJson(bytes) {
  const text = bytes.toString('utf8');
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) return undefined;
  const head = text.slice(0, split).toLowerCase();
  let body = text.slice(split + 4);
  if (/transfer-encoding:\s*chunked/.test(head)) {
    let out = '';
    let rest = body;
    for (;;) {
      const eol = rest.indexOf('\r\n');
      if (eol < 0) break;
      const size = parseInt(rest.slice(0, eol), 16);
      if (!size) break;
      out += rest.slice(eol + 2, eol + 2 + size);
      rest = rest.slice(eol + 2 + size + 2);
    }
    body = out;
  }
  try { return JSON.parse(body); } catch { return undefined; }
}

export async function tokenize(server, model, input) {
  const body = typeof input === 'string' ? { model, prompt: input } : { model, ...input };
  const res = await postJson(server, '/tokenize', body);
  if (res.status !== 200) throw new Error(`/tokenize answered ${res.status}: ${res.text}`);
  return res.json.tokens;
}

// /metrics as {series: [{name, labels, value}], get(name, labels) -> number | undefined}.
export async function metrics(server) {
  const res = await request(server, { path: '/metrics' });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${res.text}`);
  return parseMetrics(res.text);
}

export function parseMetrics(text) {
  const series = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels = {};
    if (match[3]) {
      for (const pair of match[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]] = pair[2];
    }
    series.push({ name: match[1], labels, value: Number(match[4]) });
  }
  return {
    text,
    series,
    get(name, labels = {}) {
      const found = series.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
      return found?.value;
    },
  };
}

// Polls /metrics until `predicate(m)` holds; returns the last metrics. Throws with the last values
// after `timeoutMs`.
export async function waitForMetrics(server, predicate, { timeoutMs = 2000 * slow, intervalMs = 20, what = 'metrics condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await metrics(server);
    if (predicate(last)) return last;
    if (Date.now() > deadline) {
      const interesting = last.series.filter((s) => /running|waiting|kv_blocks/.test(s.name));
      throw new Error(`${what}: not reached within ${timeoutMs} ms; last values: ${JSON.stringify(interesting)}`);
    }
    await sleep(intervalMs);
  }
}

// The OpenAI error body shape: {"error": {"message", "type", "param", "code"}}.
export function errorShapeProblems(json, { type, code, param } = {}) {
  const problems = [];
  if (!json || typeof json !== 'object' || !json.error || typeof json.error !== 'object') {
    return [`body is not {"error": {...}}: ${JSON.stringify(json)}`];
  }
  const e = json.error;
  for (const key of ['message', 'type', 'param', 'code']) {
    if (!(key in e)) problems.push(`error.${key} is missing`);
  }
  if (typeof e.message !== 'string' || e.message.length === 0) problems.push('error.message is not a non-empty string');
  if (typeof e.type !== 'string') problems.push('error.type is not a string');
  if (type !== undefined && e.type !== type) problems.push(`error.type is ${JSON.stringify(e.type)}, expected ${JSON.stringify(type)}`);
  if (code !== undefined && e.code !== code) problems.push(`error.code is ${JSON.stringify(e.code)}, expected ${JSON.stringify(code)}`);
  if (param !== undefined && e.param !== param) problems.push(`error.param is ${JSON.stringify(e.param)}, expected ${JSON.stringify(param)}`);
  return problems;
}
