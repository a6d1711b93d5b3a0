// Replicas behind HAProxy for the cluster suite and benchmark: N llaisys-servers (lib/harness.mjs's
// Server) and one HAProxy on deploy/haproxy/llaisys.cfg (rendered for N replicas by
// deploy/haproxy/render-config.sh, addresses and balance mode from the environment), started on free
// loopback ports and killed at exit; HAProxy's stats; each replica's prefix-cache counters; and the
// multi-turn chat workload (conversations sharing one system prompt, turns of one conversation in
// order) with its client-side measures.

import { execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Server, freePort, metrics, request, sleep, slow } from './harness.mjs';
import { checkCompletionChunks, checkSseBody, streamRequest } from './sse.mjs';

const execFileAsync = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
export const haproxyConfig = path.join(repoRoot, 'deploy/haproxy/llaisys.cfg');
const renderScript = path.join(repoRoot, 'deploy/haproxy/render-config.sh');

// The bounded-load factor of deploy/haproxy/llaisys.cfg, read from the file so that the bound the
// suite asserts follows the configuration.
export function hashBalanceFactor(config = haproxyConfig) {
  const match = /^\s*hash-balance-factor\s+(\d+)/m.exec(fs.readFileSync(config, 'utf8'));
  if (!match) throw new Error(`${config} has no hash-balance-factor line`);
  return Number(match[1]);
}

// The most requests one of `servers` equal-weight replicas can hold at once under HAProxy's bounded
// load (lb_chash.c, chash_server_is_eligible): a replica is eligible for a new request while it
// serves fewer than its slots, the ceil((in flight + 1) x factor / 100) total slots split in
// proportion to the weights, so at most ceil(total / servers) each. `peakInFlight` bounds
// "in flight + 1" (the backend's peak concurrent requests, the new one included).
export function boundedLoadLimit({ peakInFlight, factor, servers }) {
  const totalSlots = Math.ceil((peakInFlight * factor) / 100);
  return Math.max(1, Math.ceil(totalSlots / servers));
}

// The haproxy program: on PATH, or in the sbin directories Debian installs it to, which a normal
// user's PATH lacks. Throws when there is none that runs.
let haproxyProgram;
export function requireHaproxy() {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/sbin', '/usr/local/sbin', '/sbin'];
  const candidates = dirs.map((dir) => path.join(dir, 'haproxy')).filter((file) => fs.existsSync(file));
  for (const file of candidates) {
    try {
      const version = execFileSync(file, ['-v'], { encoding: 'utf8' }).split('\n')[0];
      haproxyProgram = file;
      return version;
    } catch {
      // not runnable: try the next
    }
  }
  throw new Error(`haproxy not found (looked on PATH and in /usr/sbin, /usr/local/sbin, /sbin): it is a declared ` +
    'dependency (scripts/debian-packages.txt); install it with scripts/install-deps.sh');
}

// Polls GET /ready until 200 (models loaded, not draining).
export async function waitReady(server, { timeoutMs = 120000 * slow } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    server.assertAlive();
    try {
      last = await request(server, { path: '/ready', timeoutMs: 2000 });
      if (last.status === 200) return;
    } catch (error) {
      last = { status: error.message };
    }
    await sleep(100);
  }
  throw new Error(`${server.name}: /ready not 200 within ${timeoutMs} ms (last: ${last?.status} ${last?.text ?? ''})`);
}

// N started replicas named `${name}-r1..N`, each ready.
export async function startReplicas(count, { models, args = [], logDir, name = 'replica' }) {
  const replicas = Array.from({ length: count }, (_, i) => new Server({ models, args, logDir, name: `${name}-r${i + 1}` }));
  try {
    await Promise.all(replicas.map((r) => r.start()));
    await Promise.all(replicas.map((r) => waitReady(r)));
  } catch (error) {
    await Promise.all(replicas.map((r) => r.stop()));
    throw error;
  }
  return replicas;
}

const liveBalancers = new Set();
process.on('exit', () => {
  for (const balancer of liveBalancers) balancer.child?.kill('SIGKILL');
});

// One HAProxy (-db: foreground, no daemon) in front of `replicas`, balancing with `balance`
// ('affinity' or 'roundrobin'). Its log (HAProxy's stdout: the request lines; stderr: alerts) is
// `${logDir}/${name}.log`. It looks like a Server to request() / streamRequest() (port, url,
// authHeaders).
export class Haproxy {
  constructor({ replicas, balance, logDir, name = `haproxy-${balance}` }) {
    this.replicas = replicas;
    this.balance = balance;
    this.logDir = logDir;
    this.name = name;
    this.child = null;
    this.exit = null;
  }

  authHeaders() { return {}; }

  async start({ timeoutMs = 30000 * slow } = {}) {
    this.port = await freePort();
    do this.statsPort = await freePort(); while (this.statsPort === this.port);
    this.url = `http://127.0.0.1:${this.port}`;
    const { stdout: config } = await execFileAsync('bash', [renderScript, String(this.replicas.length)]);
    this.configFile = path.join(this.logDir, `${this.name}.cfg`);
    fs.writeFileSync(this.configFile, config);
    const env = {
      ...process.env,
      LLAISYS_LB_BIND: `127.0.0.1:${this.port}`,
      LLAISYS_LB_STATS_BIND: `127.0.0.1:${this.statsPort}`,
      LLAISYS_LB_BALANCE: this.balance,
    };
    this.replicas.forEach((r, i) => { env[`LLAISYS_REPLICA_${i + 1}`] = `127.0.0.1:${r.port}`; });
    this.logFile = path.join(this.logDir, `${this.name}.log`);
    const log = fs.openSync(this.logFile, 'w');
    if (!haproxyProgram) requireHaproxy();
    this.child = spawn(haproxyProgram, ['-db', '-f', this.configFile], { stdio: ['ignore', log, log], env });
    fs.closeSync(log);
    this.child.on('exit', (code, signal) => { this.exit = { code, signal }; });
    liveBalancers.add(this);
    // Ready once every replica's health check passed (the roundrobin backend tracks the same state).
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      if (this.exit) throw new Error(`haproxy exited while starting (${JSON.stringify(this.exit)}):\n${this.logTail()}`);
      try {
        const servers = (await this.stats()).filter((s) => s.pxname === `llaisys_${this.balance}` && /^r\d+$/.test(s.svname));
        last = servers.map((s) => `${s.svname} ${s.status}`).join(', ');
        if (servers.length === this.replicas.length && servers.every((s) => s.status === 'UP')) return this;
      } catch (error) {
        last = error.message;
      }
      await sleep(100);
    }
    throw new Error(`haproxy: the replicas were not all UP within ${timeoutMs} ms (${last}):\n${this.logTail()}`);
  }

  // HAProxy's CSV statistics (stats page /stats;csv), one object per proxy / server row, numbers
  // as numbers: scur/smax (requests being served now / at most), stot (total), wretr (retries),
  // wredis (redispatches), status (UP, DOWN, ...).
  async stats() {
    const res = await request({ port: this.statsPort, authHeaders: () => ({}) }, { path: '/stats;csv', timeoutMs: 5000 });
    if (res.status !== 200) throw new Error(`haproxy stats answered ${res.status}`);
    const lines = res.text.trim().split('\n');
    const columns = lines[0].replace(/^# /, '').split(',');
    return lines.slice(1).map((line) => {
      const row = {};
      line.split(',').forEach((value, i) => {
        row[columns[i]] = value !== '' && /^-?\d+$/.test(value) ? Number(value) : value;
      });
      return row;
    });
  }

  // The rows of this HAProxy's backend: {backend, servers: {r1: row, ...}}.
  async backendStats() {
    const rows = (await this.stats()).filter((s) => s.pxname === `llaisys_${this.balance}`);
    const servers = {};
    for (const row of rows) if (/^r\d+$/.test(row.svname)) servers[row.svname] = row;
    return { backend: rows.find((r) => r.svname === 'BACKEND'), servers };
  }

  logTail(lines = 40) {
    try {
      return fs.readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  async stop() {
    liveBalancers.delete(this);
    if (!this.child || this.exit) return this.exit;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => { if (!this.exit) this.child.kill('SIGKILL'); }, 5000);
    await exited;
    clearTimeout(timer);
    return this.exit;
  }
}

// A replica's prefix-cache counters and served requests for `model`, read from its own /metrics
// (not through HAProxy). Counts are prompt tokens. The llaisys names are read first, vLLM's
// (model_name label) as the fallback.
export async function replicaCounters(server, model) {
  const m = await metrics(server);
  const pick = (llaisys, vllm) => m.get(llaisys, { model }) ?? m.get(vllm, { model_name: model });
  const counters = {
    queries: pick('llaisys_prefix_cache_queries_total', 'vllm:prefix_cache_queries_total'),
    hits: pick('llaisys_prefix_cache_hits_total', 'vllm:prefix_cache_hits_total'),
    requests: m.get('llaisys_requests_total', { model, status: '200' }) ?? 0,
    blockSize: m.get('llaisys_kv_block_size', { model }),
  };
  if (counters.queries === undefined || counters.hits === undefined) {
    throw new Error(`${server.name}: /metrics has no prefix-cache counters for model "${model}" ` +
      '(llaisys_prefix_cache_queries_total / _hits_total or vllm:prefix_cache_queries_total / _hits_total)');
  }
  return counters;
}

// Deterministic filler text: `words` words drawn from a small vocabulary by a seeded generator, so
// every conversation and turn has its own text, the same in every run.
const VOCABULARY = ('river mountain lantern copper garden window silver harbor meadow pencil thunder ' +
  'violet engine crystal forest market candle bridge orchard compass falcon marble winter ' +
  'signal planet ribbon anchor velvet canyon glacier harvest island jacket kettle ladder ' +
  'mirror needle ocean pillow quartz saddle tunnel umbrella valley wagon yellow zipper').split(' ');

export function fillerText(seed, words) {
  let x = (Math.imul(seed >>> 0, 2654435761) ^ 0x9e3779b9) >>> 0 || 1;  // xorshift32: never 0
  const out = [];
  for (let i = 0; i < words; ++i) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    out.push(VOCABULARY[x % VOCABULARY.length]);
  }
  return out.join(' ');
}

// One streamed chat request through `target`: resolves {status, replica (HAProxy's
// X-Llaisys-Replica), ttftMs, text, usage, error, startedAt, endedAt (performance.now() times)}.
// TTFT: request sent -> the first byte chunk that completes a delta with content, or the finish
// chunk when the answer has no visible text (random weights can sample only special tokens, which
// the server leaves out).
async function chatTurn(target, body) {
  const startedAt = performance.now();
  let firstContentAt;
  let seen = '';
  const response = await streamRequest(target, '/v1/chat/completions', body, {
    onChunk: (bytes) => {
      if (firstContentAt !== undefined) return;
      seen += bytes.toString('latin1');
      if (/"content":"[^"]|"finish_reason":"/.test(seen)) firstContentAt = performance.now();
    },
  });
  const result = { status: response.status, replica: response.headers['x-llaisys-replica'], startedAt, endedAt: performance.now() };
  if (response.status !== 200) return { ...result, error: `status ${response.status}: ${response.bytes.toString().slice(0, 300)}` };
  const sse = checkSseBody(response.bytes);
  const chunks = checkCompletionChunks(sse.events, { chat: true, includeUsage: true });
  const problems = [...sse.problems, ...sse.errors.map((e) => `error event: ${JSON.stringify(e)}`), ...chunks.problems];
  if (firstContentAt === undefined) problems.push('neither content nor a finish_reason seen');
  if (problems.length > 0) return { ...result, error: problems.join('; ') };
  return { ...result, ttftMs: firstContentAt - startedAt, text: chunks.texts[0], usage: chunks.usage };
}

// The multi-turn workload: `clients` clients at once, each holding `conversationsPerClient`
// conversations one after another, each of `turns` turns in order. Every conversation starts with
// `systemPrompt` and its own first user message of `firstWords` words; each later turn appends the
// assistant's reply and a new user message of `turnWords` words (or turnWords[k] before turn k + 1). Greedy, EOS ignored, so answer
// lengths are fixed: `maxTokens`, or with [min, max] a length per conversation and turn spread over
// that range, so that conversations drift out of step as real ones do (in lockstep, round robin
// would hand a conversation the same replica every turn). `onResult(result)` sees every finished
// request (the drain test counts them). Resolves {results, wallMs}; a failed request is a result
// with `error`, and ends its client.
export async function runConversations(target, {
  model, clients, conversationsPerClient = 1, turns, systemPrompt, firstWords, turnWords, maxTokens, thinkMs = [0, 0],
  seed = 1, onResult = () => {},
}) {
  const [least, most] = Array.isArray(maxTokens) ? maxTokens : [maxTokens, maxTokens];
  const mix = (...values) => values.reduce((h, v) => Math.imul(h ^ v, 2654435761) >>> 0, seed);
  const results = [];
  const startedAt = performance.now();

  // Resolves false when a turn failed.
  async function converse(c) {
    const messages = [
      { role: 'system', content: systemPrompt },
      { role: 'user', content: fillerText(mix(c, 0), firstWords) },
    ];
    for (let turn = 0; turn < turns; ++turn) {
      const body = {
        model, messages, max_tokens: least + (mix(c, turn, 1) % (most - least + 1)), temperature: 0, ignore_eos: true,
        stream: true, stream_options: { include_usage: true },
      };
      let result;
      try {
        result = await chatTurn(target, body);
      } catch (error) {
        result = { error: error.message, endedAt: performance.now() };
      }
      Object.assign(result, { conversation: c, turn, promptTokens: result.usage?.prompt_tokens,
        completionTokens: result.usage?.completion_tokens, cachedTokens: result.usage?.prompt_tokens_details?.cached_tokens });
      results.push(result);
      onResult(result);
      if (result.error) return false;
      messages.push({ role: 'assistant', content: result.text });
      const words = Array.isArray(turnWords) ? turnWords[turn] : turnWords;
      if (turn + 1 < turns) messages.push({ role: 'user', content: fillerText(mix(c, turn + 1), words) });
      await sleep(thinkMs[0] + (mix(c, turn, 2) % (thinkMs[1] - thinkMs[0] + 1)));
    }
    return true;
  }

  await Promise.all(Array.from({ length: clients }, async (_, client) => {
    for (let k = 0; k < conversationsPerClient; ++k) {
      if (!await converse(client * conversationsPerClient + k)) return;
    }
  }));
  return { results, wallMs: performance.now() - startedAt };
}

// Client-side numbers of one run: requests, failures, completion tokens, throughput, mean TTFT;
// how many conversations kept every turn on one replica, and how many turns went to the replica of
// the turn before (what a prefix-cache hit on the previous turn needs).
export function summarizeRun({ results, wallMs }) {
  const ok = results.filter((r) => !r.error);
  const completionTokens = ok.reduce((sum, r) => sum + (r.completionTokens ?? 0), 0);
  const replicas = new Map();  // conversation -> replica of each turn
  for (const r of ok) {
    if (!replicas.has(r.conversation)) replicas.set(r.conversation, []);
    replicas.get(r.conversation)[r.turn] = r.replica;
  }
  let sameAsBefore = 0;
  let laterTurns = 0;
  for (const turns of replicas.values()) {
    for (let t = 1; t < turns.length; ++t) {
      if (turns[t] === undefined || turns[t - 1] === undefined) continue;
      ++laterTurns;
      if (turns[t] === turns[t - 1]) ++sameAsBefore;
    }
  }
  return {
    requests: results.length,
    failed: results.length - ok.length,
    errors: results.filter((r) => r.error).map((r) => `conversation ${r.conversation} turn ${r.turn}: ${r.error}`),
    wallS: wallMs / 1000,
    completionTokens,
    tokensPerS: completionTokens / (wallMs / 1000),
    requestsPerS: ok.length / (wallMs / 1000),
    meanTtftMs: ok.reduce((sum, r) => sum + r.ttftMs, 0) / Math.max(1, ok.length),
    clientCachedTokens: ok.reduce((sum, r) => sum + (r.cachedTokens ?? 0), 0),
    clientPromptTokens: ok.reduce((sum, r) => sum + (r.promptTokens ?? 0), 0),
    stickyConversations: [...replicas.values()].filter((turns) => new Set(turns).size === 1).length,
    conversations: replicas.size,
    sameAsBefore,
    laterTurns,
  };
}

// Sums the replicas' counters (after - before): {queries, hits, hitRate, perReplica: [requests]}.
export function summarizeCounters(before, after) {
  const perReplica = after.map((a, i) => ({
    queries: a.queries - before[i].queries,
    hits: a.hits - before[i].hits,
    requests: a.requests - before[i].requests,
  }));
  const queries = perReplica.reduce((sum, r) => sum + r.queries, 0);
  const hits = perReplica.reduce((sum, r) => sum + r.hits, 0);
  return { queries, hits, hitRate: queries > 0 ? hits / queries : 0, perReplica };
}
