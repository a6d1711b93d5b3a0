// Talking to the server directly (not through the UI): references the specs compare the UI with.
import { API_KEY, BASE_URL } from "./env.mjs";
import { METRIC_KV_BLOCKS_USED, METRIC_RUNNING_REQUESTS, METRIC_WAITING_REQUESTS, tokenIdsFrom, tokenizeRequest } from "./server-contract.mjs";

function url(path) {
  return new URL(path, BASE_URL).toString();
}

function headers(extra = {}) {
  return { "Content-Type": "application/json", ...(API_KEY ? { Authorization: `Bearer ${API_KEY}` } : {}), ...extra };
}

async function postJson(path, body) {
  const response = await fetch(url(path), { method: "POST", headers: headers(), body: JSON.stringify(body) });
  const json = await response.json();
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(json)}`);
  return json;
}

export async function modelIds() {
  const response = await fetch(url("v1/models"));
  const json = await response.json();
  return json.data.map((m) => m.id);
}

// The non-streamed answer to the request the UI would send, as the independent reference.
// `reasoning` is the message's reasoning_content (undefined when the server sent none).
export async function referenceAnswer({ model, messages, max_tokens, temperature = 0, ...rest }) {
  const json = await postJson("v1/chat/completions", { model, messages, max_tokens, temperature, stream: false, ...rest });
  const message = json.choices[0].message;
  return { text: message.content, reasoning: message.reasoning_content ?? undefined, usage: json.usage, finishReason: json.choices[0].finish_reason };
}

export async function tokenize(model, text) {
  return tokenIdsFrom(await postJson("tokenize", tokenizeRequest(model, text)));
}

// Sum of every sample of a metric in the Prometheus text format (all label sets).
export function metricValue(text, name) {
  let total = 0;
  let found = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (match === null || match[1] !== name) continue;
    found = true;
    total += Number(match[3]);
  }
  if (!found) throw new Error(`metric ${name} is not in /metrics`);
  return total;
}

export async function serverLoad() {
  const text = await (await fetch(url("metrics"), { headers: headers() })).text();
  return {
    running: metricValue(text, METRIC_RUNNING_REQUESTS),
    waiting: metricValue(text, METRIC_WAITING_REQUESTS),
    kvBlocksUsed: metricValue(text, METRIC_KV_BLOCKS_USED),
  };
}

// Polls until `predicate(load)` holds; returns the last load seen, or throws after `timeoutMs`.
export async function waitForLoad(predicate, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  let load;
  for (;;) {
    load = await serverLoad();
    if (predicate(load)) return load;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(load)} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Starts a streaming request outside the browser and keeps it open until abort() (used to fill
// the server's capacity). Does not wait for the answer: a queued request may get its headers only
// when it starts running.
export function openBackgroundStream(model, maxTokens) {
  const controller = new AbortController();
  const done = fetch(url("v1/chat/completions"), {
    method: "POST",
    headers: headers(),
    body: JSON.stringify({ model, stream: true, max_tokens: maxTokens, messages: [{ role: "user", content: "Keep going for a while." }] }),
    signal: controller.signal,
  })
    .then((response) => response.body?.getReader().read())
    .catch(() => undefined);
  return { abort: () => (controller.abort(), done) };
}
