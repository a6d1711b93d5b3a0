#!/usr/bin/env node
// Server load benchmark (not a test): 1 / 8 / 32 concurrent streaming clients on the official
// openai client against a llaisys-server this script starts, then the offline engine
// (llaisys-offline generate) on the same requests in the same run, with the ratio at the highest
// concurrency.
//
//   node tests/e2e/server/bench/load.mjs --build build/ci [--shape qwen2-0.5b] [--clients 1,8,32]
//        [--prompt-tokens 128] [--max-tokens 128] [--threads 0] [--model DIR]
//   e.g. a quick check: --shape tiny --clients 1,4 --prompt-tokens 32 --max-tokens 16
//
// Workload at concurrency C: C completions requests sent at once, each a different synthetic
// prompt of --prompt-tokens token ids, --max-tokens new tokens, greedy, EOS ignored (ignore_eos),
// streamed with stream_options.include_usage. Reported per level: TTFT p50/p99 (request sent ->
// first token), inter-token latency p50/p99 (gaps between content chunks of a stream), and output
// tokens/s (all completion tokens / wall time from the first request to the last [DONE]). The
// offline run gets the same requests as one JSONL batch and reports its own generated tokens/s
// (llaisys-offline's summary: the batch's wall time, model loading excluded). Both use the engine's
// default flags (KV budget, batch tokens, block size) and the same --threads.
// Without --model the shape is generated once with llaisys-mkmodel (seed 0) into
// $XDG_CACHE_HOME/llaisys/models/bench-SHAPE (~/.cache/... by default), where llaisys-bench keeps it.

import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';

const { values: opts } = parseArgs({
  options: {
    build: { type: 'string' },
    shape: { type: 'string', default: 'qwen2-0.5b' },
    model: { type: 'string' },
    clients: { type: 'string', default: '1,8,32' },
    'prompt-tokens': { type: 'string', default: '128' },
    'max-tokens': { type: 'string', default: '128' },
    threads: { type: 'string', default: '0' },
  },
});
if (!opts.build) {
  console.error('usage: node bench/load.mjs --build BUILD_DIR [--shape S] [--model DIR] [--clients 1,8,32] [--prompt-tokens N] [--max-tokens N] [--threads N]');
  process.exit(2);
}
process.env.LLAISYS_BUILD_DIR = path.resolve(opts.build);
const { Server, program, tempDir } = await import('../lib/harness.mjs');
const { default: OpenAI } = await import('openai');
const execFileAsync = promisify(execFile);

const clients = opts.clients.split(',').map(Number);
const promptTokens = Number(opts['prompt-tokens']);
const maxTokens = Number(opts['max-tokens']);
const threads = Number(opts.threads);

async function modelDir() {
  if (opts.model) return path.resolve(opts.model);
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const dir = path.join(cache, 'llaisys', 'models', `bench-${opts.shape}`);
  if (!fs.existsSync(path.join(dir, 'config.json'))) {
    console.error(`generating the ${opts.shape} model in ${dir} ...`);
    await execFileAsync(program('llaisys-mkmodel'), ['--shape', opts.shape, '--seed', '0', '--force', dir]);
  }
  return dir;
}

// Deterministic token ids in [100, 149100), different for every stream (as llaisys-bench engine).
function syntheticTokens(stream, length) {
  const ids = [];
  let x = (BigInt(stream) * 0x9E3779B97F4A7C15n + 0xD1B54A32D192ED03n) & 0xFFFFFFFFFFFFFFFFn;
  for (let i = 0; i < length; ++i) {
    x ^= x >> 31n;
    x = (x * 0xBF58476D1CE4E5B9n) & 0xFFFFFFFFFFFFFFFFn;
    x ^= x >> 29n;
    ids.push(100 + Number(x % 149000n));
  }
  return ids;
}

const requestsFor = (count, salt) => Array.from({ length: count }, (_, i) => ({
  prompt: syntheticTokens(salt * 1000 + i, promptTokens), max_tokens: maxTokens, temperature: 0, ignore_eos: true,
}));

function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

async function streamOne(client, request) {
  const sent = performance.now();
  // logprobs: 0 makes every token visible as it is sampled: the random-weight shapes often generate
  // ids that decode to no text (held-back partial UTF-8, special tokens), and empty deltas are not sent.
  const stream = await client.completions.create({ model: 'bench', ...request, logprobs: 0, stream: true, stream_options: { include_usage: true } });
  let first;
  let last;
  const gaps = [];
  let tokens = 0;
  for await (const chunk of stream) {
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
    if (!chunk.choices.some((c) => c.text || c.logprobs?.tokens?.length)) continue;
    const now = performance.now();
    if (first === undefined) first = now; else gaps.push(now - last);
    last = now;
  }
  return { ttft: first - sent, gaps, tokens, end: last };
}

async function level(client, count, salt) {
  const requests = requestsFor(count, salt);
  const start = performance.now();
  const results = await Promise.all(requests.map((r) => streamOne(client, r)));
  const wall = (performance.now() - start) / 1000;
  const tokens = results.reduce((s, r) => s + r.tokens, 0);
  return {
    clients: count,
    ttftP50: percentile(results.map((r) => r.ttft), 50),
    ttftP99: percentile(results.map((r) => r.ttft), 99),
    itlP50: percentile(results.flatMap((r) => r.gaps), 50),
    itlP99: percentile(results.flatMap((r) => r.gaps), 99),
    tokens,
    wall,
    tokensPerSecond: tokens / wall,
  };
}

async function offline(dir, count, salt) {
  const work = tempDir('bench-offline');
  try {
    const input = path.join(work, 'requests.jsonl');
    const lines = requestsFor(count, salt).map((r) => JSON.stringify({ prompt_ids: r.prompt, max_tokens: r.max_tokens, temperature: 0, ignore_eos: true }));
    fs.writeFileSync(input, lines.join('\n') + '\n');
    const { stdout, stderr } = await execFileAsync(program('llaisys-offline'),
      ['--threads', String(threads), 'generate', '--model', dir, '--progress', 'off', input], { maxBuffer: 256 << 20 });
    const tokens = stdout.trim().split('\n').reduce((s, line) => s + JSON.parse(line).usage.completion_tokens, 0);
    const match = /time: ([\d.]+) s, generated tokens\/s: ([\d.]+)/.exec(stderr);
    if (!match) throw new Error(`no summary in llaisys-offline's output:\n${stderr}`);
    return { tokens, wall: Number(match[1]), tokensPerSecond: Number(match[2]) };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

const dir = await modelDir();
const logDir = tempDir('bench-server');
const maxClients = Math.max(...clients);
const server = new Server({
  models: [['bench', dir]],
  args: ['--model-threads', String(threads), '--max-running-requests', String(Math.max(64, maxClients)), '--max-queued-requests', String(Math.max(64, maxClients))],
  name: 'bench', logDir,
});
const fmt = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
try {
  await server.start({ timeoutMs: 600000 });
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 3600000 });
  console.log(`model: ${dir} (${opts.shape}); ${promptTokens}-token prompts, ${maxTokens} new tokens, greedy, EOS ignored; threads ${threads || 'all'}; ${os.cpus()[0]?.model} x${os.cpus().length}`);
  await client.completions.create({ model: 'bench', prompt: syntheticTokens(999, 16), max_tokens: 2, temperature: 0 }); // touch the weights
  const rows = [];
  for (const count of clients) {
    const row = await level(client, count, count);
    rows.push(row);
    console.log(`server, ${String(count).padStart(3)} clients: TTFT p50 ${fmt(row.ttftP50)} ms p99 ${fmt(row.ttftP99)} ms; ` +
      `inter-token p50 ${fmt(row.itlP50)} ms p99 ${fmt(row.itlP99)} ms; ${row.tokens} tokens in ${fmt(row.wall, 2)} s = ${fmt(row.tokensPerSecond, 2)} output tokens/s`);
  }
  const stop = await server.stop();
  if (stop && stop.code !== 0 && stop.signal !== 'SIGTERM') console.error(`warning: the server exited with ${JSON.stringify(stop)}`);
  const off = await offline(dir, maxClients, maxClients);
  const served = rows.find((r) => r.clients === maxClients);
  console.log(`offline, ${maxClients} requests: ${off.tokens} tokens in ${fmt(off.wall, 2)} s = ${fmt(off.tokensPerSecond, 2)} output tokens/s`);
  const ratio = served.tokensPerSecond / off.tokensPerSecond;
  console.log(`ratio at ${maxClients} clients: server / offline = ${fmt(ratio, 3)} (target >= 0.9: ${ratio >= 0.9 ? 'MET' : 'MISSED'})`);
  if (served.tokens !== off.tokens) console.log(`note: the server generated ${served.tokens} tokens, offline ${off.tokens}`);
} catch (error) {
  console.error(error);
  console.error(server.logTail(40));
  process.exitCode = 1;
} finally {
  await server.stop();
  fs.rmSync(logDir, { recursive: true, force: true });
}
