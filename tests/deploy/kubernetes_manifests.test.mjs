// The Kubernetes manifests of deploy/kubernetes against the facts of the server they deploy.
//
// Static part: every file parses (multi-document files too) and the objects agree with each other:
// the Service, PodDisruptionBudget, PodMonitor and InferencePool select the Deployment's pod
// labels and reach its container port; the HPA's metric is one the prometheus-adapter rule serves;
// the grace period covers the preStop sleep and --drain-timeout; threads and KV budget fit the
// container's resources; the model path lies on the models volume, whose claim exists.
//
// Live part: the real llaisys-server (LLAISYS_BIN_DIR) started with the Deployment's own args, the
// model directory swapped for the tiny Qwen2 of llaisys-mkmodel and three values swapped for this
// machine: --host 127.0.0.1, a free --port, --kv-cache-mb 64 (the pod's 3 GiB is not this
// machine's to take). A mock model that takes 1.5 s to load and 50 ms a step is added to the args,
// so that the loading phase can be watched and a request is still running when SIGTERM comes. The
// server must accept every other arg as it stands; each probe's path must answer as its probe
// expects (while loading /ready 503 and /health 200; once loaded both 200; during the drain after
// SIGTERM /ready 503 and /health 200); every metric the HPA, adapter, KEDA and InferencePool files
// name must be in /metrics with TYPE gauge and a series for the model; an in-flight stream must
// finish during the drain and the process exit 0 well inside terminationGracePeriodSeconds.
//
// Nothing here talks to a cluster: what Kubernetes, the adapter, KEDA or the gateway make of the
// files is not tested (deploy/kubernetes/README.md).
//
//   tests/deploy/run.sh BUILD_DIR        (sets LLAISYS_BIN_DIR, checks node and the npm packages)

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  makeMock, makeTinyQwen2, program, request, Server, sleep, slow, tempDir,
} from '../e2e/server/lib/harness.mjs';
import { checkCompletionChunks, checkSseBody, streamRequest } from '../e2e/server/lib/sse.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
// LLAISYS_K8S_MANIFESTS: another directory of the same files (to see a broken copy fail).
const manifestDir = path.resolve(process.env.LLAISYS_K8S_MANIFESTS || path.join(root, 'deploy/kubernetes'));
// The `yaml` package of the server e2e suites' lockfile (tests/e2e/server/node_modules), resolved
// from that folder as its own modules are.
const YAML = createRequire(path.join(root, 'tests/e2e/server/package.json'))('yaml');

// Files that are not Kubernetes objects: Helm values for prometheus-adapter.
const VALUES_FILES = new Set(['prometheus-adapter-values.yaml']);

// ---- loading ---------------------------------------------------------------------------------

function loadManifests() {
  const files = fs.readdirSync(manifestDir).filter((f) => /\.ya?ml$/.test(f)).sort();
  const docs = [];
  for (const file of files) {
    const text = fs.readFileSync(path.join(manifestDir, file), 'utf8');
    const parsed = YAML.parseAllDocuments(text, { prettyErrors: true });
    // parseAllDocuments returns an EmptyStream (no documents) for an empty file.
    const list = Array.isArray(parsed) ? parsed : [];
    for (const [index, doc] of list.entries()) {
      const problems = [...doc.errors, ...doc.warnings].map((e) => e.message);
      docs.push({ file, index, text, problems, value: problems.length ? undefined : doc.toJS() });
    }
  }
  return { files, docs };
}

const { files, docs } = loadManifests();
const objects = docs.filter((d) => d.value && !VALUES_FILES.has(d.file)).map((d) => ({ ...d.value, $file: d.file }));

function all(kind) {
  return objects.filter((o) => o.kind === kind);
}

function one(kind) {
  const found = all(kind);
  assert.equal(found.length, 1, `expected exactly one ${kind}, found ${found.length}`);
  return found[0];
}

function valuesOf(file) {
  const found = docs.filter((d) => d.file === file);
  assert.equal(found.length, 1, `${file}: expected one YAML document`);
  return found[0].value;
}

// ---- the Deployment's facts --------------------------------------------------------------------

// Each value given to `flag` in an argv (`--flag value` or `--flag=value`).
function flagValues(args, flag) {
  const values = [];
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === flag) values.push(args[i + 1]);
    else if (args[i].startsWith(`${flag}=`)) values.push(args[i].slice(flag.length + 1));
  }
  return values;
}

function flagValue(args, flag) {
  const values = flagValues(args, flag);
  assert.equal(values.length, 1, `the container args give ${flag} ${values.length} times (expected once): ${args.join(' ')}`);
  return values[0];
}

// Kubernetes quantities: CPU ("8", "500m") in cores, memory ("8Gi", "512M") in bytes.
function cpuCores(quantity) {
  const s = String(quantity);
  return s.endsWith('m') ? Number(s.slice(0, -1)) / 1000 : Number(s);
}

function memoryBytes(quantity) {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(quantity));
  assert.ok(match, `not a memory quantity: ${quantity}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[match[2]] ?? 1;
  return Number(match[1]) * unit;
}

function isSubset(selector, labels) {
  return Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);
}

const deployment = one('Deployment');
const podSpec = deployment.spec.template.spec;
const podLabels = deployment.spec.template.metadata.labels;
assert.equal(podSpec.containers.length, 1, 'the Deployment has one container');
const container = podSpec.containers[0];
const args = container.args.map(String);

// A probe's or Service's port (a number or the name of a container port) as a number.
function containerPort(port) {
  if (typeof port === 'number') return port;
  const named = (container.ports ?? []).find((p) => p.name === port);
  assert.ok(named, `no container port named ${JSON.stringify(port)}`);
  return named.containerPort;
}

const serverPort = Number(flagValue(args, '--port'));
const drainTimeout = Number(flagValue(args, '--drain-timeout'));
const preStopSleep = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
const grace = podSpec.terminationGracePeriodSeconds ?? 30;  // Kubernetes' default
const models = flagValues(args, '--model').map((spec) => {
  const eq = spec.indexOf('=');
  return eq < 0 ? { name: path.basename(spec), dir: spec } : { name: spec.slice(0, eq), dir: spec.slice(eq + 1) };
});

// The HPA's metric, as the adapter rule names it, back to the Prometheus series it comes from.
function adapterRules() {
  return valuesOf('prometheus-adapter-values.yaml').rules.custom.map((rule) => {
    const series = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(rule.seriesQuery)[1];
    const exposed = rule.name?.as ?? series;
    return { series, exposed, rule };
  });
}

// Metric names in a PromQL query or a comment: identifiers directly followed by `{`, and vllm:* names.
function metricNamesIn(text) {
  const names = new Set();
  for (const m of text.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{/g)) names.add(m[1]);
  for (const m of text.matchAll(/\bvllm:[a-z_]+/g)) names.add(m[0]);
  return [...names];
}

// ---- static checks -----------------------------------------------------------------------------

describe('the manifests parse and agree with each other', () => {
  test('every file parses, every document is a named Kubernetes object (or the adapter values)', () => {
    assert.ok(files.length >= 5, `only ${files.length} manifest files in ${manifestDir}`);
    for (const d of docs) {
      assert.deepEqual(d.problems, [], `${d.file} document ${d.index}: YAML problems`);
    }
    const seen = new Set();
    for (const o of objects) {
      assert.ok(o.apiVersion && o.kind, `${o.$file}: a document without apiVersion/kind`);
      if (o.kind === 'Kustomization') continue;
      assert.ok(o.metadata?.name, `${o.$file}: ${o.kind} without metadata.name`);
      const key = `${o.kind}/${o.metadata.name}`;
      assert.ok(!seen.has(key), `${key} is defined twice`);
      seen.add(key);
    }
  });

  test('kustomization.yaml lists files that exist and hold objects', () => {
    const kustomization = one('Kustomization');
    for (const resource of kustomization.resources) {
      assert.ok(files.includes(resource), `kustomization lists ${resource}, which is not in deploy/kubernetes`);
      assert.ok(objects.some((o) => o.$file === resource), `${resource} holds no object`);
    }
    assert.ok(kustomization.resources.includes('deployment.yaml'));
  });

  test('Deployment: selector, port, command, probes on /ready and /health', () => {
    assert.equal(deployment.apiVersion, 'apps/v1');
    assert.ok(isSubset(deployment.spec.selector.matchLabels, podLabels), 'the selector does not match the pod labels');
    assert.equal(path.basename(container.command[0]), 'llaisys-server');
    assert.equal(flagValue(args, '--host'), '0.0.0.0', 'a pod must listen on its pod IP, not loopback');
    assert.equal(containerPort('http'), serverPort, 'the container port named http is not --port');
    assert.equal(deployment.spec.replicas, undefined, 'replicas is set although the HPA owns the count');
    const probes = { startupProbe: '/ready', readinessProbe: '/ready', livenessProbe: '/health' };
    for (const [probe, expected] of Object.entries(probes)) {
      const spec = container[probe];
      assert.ok(spec?.httpGet, `${probe}: not an httpGet probe`);
      assert.equal(spec.httpGet.path, expected, `${probe} path`);
      assert.equal(containerPort(spec.httpGet.port), serverPort, `${probe} does not reach --port`);
      assert.ok((spec.timeoutSeconds ?? 1) < (spec.periodSeconds ?? 10), `${probe}: timeout not below the period`);
    }
    assert.ok(container.startupProbe.periodSeconds * container.startupProbe.failureThreshold >= 300,
      'the startup probe gives a model less than 5 minutes to load');
  });

  test('terminationGracePeriodSeconds > preStop sleep + --drain-timeout + the exit after a cut', () => {
    assert.ok(Number.isFinite(drainTimeout) && drainTimeout > 0, `--drain-timeout ${drainTimeout}`);
    // After the cut at --drain-timeout the server waits up to 5 s for the cut requests to take
    // their error event before it exits (docs/SERVER.md, Shutdown).
    const exitAfterCut = 5;
    assert.ok(grace > preStopSleep + drainTimeout + exitAfterCut,
      `grace ${grace} s <= preStop ${preStopSleep} s + drain ${drainTimeout} s + ${exitAfterCut} s: SIGKILL would cut the drain`);
    // The preStop hook is the kubelet's sleep action, which needs no binary in the image.
    assert.equal(container.lifecycle?.preStop?.exec, undefined, 'a preStop exec needs a sleep binary in the image');
  });

  test('threads and KV budget fit the container resources', () => {
    const cpuLimit = cpuCores(container.resources.limits.cpu);
    const modelThreads = Number(flagValue(args, '--model-threads'));
    assert.ok(modelThreads > 0, '--model-threads 0 means every core of the node, not the CPU limit');
    assert.ok(modelThreads <= cpuLimit, `--model-threads ${modelThreads} > CPU limit ${cpuLimit}`);
    const memoryLimit = memoryBytes(container.resources.limits.memory);
    const kvBytes = Number(flagValue(args, '--kv-cache-mb')) * 2 ** 20 * models.length;
    assert.ok(kvBytes < 0.75 * memoryLimit, `KV ${kvBytes} bytes leaves no room for weights in ${memoryLimit}`);
  });

  test('the models come from a read-only volume whose claim is defined', () => {
    const mount = container.volumeMounts.find((m) => m.name === 'models');
    assert.ok(mount?.readOnly, 'no read-only mount named models');
    assert.ok(models.length >= 1, 'no --model');
    for (const m of models) {
      assert.ok(m.dir.startsWith(`${mount.mountPath}/`), `--model ${m.name}=${m.dir} is not on ${mount.mountPath}`);
    }
    const volume = podSpec.volumes.find((v) => v.name === 'models');
    const claim = volume.persistentVolumeClaim?.claimName;
    assert.ok(claim, 'the models volume is not a PersistentVolumeClaim');
    assert.ok(all('PersistentVolumeClaim').some((p) => p.metadata.name === claim), `no PersistentVolumeClaim ${claim}`);
  });

  test('Service and PodDisruptionBudget select the pods; the Service reaches --port on a port named http', () => {
    const service = one('Service');
    assert.ok(isSubset(service.spec.selector, podLabels), 'the Service selector does not match the pod labels');
    const http = service.spec.ports.find((p) => p.name === 'http');
    assert.ok(http, 'no Service port named http');
    assert.equal(http.port, 8080);
    assert.equal(containerPort(http.targetPort ?? http.port), serverPort, 'the Service targetPort is not --port');
    const pdb = one('PodDisruptionBudget');
    assert.ok(isSubset(pdb.spec.selector.matchLabels, podLabels), 'the PDB selector does not match the pod labels');
  });

  test('HPA: autoscaling/v2 on the Deployment, a Pods metric the adapter rule serves', () => {
    const hpa = one('HorizontalPodAutoscaler');
    assert.equal(hpa.apiVersion, 'autoscaling/v2');
    assert.deepEqual([hpa.spec.scaleTargetRef.kind, hpa.spec.scaleTargetRef.name], ['Deployment', deployment.metadata.name]);
    assert.ok(hpa.spec.minReplicas >= 1 && hpa.spec.minReplicas <= hpa.spec.maxReplicas);
    const rules = adapterRules();
    for (const metric of hpa.spec.metrics) {
      assert.equal(metric.type, 'Pods');
      const name = metric.pods.metric.name;
      assert.ok(rules.some((r) => r.exposed === name), `no adapter rule exposes ${name}`);
      assert.equal(metric.pods.target.type, 'AverageValue');
    }
    for (const r of rules) {
      assert.ok(!r.exposed.includes(':'), `the adapter exposes ${r.exposed}: a colon in a custom metrics API name`);
      assert.deepEqual(r.rule.resources.overrides.pod, { resource: 'pod' });
    }
  });

  test('PodMonitor scrapes /metrics on the http port of the pods', () => {
    const monitor = one('PodMonitor');
    assert.ok(isSubset(monitor.spec.selector.matchLabels, podLabels));
    for (const endpoint of monitor.spec.podMetricsEndpoints) {
      assert.equal(containerPort(endpoint.port), serverPort);
      assert.equal(endpoint.path, '/metrics');
    }
  });

  test('KEDA ScaledObject: the Deployment, the kustomization namespace, the HPA bounds', () => {
    const scaled = one('ScaledObject');
    assert.equal(scaled.spec.scaleTargetRef.name, deployment.metadata.name);
    const hpa = one('HorizontalPodAutoscaler');
    assert.equal(scaled.spec.minReplicaCount, hpa.spec.minReplicas);
    assert.equal(scaled.spec.maxReplicaCount, hpa.spec.maxReplicas);
    const namespace = one('Kustomization').namespace;
    for (const trigger of scaled.spec.triggers) {
      assert.equal(trigger.type, 'prometheus');
      assert.match(trigger.metadata.query, new RegExp(`namespace="${namespace}"`));
    }
  });

  test('InferencePool (v1): selects the pods, targets --port, names an endpoint picker; the HTTPRoute uses it', () => {
    const pool = one('InferencePool');
    assert.equal(pool.apiVersion, 'inference.networking.k8s.io/v1');
    assert.deepEqual(Object.keys(pool.spec).sort(), ['endpointPickerRef', 'selector', 'targetPorts']);
    assert.deepEqual(Object.keys(pool.spec.selector), ['matchLabels'], 'v1 selectors hold matchLabels only');
    assert.ok(isSubset(pool.spec.selector.matchLabels, podLabels), 'the pool selector does not match the pod labels');
    assert.deepEqual(pool.spec.targetPorts, [{ number: serverPort }]);
    const epp = pool.spec.endpointPickerRef;
    assert.ok(epp.name, 'endpointPickerRef.name');
    assert.ok(['FailOpen', 'FailClose'].includes(epp.failureMode ?? 'FailClose'));
    const route = one('HTTPRoute');
    const refs = route.spec.rules.flatMap((r) => r.backendRefs);
    assert.ok(refs.some((r) => r.group === 'inference.networking.k8s.io' && r.kind === 'InferencePool'
      && r.name === pool.metadata.name), 'the HTTPRoute does not send traffic to the pool');
  });
});

// ---- the real server ---------------------------------------------------------------------------

// The Deployment's args for a run on this machine: host and port left to the harness (127.0.0.1 and
// a free port), model directories swapped, the KV budget made small; everything else verbatim.
function localArgs(modelDirs) {
  const out = [];
  for (let i = 0; i < args.length; ++i) {
    let [flag, value] = args[i].includes('=') && args[i].startsWith('--') ? args[i].split(/=(.*)/s) : [args[i], undefined];
    const inline = value !== undefined;
    const takesValue = !inline && i + 1 < args.length && !args[i + 1].startsWith('--');
    if (takesValue) value = args[++i];
    if (flag === '--host' || flag === '--port') continue;
    if (flag === '--model') {
      const name = value.includes('=') ? value.slice(0, value.indexOf('=')) : path.basename(value);
      value = `${name}=${modelDirs[name]}`;
    }
    if (flag === '--kv-cache-mb') value = '64';
    out.push(flag);
    if (value !== undefined) out.push(value);
  }
  return out;
}

async function probe(server, urlPath) {
  try {
    return (await request(server, { path: urlPath, timeoutMs: 2000 * slow })).status;
  } catch (error) {
    return error.code ?? error.message;
  }
}

describe('the Deployment args on the real llaisys-server', () => {
  const SLOW_STEP_MS = 50;
  const LOAD_DELAY_MS = 1500;
  const whileLoading = [];  // {ready, health} statuses sampled before /ready first answered 200
  let dir;
  let server;

  before(async () => {
    const help = execFileSync(program('llaisys-server'), ['--help'], { encoding: 'utf8' });
    for (const flag of args.filter((a) => a.startsWith('--')).map((a) => a.split('=')[0])) {
      assert.ok(help.includes(flag), `${program('llaisys-server')} --help does not list ${flag} (an older build?)`);
    }
    dir = tempDir('k8s-manifests');
    const tiny = await makeTinyQwen2(dir);
    const modelDirs = Object.fromEntries(models.map((m) => [m.name, tiny]));
    const slowMock = makeMock(dir, tiny, {
      name: 'slow', mock: { delay_ms_per_step: SLOW_STEP_MS, load_delay_ms: LOAD_DELAY_MS, eos_period: 0 },
    });
    server = new Server({ models: [], args: [...localArgs(modelDirs), '--model', `slow=${slowMock}`], name: 'server', logDir: dir });
    // start() resolves once /ready answers 200 (it throws when an arg is refused); meanwhile the
    // probes are sampled as the kubelet would while the slow mock loads.
    let loaded = false;
    const started = server.start().then(() => null, (error) => error).finally(() => { loaded = true; });
    while (!server.port && !loaded) await sleep(5);
    while (!loaded) {
      const [ready, health] = await Promise.all([probe(server, '/ready'), probe(server, '/health')]);
      if (ready === 200) break;  // loaded (start() notices at its next poll)
      whileLoading.push({ ready, health });
      await sleep(50);
    }
    const error = await started;
    if (error) throw error;
  });

  after(async () => {
    if (server && !server.exit) await server.stop();
    if (dir && !process.env.LLAISYS_E2E_KEEP) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('while a model loads: /ready 503 (startup and readiness probes fail), /health 200 (liveness passes)', () => {
    const listening = whileLoading.filter((s) => typeof s.ready === 'number');
    assert.ok(listening.length >= 3, `the loading phase was sampled ${listening.length} times: ${JSON.stringify(whileLoading)}`);
    for (const s of listening) {
      assert.equal(s.ready, 503, `/ready while loading: ${JSON.stringify(s)}`);
      assert.equal(s.health, 200, `/health while loading: ${JSON.stringify(s)}`);
    }
  });

  test('every probe path answers 200 once the models are loaded', async () => {
    for (const name of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      const status = await probe(server, container[name].httpGet.path);
      assert.equal(status, 200, `${name} ${container[name].httpGet.path}: ${status}`);
    }
  });

  test('every metric the HPA, adapter, KEDA and InferencePool files name is a gauge in /metrics with a series per model', async () => {
    const res = await request(server, { path: '/metrics' });
    assert.equal(res.status, 200, `/metrics: ${res.status}`);
    const types = new Map([...res.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
    const named = new Set([
      ...adapterRules().map((r) => r.series),
      ...one('ScaledObject').spec.triggers.flatMap((t) => metricNamesIn(t.metadata.query)),
      ...metricNamesIn(docs.find((d) => d.file === 'inferencepool.yaml').text),
    ]);
    assert.ok(named.has('llaisys_requests_waiting') && named.has('vllm:num_requests_waiting'));
    for (const name of named) {
      assert.equal(types.get(name), 'gauge', `${name}: TYPE ${types.get(name)} in /metrics`);
      if (name === 'vllm:cache_config_info') {
        const line = res.text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`model_name="${models[0].name}"`));
        assert.ok(line, `no ${name} series for ${models[0].name}`);
        assert.match(line, /block_size="\d+"/);
        assert.match(line, /num_gpu_blocks="\d+"/);
        continue;
      }
      const label = name.startsWith('vllm:') ? 'model_name' : 'model';
      const series = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\{${label}="${models[0].name}"\\} (\\S+)$`, 'm').exec(res.text);
      assert.ok(series, `no ${name}{${label}="${models[0].name}"} series`);
      const value = Number(series[1]);
      assert.ok(Number.isFinite(value) && value >= 0, `${name} = ${series[1]}`);
      if (/usage/.test(name)) assert.ok(value <= 1, `${name} = ${value} is not a 0-1 ratio`);
    }
  });

  test('SIGTERM drains: /ready 503 and /health 200 meanwhile, new requests refused, the running stream finishes, exit 0', async () => {
    const maxTokens = 60;  // ~3 s at 50 ms a step
    let signalled = null;
    const stream = streamRequest(server, '/v1/completions',
      { model: 'slow', prompt: 'a long answer', max_tokens: maxTokens, stream: true, temperature: 0 },
      {
        onChunk: () => {
          if (!signalled) {
            signalled = Date.now();
            server.child.kill('SIGTERM');
          }
        },
      });
    const exited = once(server.child, 'exit');
    while (!signalled) await sleep(10);

    // The drain is under way while the stream still has most of its tokens to go.
    const ready = await probe(server, '/ready');
    const health = await probe(server, '/health');
    const refused = await request(server, {
      method: 'POST', path: '/v1/completions', body: { model: 'slow', prompt: 'too late', max_tokens: 2 }, timeoutMs: 10000 * slow,
    }).catch((error) => ({ status: error.code ?? error.message }));
    const result = await stream;
    const streamEnded = Date.now();
    const [code, signal] = await exited;
    const exitedAt = Date.now();

    assert.equal(ready, 503, `/ready during the drain: ${ready} (the readiness probe must fail)`);
    assert.equal(health, 200, `/health during the drain: ${health} (the liveness probe must pass)`);
    assert.equal(refused.status, 503, `a new request during the drain: ${refused.status} ${refused.text ?? ''}`);
    assert.equal(result.status, 200);
    const sse = checkSseBody(result.bytes);
    assert.deepEqual(sse.problems, []);
    assert.deepEqual(sse.errors, [], 'the stream was cut although it ends well inside --drain-timeout');
    const chunks = checkCompletionChunks(sse.events, { chat: false });
    assert.deepEqual(chunks.problems, []);
    assert.equal(chunks.finishReasons[0], 'length');
    assert.deepEqual([code, signal], [0, null], `exit after the drain:\n${server.logTail()}`);
    assert.ok(streamEnded - signalled > 1000, 'the stream ended right after SIGTERM: it was not drained');
    assert.ok(exitedAt - streamEnded < 5000 * slow, `exited ${exitedAt - streamEnded} ms after the last stream ended`);
    assert.ok(exitedAt - signalled < (grace - preStopSleep) * 1000, 'the drain outlasted the grace period');
  });
});
