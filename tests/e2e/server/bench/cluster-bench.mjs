#!/usr/bin/env node
// Cluster benchmark (not a test): the cluster suite's multi-turn chat workload at benchmark scale,
// on N llaisys-server replicas of the qwen2-0.5b shape behind HAProxy (deploy/haproxy/llaisys.cfg),
// first with conversation affinity, then round robin on fresh replicas (empty prefix caches), in
// one run. Prints, per mode, the prefix-cache hit rate summed over the replicas' own /metrics,
// generated tokens/s and requests/s (client side, wall time of the workload), mean TTFT (request
// sent -> first content delta of the stream), the requests each replica served; then the ratios.
//
//   node tests/e2e/server/bench/cluster-bench.mjs --build build/ci [--shape qwen2-0.5b] [--model DIR]
//        [--replicas 3] [--threads 1] [--clients 24] [--conversations-per-client 2] [--turns 4]
//        [--first-words 6] [--turn-words 40,400,20] [--max-tokens 24,48] [--think-ms 0,200]
//   e.g. a quick check: --shape tiny --clients 6
//
// Workload (the cluster suite's, lib/cluster.mjs runConversations): --clients clients at once, each
// holding --conversations-per-client conversations in turn; every conversation starts with one
// shared system prompt (shorter than a KV block) and its own first user message of --first-words
// words, then each turn appends the answer and the next user message (--turn-words: the words of
// each, or one number for all; by default a follow-up, a pasted document, a short question).
// Greedy, EOS ignored, answer lengths and think times per turn spread over --max-tokens and
// --think-ms (min,max), the same in both modes. --threads is each replica's --model-threads: the
// replicas share the machine's cores. Without --model the shape is generated once (seed 0, with its
// tokenizer) into $XDG_CACHE_HOME/llaisys/models/bench-SHAPE-chat.

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
    replicas: { type: 'string', default: '3' },
    threads: { type: 'string', default: '1' },
    clients: { type: 'string', default: '24' },
    'conversations-per-client': { type: 'string', default: '2' },
    turns: { type: 'string', default: '4' },
    'first-words': { type: 'string', default: '6' },
    'turn-words': { type: 'string', default: '40,400,20' },
    'max-tokens': { type: 'string', default: '24,48' },
    'think-ms': { type: 'string', default: '0,200' },
  },
});
if (!opts.build) {
  console.error('usage: node bench/cluster-bench.mjs --build BUILD_DIR [--shape S] [--model DIR] [--replicas N] [--threads N] ' +
    '[--clients N] [--conversations-per-client N] [--turns N] [--first-words N] [--turn-words N[,N...]] ' +
    '[--max-tokens MIN,MAX] [--think-ms MIN,MAX]');
  process.exit(2);
}
process.env.LLAISYS_BUILD_DIR = path.resolve(opts.build);
const { program, tempDir } = await import('../lib/harness.mjs');
const cluster = await import('../lib/cluster.mjs');
const execFileAsync = promisify(execFile);

const MODEL = 'bench';
const replicaCount = Number(opts.replicas);
const numbers = (text) => text.split(',').map(Number);
const range = (text) => { const [least, most = least] = numbers(text); return [least, most]; };
const turnWords = numbers(opts['turn-words']);
const workload = {
  model: MODEL,
  clients: Number(opts.clients),
  conversationsPerClient: Number(opts['conversations-per-client']),
  turns: Number(opts.turns),
  systemPrompt: 'You are a concise assistant.',
  firstWords: Number(opts['first-words']),
  turnWords: turnWords.length === 1 ? turnWords[0] : turnWords,
  maxTokens: range(opts['max-tokens']),
  thinkMs: range(opts['think-ms']),
};

// Chat needs the tokenizer files, which the token-id benchmarks' copy of the shape may lack, so
// this one has its own directory.
async function modelDir() {
  if (opts.model) return path.resolve(opts.model);
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const dir = path.join(cache, 'llaisys', 'models', `bench-${opts.shape}-chat`);
  if (!fs.existsSync(path.join(dir, 'config.json')) || !fs.existsSync(path.join(dir, 'tokenizer.json'))) {
    console.error(`generating the ${opts.shape} model in ${dir} ...`);
    await execFileAsync(program('llaisys-mkmodel'), ['--shape', opts.shape, '--seed', '0', '--force', dir]);
  }
  return dir;
}

async function runMode(balance, model, logDir) {
  const replicas = await cluster.startReplicas(replicaCount, {
    models: [[MODEL, model]], args: ['--model-threads', opts.threads], logDir, name: balance,
  });
  const balancer = new cluster.Haproxy({ replicas, balance, logDir });
  try {
    await balancer.start();
    const before = await Promise.all(replicas.map((r) => cluster.replicaCounters(r, MODEL)));
    const run = await cluster.runConversations(balancer, { ...workload, seed: 1 });
    const after = await Promise.all(replicas.map((r) => cluster.replicaCounters(r, MODEL)));
    return { balance, client: cluster.summarizeRun(run), counters: cluster.summarizeCounters(before, after), lb: await balancer.backendStats() };
  } finally {
    await balancer.stop();
    await Promise.all(replicas.map((r) => r.stop({ graceMs: 60000 })));
  }
}

function print(mode) {
  const { client, counters } = mode;
  console.log(`${mode.balance.padEnd(10)} hit rate ${(counters.hitRate * 100).toFixed(1)}% (${counters.hits}/${counters.queries} prompt tokens), ` +
    `${client.tokensPerS.toFixed(1)} generated tokens/s, ${client.requestsPerS.toFixed(3)} requests/s, ` +
    `mean TTFT ${client.meanTtftMs.toFixed(0)} ms, wall ${client.wallS.toFixed(1)} s, ${client.failed} failed, ` +
    `${client.sameAsBefore}/${client.laterTurns} turns on the replica of the turn before; requests per replica ` +
    `${counters.perReplica.map((r) => r.requests).join(' / ')}`);
}

cluster.requireHaproxy();
const model = await modelDir();
const logDir = tempDir('cluster-bench');
console.log(`model ${model}, ${replicaCount} replicas x --model-threads ${opts.threads}, ${os.cpus().length} cores; ` +
  `${workload.clients} clients x ${workload.conversationsPerClient} conversations x ${workload.turns} turns, ` +
  `first message ${workload.firstWords} words, then ${opts['turn-words']} words, answers of ${opts['max-tokens']} tokens, ` +
  `think ${opts['think-ms']} ms; logs in ${logDir}`);
const affinity = await runMode('affinity', model, logDir);
print(affinity);
const roundrobin = await runMode('roundrobin', model, logDir);
print(roundrobin);
console.log(`affinity / roundrobin: hit rate x${(affinity.counters.hitRate / roundrobin.counters.hitRate).toFixed(2)}, ` +
  `tokens/s x${(affinity.client.tokensPerS / roundrobin.client.tokensPerS).toFixed(2)}, ` +
  `requests/s x${(affinity.client.requestsPerS / roundrobin.client.requestsPerS).toFixed(2)}, ` +
  `mean TTFT x${(affinity.client.meanTtftMs / roundrobin.client.meanTtftMs).toFixed(2)}`);
const failed = affinity.client.failed + roundrobin.client.failed;
if (failed > 0) {
  console.error([...affinity.client.errors, ...roundrobin.client.errors].join('\n'));
  process.exitCode = 1;
}
if (!process.env.LLAISYS_E2E_KEEP) fs.rmSync(logDir, { recursive: true, force: true });
