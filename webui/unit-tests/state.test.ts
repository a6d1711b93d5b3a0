// Conversation operations, request building, storage round trips and error classification.
import assert from "node:assert/strict";
import { test } from "node:test";
import { adviceFor, errorFromHttp, errorFromStreamEvent, parseRetryAfter } from "../src/api/errors";
import {
  appendUserMessage,
  buildChatRequestBody,
  createConversation,
  DEFAULT_SETTINGS,
  editUserMessage,
  titleFromText,
  truncateForRegenerate,
} from "../src/state/conversations";
import { BACKUP_KEY, loadState, parseState, serializeState, STORAGE_KEY } from "../src/state/storage";
import type { AppState, Conversation } from "../src/state/types";

function chat(): Conversation {
  const c = createConversation("m", { ...DEFAULT_SETTINGS, systemPrompt: "Be brief." }, 1000);
  appendUserMessage(c, "first", 1001);
  c.messages.push({ id: "a1", role: "assistant", content: "answer one", createdAt: 1002 });
  appendUserMessage(c, "second", 1003);
  c.messages.push({ id: "a2", role: "assistant", content: "answer two", createdAt: 1004 });
  return c;
}

test("the title follows the first message until renamed, and is cut at a word", () => {
  assert.equal(titleFromText("  hello\n  world "), "hello world");
  const long = "word ".repeat(30);
  const title = titleFromText(long);
  assert.ok(title.length <= 49 && title.endsWith("…") && !title.includes("wor…"), title);
  const c = chat();
  assert.equal(c.title, "first");
  c.titleEdited = true;
  editUserMessage(c, c.messages[0]!.id, "changed");
  assert.equal(c.title, "first");
});

test("the request carries the system prompt, the history and only the settings that are set", () => {
  const c = chat();
  c.settings.temperature = 0.5;
  c.settings.maxTokens = 64;
  c.settings.extraParams = '{"seed": 7, "model": "not this", "stream": false}';
  const built = buildChatRequestBody(c);
  assert.ok(built.ok);
  assert.deepEqual(built.body, {
    seed: 7,
    temperature: 0.5,
    max_tokens: 64,
    model: "m",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "first" },
      { role: "assistant", content: "answer one" },
      { role: "user", content: "second" },
      { role: "assistant", content: "answer two" },
    ],
    stream: true,
    stream_options: { include_usage: true },
  });
  c.settings.extraParams = "[1]";
  assert.equal(buildChatRequestBody(c).ok, false);
  c.settings.extraParams = "{nope";
  assert.equal(buildChatRequestBody(c).ok, false);
});

test("an answer's reasoning is never sent back: later requests carry its content only", () => {
  const c = chat();
  c.messages[1]!.reasoning = "The user said first; answer one.";
  const built = buildChatRequestBody(c);
  assert.ok(built.ok);
  const sent = built.body.messages as Record<string, unknown>[];
  assert.deepEqual(sent[2], { role: "assistant", content: "answer one" });
  assert.ok(!JSON.stringify(built.body).includes("The user said first"));
  // An answer stopped while it was still reasoning has no content: it is left out.
  c.messages.push({ id: "u3", role: "user", content: "third", createdAt: 1 });
  c.messages.push({ id: "a3", role: "assistant", content: "", reasoning: "Hmm", createdAt: 2, stopped: true });
  const again = buildChatRequestBody(c);
  assert.ok(again.ok);
  assert.equal((again.body.messages as unknown[]).length, 6);
});

test("stored reasoning is kept when it is text, dropped otherwise; old stats read without reasoning tokens", () => {
  const stored = (message: Record<string, unknown>) =>
    parseState(JSON.stringify({ version: 1, conversations: [{ id: "c", messages: [{ id: "u", role: "user", content: "q" }, { id: "a", role: "assistant", content: "x", ...message }] }] }))!
      .conversations[0]!.messages[1]!;
  assert.equal(stored({ reasoning: "thought" }).reasoning, "thought");
  assert.equal(stored({ reasoning: 42 }).reasoning, undefined);
  assert.equal(stored({ reasoning: { html: "<b>" } }).reasoning, undefined);
  assert.equal(stored({ reasoning: "" }).reasoning, undefined);
  assert.equal(stored({ stats: { completionTokens: 3 } }).stats?.reasoningTokens, null);
  assert.equal(stored({ stats: { completionTokens: 3, reasoningTokens: "many" } }).stats?.reasoningTokens, null);
  assert.equal(stored({ stats: { completionTokens: 3, reasoningTokens: 2 } }).stats?.reasoningTokens, 2);
  // A user message has no reasoning.
  const user = parseState(JSON.stringify({ version: 1, conversations: [{ id: "c", messages: [{ id: "u", role: "user", content: "q", reasoning: "x" }] }] }))!;
  assert.equal(user.conversations[0]!.messages[0]!.reasoning, undefined);
});

test("answers that failed before any text are not sent back to the model", () => {
  const c = chat();
  c.messages.push({ id: "u3", role: "user", content: "third", createdAt: 1 });
  c.messages.push({ id: "a3", role: "assistant", content: "", createdAt: 2, error: { kind: "network", status: null, message: "x", retryAfterSeconds: null } });
  const built = buildChatRequestBody(c);
  assert.ok(built.ok);
  assert.equal((built.body.messages as unknown[]).length, 6);
});

test("regenerate drops the answers after the last user message; edit drops everything after the edited one", () => {
  const c = chat();
  assert.ok(truncateForRegenerate(c));
  assert.deepEqual(c.messages.map((m) => m.content), ["first", "answer one", "second"]);
  const d = chat();
  assert.ok(editUserMessage(d, d.messages[0]!.id, "first, again"));
  assert.deepEqual(d.messages.map((m) => m.content), ["first, again"]);
  assert.equal(d.title, "first, again");
  assert.equal(editUserMessage(d, "no-such-id", "x"), false);
  assert.equal(truncateForRegenerate(createConversation("m", DEFAULT_SETTINGS)), false);
});

test("state survives a save/load round trip, and unreadable or hostile data is rejected or cleaned", () => {
  const state: AppState = { conversations: [chat()], activeConversationId: null, apiKey: "k", lastModel: "m" };
  state.activeConversationId = state.conversations[0]!.id;
  state.conversations[0]!.messages[1]!.stats = { promptTokens: 5, completionTokens: 3, cachedTokens: 0, tokensPerSecond: 12.5, timeToFirstTokenMs: 40, reasoningTokens: 2, approximate: false };
  state.conversations[0]!.messages[1]!.reasoning = "Let me think.";
  assert.deepEqual(parseState(serializeState(state)), state);

  assert.equal(parseState("not json"), null);
  assert.equal(parseState('{"version": 99, "conversations": []}'), null);
  const cleaned = parseState(
    JSON.stringify({
      version: 1,
      activeConversationId: "gone",
      conversations: [
        { id: "c1", messages: [{ id: "m1", role: "system", content: "x" }, { id: "m2", role: "user", content: 5 }, { id: "m3", role: "user", content: "ok" }], settings: { temperature: "hot" } },
        "junk",
        { id: 7 },
      ],
    }),
  );
  assert.ok(cleaned !== null);
  assert.equal(cleaned.conversations.length, 1);
  assert.deepEqual(cleaned.conversations[0]!.messages.map((m) => m.content), ["ok"]);
  assert.equal(cleaned.conversations[0]!.settings.temperature, null);
  assert.equal(cleaned.activeConversationId, "c1");
});

test("HTTP errors are classified and each kind says what to do", () => {
  const body = (message: string, code: string | null = null) => ({ error: { message, type: "invalid_request_error", param: null, code } });
  assert.equal(errorFromHttp(401, body("bad key", "invalid_api_key"), null).kind, "auth");
  const busy = errorFromHttp(429, body("slow down"), "3");
  assert.equal(busy.kind, "rate_limit");
  assert.equal(busy.retryAfterSeconds, 3);
  assert.match(adviceFor(busy).hint, /3 s/);
  assert.equal(errorFromHttp(503, null, null).kind, "overloaded");
  const ctx = errorFromHttp(400, body("This model's maximum context length is 1024 tokens", "context_length_exceeded"), null);
  assert.equal(ctx.kind, "context_length");
  assert.equal(ctx.message, "This model's maximum context length is 1024 tokens");
  assert.ok(adviceFor(ctx).actions.includes("edit-last"));
  assert.equal(errorFromHttp(400, body("temperature must be <= 2"), null).kind, "bad_request");
  assert.equal(errorFromHttp(500, "<html>oops</html>", null).kind, "server");
  assert.equal(errorFromStreamEvent({ error: { message: "engine failed", type: "server_error", code: null } }).kind, "stream");
  assert.equal(errorFromStreamEvent({ error: { message: "too long", code: "context_length_exceeded" } }).kind, "context_length");
  assert.ok(adviceFor(errorFromHttp(401, null, null)).actions.includes("api-key"));
});

test("Retry-After accepts seconds and HTTP dates", () => {
  assert.equal(parseRetryAfter("12"), 12);
  assert.equal(parseRetryAfter(new Date(Date.UTC(2030, 0, 1, 0, 0, 30)).toUTCString(), Date.UTC(2030, 0, 1, 0, 0, 0)), 30);
  assert.equal(parseRetryAfter("soon"), null);
  assert.equal(parseRetryAfter(null), null);
});

// A Storage with a quota, as a browser's localStorage has.
class QuotaStorage implements Storage {
  private items = new Map<string, string>();
  constructor(private readonly quota: number) {}
  get length(): number {
    return this.items.size;
  }
  clear(): void {
    this.items.clear();
  }
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  key(index: number): string | null {
    return [...this.items.keys()][index] ?? null;
  }
  removeItem(key: string): void {
    this.items.delete(key);
  }
  setItem(key: string, value: string): void {
    let used = key.length + value.length;
    for (const [k, v] of this.items) if (k !== key) used += k.length + v.length;
    if (used > this.quota) throw new Error("QuotaExceededError");
    this.items.set(key, value);
  }
}

test("unreadable saved chats are backed up, or left untouched when there is no room for a copy", () => {
  const unreadable = JSON.stringify({ version: 2, conversations: [], padding: "x".repeat(3000) });
  const roomy = new QuotaStorage(10_000);
  roomy.setItem(STORAGE_KEY, unreadable);
  const kept = loadState(roomy);
  assert.equal(kept.saveDisabled, false);
  assert.equal(roomy.getItem(BACKUP_KEY), unreadable);
  assert.match(kept.problem ?? "", /were kept/);

  const tight = new QuotaStorage(5_000);  // the data takes more than half of it: no second copy fits
  tight.setItem(STORAGE_KEY, unreadable);
  const untouched = loadState(tight);
  assert.equal(untouched.saveDisabled, true, "the session must not save over the only copy");
  assert.equal(tight.getItem(BACKUP_KEY), null);
  assert.match(untouched.problem ?? "", /no room to back them up/);
  assert.equal(tight.getItem(STORAGE_KEY), unreadable);
});
