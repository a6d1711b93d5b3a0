// Export and import of conversations (state/transfer.ts): the file round trip, refusal of anything
// that is not a valid export (changing nothing), and id clashes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { appendUserMessage, createConversation, DEFAULT_SETTINGS } from "../src/state/conversations";
import { emptyState, parseState, serializeState } from "../src/state/storage";
import { describeImport, EXPORT_FORMAT, exportFileName, exportFileText, mergeImported, parseExportFile } from "../src/state/transfer";
import type { AppState, Conversation } from "../src/state/types";

function chat(title: string, updatedAt: number): Conversation {
  const c = createConversation("mock", { ...DEFAULT_SETTINGS, systemPrompt: `You are ${title}.`, temperature: 0.2 }, updatedAt - 10);
  appendUserMessage(c, title, updatedAt - 5);
  c.messages.push({
    id: `a-${title}`,
    role: "assistant",
    content: `answer to ${title}`,
    reasoning: "thinking first",
    createdAt: updatedAt - 4,
    model: "mock",
    finishReason: "stop",
    stats: { promptTokens: 9, completionTokens: 4, cachedTokens: 0, tokensPerSecond: 20, timeToFirstTokenMs: 12, reasoningTokens: 2, approximate: false },
  });
  c.updatedAt = updatedAt;
  return c;
}

function stateWith(...conversations: Conversation[]): AppState {
  return { ...emptyState(), conversations, activeConversationId: conversations[0]?.id ?? null };
}

test("an exported file reads back as exactly the same conversations", () => {
  const chats = [chat("alpha", 3000), chat("beta", 2000)];
  const text = exportFileText(chats, new Date("2025-01-02T03:04:05Z"));
  const file = JSON.parse(text);
  assert.equal(file.format, EXPORT_FORMAT);
  assert.equal(file.version, 1);
  assert.equal(file.exportedAt, "2025-01-02T03:04:05.000Z");
  assert.ok(!("apiKey" in file), "the API key is not exported");
  const parsed = parseExportFile(text);
  assert.ok(parsed.ok);
  assert.deepEqual(parsed.conversations, chats);
});

test("export, clear, import restores the state's conversations", () => {
  const before = stateWith(chat("alpha", 3000), chat("beta", 2000));
  const text = exportFileText(before.conversations);
  const after = emptyState();
  const parsed = parseExportFile(text);
  assert.ok(parsed.ok);
  const result = mergeImported(after, parsed.conversations);
  assert.deepEqual(result, { added: 2, copies: 0, unchanged: 0, firstId: before.conversations[0]!.id });
  assert.deepEqual(after.conversations, before.conversations);
  assert.deepEqual(parseState(serializeState(after))!.conversations, before.conversations);
});

test("a malformed or wrong file is refused with a reason", () => {
  const good = JSON.parse(exportFileText([chat("alpha", 3000)]));
  const cases: [string, RegExp][] = [
    ["{ not json", /not valid JSON/],
    ["", /not valid JSON/],
    ["[]", /not a llaisys chat export/],
    ['{"version": 1, "conversations": []}', /not a llaisys chat export/],
    [JSON.stringify({ ...good, format: "something-else" }), /not a llaisys chat export/],
    [JSON.stringify({ ...good, version: 2 }), /version 2/],
    [JSON.stringify({ ...good, conversations: {} }), /no "conversations" list/],
    [JSON.stringify({ ...good, conversations: [] }), /no chats/],
    [JSON.stringify({ ...good, conversations: [...good.conversations, { id: 5, messages: [] }] }), /Chat 2 .*not a valid chat/],
    [JSON.stringify({ ...good, conversations: [{ id: "x" }] }), /Chat 1 .*not a valid chat/],
    [JSON.stringify({ ...good, conversations: [{ ...good.conversations[0], messages: [...good.conversations[0].messages, { id: "m", role: "system", content: "x" }] }] }), /1 invalid message/],
    [JSON.stringify({ ...good, conversations: [{ ...good.conversations[0], messages: [{ id: "m", role: "user", content: 7 }, { id: "n" }] }] }), /2 invalid messages/],
  ];
  for (const [text, reason] of cases) {
    const parsed = parseExportFile(text);
    assert.equal(parsed.ok, false, text);
    if (!parsed.ok) assert.match(parsed.error, reason, text);
  }
});

test("clashing ids: the same chat is left alone, a different one is added as a copy; nothing is changed", () => {
  const alpha = chat("alpha", 3000);
  const beta = chat("beta", 2000);
  const state = stateWith(alpha, beta);
  const snapshot = JSON.stringify(state);
  const changed = { ...structuredClone(beta), title: "beta, edited elsewhere", updatedAt: 4000 };
  const fresh = chat("gamma", 1000);
  const parsed = parseExportFile(exportFileText([structuredClone(alpha), changed, fresh]));
  assert.ok(parsed.ok);
  const result = mergeImported(state, parsed.conversations);
  assert.equal(result.added, 1);
  assert.equal(result.copies, 1);
  assert.equal(result.unchanged, 1);
  assert.equal(describeImport(result), "Imported 1 chat, added 1 chat as copies (their ids were taken), 1 chat already here.");
  assert.equal(state.conversations.length, 4);
  // The original two are untouched; the copy has a new id and says it is a copy; newest first.
  assert.deepEqual(JSON.parse(snapshot).conversations, state.conversations.filter((c) => c.id === alpha.id || c.id === beta.id));
  const copy = state.conversations.find((c) => c.title === "beta, edited elsewhere (copy)")!;
  assert.notEqual(copy.id, beta.id);
  assert.deepEqual(copy.messages, beta.messages);
  assert.deepEqual(state.conversations.map((c) => c.updatedAt), [4000, 3000, 2000, 1000]);
  assert.equal(result.firstId, copy.id);
});

test("file names", () => {
  assert.equal(exportFileName(null, new Date("2025-06-07T10:00:00Z")), "llaisys-chats-2025-06-07.json");
  assert.equal(exportFileName(chat("How do I <b>parse</b> JSON in C++?", 1)), "llaisys-chat-how-do-i-b-parse-b-json-in-c.json");
  assert.equal(exportFileName({ ...chat("x", 1), title: "???" }), "llaisys-chat-untitled.json");
});
