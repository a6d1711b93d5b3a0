// Suite: llaisys-server replicas behind HAProxy (deploy/haproxy/llaisys.cfg). Three replicas of the
// tiny Qwen2 on loopback ports and the same multi-turn chat workload, first behind the affinity
// backend (consistent hash of each conversation's first messages, bounded load), then behind round
// robin on fresh replicas (empty caches). Each replica's own /metrics gives the prefix-cache
// counters: affinity must at least double the hit rate, no replica may hold more requests at once
// than the bounded load allows, and no request may fail. Then a drain: SIGTERM to one replica
// while the workload runs must cost no client request, and the replica exits 0 within its
// --drain-timeout.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import { makeTinyQwen2, metrics, sleep, slow, tempDir } from '../lib/harness.mjs';
import {
  Haproxy, boundedLoadLimit, hashBalanceFactor, replicaCounters, requireHaproxy, runConversations,
  startReplicas, summarizeCounters, summarizeRun,
} from '../lib/cluster.mjs';

const MODEL = 'tiny-qwen2';
const REPLICAS = 3;
const DRAIN_TIMEOUT_S = 20;
// 24 clients at once, one shared system prompt, each client 4 conversations of 4 turns in turn
// (each turn the whole history so far), a random think time between turns. Why this shape:
//   - a turn hits the cache for the turns before it only on a replica that served one of them:
//     affinity always (bar bounded-load moves), round robin with chance 1/3 for the turn before
//     and more for older ones, so with 4 turns on 3 replicas the ratio of hit rates to expect is
//     about 2.5 when each turn adds much more than the turns before it (here: a short question, a
//     follow-up, a pasted 400-word document, a short question; 2.4-2.75 measured), about 2.2
//     when turns are alike;
//   - round robin's hits are one chance in 3 per turn: 24 conversations (72 later turns) move its
//     hit rate by +-15% from run to run, too much against a 2x bound, 96 about half that;
//   - think times (0-200 ms) and answer lengths (24-48 tokens) differ per turn, so conversations
//     drift out of step: in lockstep, 24 clients on 3 replicas would get round robin's same
//     replica every turn;
//   - the system prompt is shorter than a KV block (prefix hits are whole 16-token blocks), so
//     the hits measure the conversations' own history, not a prefix every replica caches anyway.
const WORKLOAD = {
  model: MODEL,
  clients: 24,
  conversationsPerClient: 4,
  turns: 4,
  systemPrompt: 'You are a concise assistant.',
  firstWords: 6,
  turnWords: [40, 400, 20],
  maxTokens: [24, 48],
  thinkMs: [0, 200],
};
const TOTAL_REQUESTS = WORKLOAD.clients * WORKLOAD.conversationsPerClient * WORKLOAD.turns;
// Few threads each: three replicas share the machine (the test machines have 2 cores).
const REPLICA_ARGS = ['--model-threads', '1', '--threads', '1', '--worker-threads', '1',
  '--drain-timeout', String(DRAIN_TIMEOUT_S)];

let dir;
let tiny;
const started = [];  // replicas and balancers still to stop in after()

before(async () => {
  console.log(requireHaproxy());
  dir = tempDir('cluster');
  tiny = await makeTinyQwen2(dir);
});

after(async () => {
  for (const proc of started) await proc.stop();
  if (dir && !process.env.LLAISYS_E2E_KEEP) fs.rmSync(dir, { recursive: true, force: true });
});

async function startCluster(balance, name) {
  const replicas = await startReplicas(REPLICAS, { models: [[MODEL, tiny]], args: REPLICA_ARGS, logDir: dir, name });
  started.push(...replicas);
  const balancer = new Haproxy({ replicas, balance, logDir: dir, name: `${name}-haproxy` });
  started.push(balancer);
  await balancer.start();
  return { replicas, balancer };
}

// Stops a cluster; every replica that was still running must exit 0 on SIGTERM (its drain).
async function stopCluster({ replicas, balancer }) {
  await balancer.stop();
  for (const replica of replicas) {
    const wasAlive = !replica.exit;
    const exit = await replica.stop();
    assert.ok(wasAlive, `${replica.name} died during the run (${JSON.stringify(exit)}):\n${replica.logTail()}`);
    assert.equal(exit.code, 0, `${replica.name} exited ${JSON.stringify(exit)} on SIGTERM:\n${replica.logTail()}`);
  }
}

async function runMode(balance) {
  const cluster = await startCluster(balance, balance);
  try {
    const before = await Promise.all(cluster.replicas.map((r) => replicaCounters(r, MODEL)));
    const run = await runConversations(cluster.balancer, { ...WORKLOAD, seed: 1 });
    const after = await Promise.all(cluster.replicas.map((r) => replicaCounters(r, MODEL)));
    return {
      balance,
      factor: hashBalanceFactor(cluster.balancer.configFile),
      client: summarizeRun(run),
      counters: summarizeCounters(before, after),
      blockSize: after[0].blockSize,
      lb: await cluster.balancer.backendStats(),
    };
  } finally {
    await stopCluster(cluster);
  }
}

function report(mode) {
  const { client, counters, lb } = mode;
  const perReplica = counters.perReplica.map((r, i) => {
    const row = lb.servers[`r${i + 1}`];
    return `r${i + 1} ${r.requests} requests (hits ${r.hits}/${r.queries}, at most ${row.smax} at once)`;
  }).join('; ');
  console.log(`${mode.balance.padEnd(10)} hit rate ${(counters.hitRate * 100).toFixed(1)}% ` +
    `(${counters.hits}/${counters.queries} prompt tokens, block size ${mode.blockSize ?? '?'}); ` +
    `${client.requests} requests, ${client.failed} failed, ${client.requestsPerS.toFixed(2)} requests/s, ` +
    `${client.tokensPerS.toFixed(1)} generated tokens/s, mean TTFT ${client.meanTtftMs.toFixed(1)} ms, ` +
    `${client.sameAsBefore}/${client.laterTurns} turns on the replica of the turn before, ` +
    `${client.stickyConversations}/${client.conversations} conversations on one replica; ` +
    `client cached_tokens ${client.clientCachedTokens}/${client.clientPromptTokens}; ` +
    `peak in flight ${lb.backend.smax}; ${perReplica}`);
}

test('affinity doubles the prefix-cache hit rate of round robin, within the bounded load, no request fails', async () => {
  const affinity = await runMode('affinity');
  report(affinity);
  const roundrobin = await runMode('roundrobin');
  report(roundrobin);
  const ratio = affinity.counters.hitRate / roundrobin.counters.hitRate;
  console.log(`affinity / roundrobin: hit rate x${ratio.toFixed(2)}, ` +
    `throughput x${(affinity.client.tokensPerS / roundrobin.client.tokensPerS).toFixed(2)}, ` +
    `mean TTFT x${(affinity.client.meanTtftMs / roundrobin.client.meanTtftMs).toFixed(2)}`);

  for (const mode of [affinity, roundrobin]) {
    assert.equal(mode.client.failed, 0, `${mode.balance}: failed requests:\n${mode.client.errors.join('\n')}`);
    assert.equal(mode.client.requests, TOTAL_REQUESTS, `${mode.balance}: ${mode.client.requests} requests, expected ${TOTAL_REQUESTS}`);
    const served = mode.counters.perReplica.reduce((sum, r) => sum + r.requests, 0);
    assert.equal(served, TOTAL_REQUESTS, `${mode.balance}: the replicas counted ${served} requests (status 200), the client sent ${TOTAL_REQUESTS}`);
    assert.ok(mode.counters.queries > 0, `${mode.balance}: no prefix-cache lookups counted`);
  }
  assert.ok(affinity.counters.hitRate >= 2 * roundrobin.counters.hitRate,
    `affinity hit rate ${affinity.counters.hitRate.toFixed(3)} is not at least twice round robin's ${roundrobin.counters.hitRate.toFixed(3)}`);

  // The bounded load caps what a replica holds at once, relative to what the backend holds at once
  // (lib/cluster.mjs, boundedLoadLimit); every replica must have been used.
  const { factor } = affinity;
  const limit = boundedLoadLimit({ peakInFlight: affinity.lb.backend.smax, factor, servers: REPLICAS });
  console.log(`bounded load: hash-balance-factor ${factor}, peak ${affinity.lb.backend.smax} in flight -> at most ${limit} per replica`);
  for (const [name, row] of Object.entries(affinity.lb.servers)) {
    assert.ok(row.smax <= limit, `affinity: ${name} held ${row.smax} requests at once, the bounded load allows ${limit}`);
  }
  for (const [i, r] of affinity.counters.perReplica.entries()) {
    assert.ok(r.requests > 0, `affinity: replica r${i + 1} got no request`);
  }
});

test(`drain under load: SIGTERM to one replica costs no request, it exits 0 within --drain-timeout ${DRAIN_TIMEOUT_S}s`, async () => {
  const cluster = await startCluster('affinity', 'drain');
  const victim = cluster.replicas[0];  // r1 in HAProxy
  let finished = 0;
  const workload = runConversations(cluster.balancer, { ...WORKLOAD, seed: 2, onResult: () => { ++finished; } });

  // Mid-run, at a moment the victim is generating.
  while (finished < TOTAL_REQUESTS / 3) await sleep(10);
  let inFlight = 0;
  const deadline = Date.now() + 30000 * slow;
  while (inFlight === 0 && Date.now() < deadline) {
    const m = await metrics(victim);
    inFlight = (m.get('llaisys_requests_running', { model: MODEL }) ?? 0) + (m.get('llaisys_requests_waiting', { model: MODEL }) ?? 0);
  }
  assert.ok(inFlight > 0, 'the victim replica never had a request in flight to drain');
  const exited = once(victim.child, 'exit');
  const signalledAt = performance.now();
  victim.child.kill('SIGTERM');
  const [code, signal] = await exited;
  const drainMs = performance.now() - signalledAt;
  const run = await workload;
  const client = summarizeRun(run);
  const { backend, servers } = await cluster.balancer.backendStats();

  // The victim refuses whatever reaches it after SIGTERM (HAProxy retries it elsewhere), so a
  // request it answered that ended after the signal was in flight there when the drain began.
  const afterSignal = run.results.filter((r) => r.endedAt > signalledAt);
  const finishedOnVictim = afterSignal.filter((r) => r.replica === 'r1' && !r.error && r.startedAt < signalledAt);
  console.log(`drain: ${inFlight} requests in flight on r1 at SIGTERM, ${finishedOnVictim.length} streams from it finished ` +
    `afterwards; it exited ${JSON.stringify({ code, signal })} after ${drainMs.toFixed(0)} ms; HAProxy retries ${backend.wretr}, ` +
    `redispatches ${backend.wredis}; r1 ${servers.r1.status}; ${client.requests} requests, ${client.failed} failed; ` +
    `per replica ${Object.entries(servers).map(([n, s]) => `${n} ${s.stot}`).join(', ')}`);

  try {
    assert.equal(client.failed, 0, `failed requests during the drain:\n${client.errors.join('\n')}`);
    assert.equal(client.requests, TOTAL_REQUESTS, `${client.requests} requests, expected ${TOTAL_REQUESTS}`);
    assert.equal(code, 0, `the drained replica exited ${JSON.stringify({ code, signal })}:\n${victim.logTail()}`);
    assert.ok(drainMs < DRAIN_TIMEOUT_S * 1000, `the drain took ${drainMs.toFixed(0)} ms, over --drain-timeout ${DRAIN_TIMEOUT_S}s`);
    assert.ok(finishedOnVictim.length > 0, 'no stream of the victim was in flight at SIGTERM and finished afterwards');
    assert.ok(afterSignal.some((r) => r.replica !== 'r1'), 'nothing was served after SIGTERM');
  } finally {
    await stopCluster({ replicas: cluster.replicas.slice(1), balancer: cluster.balancer });
  }
});
