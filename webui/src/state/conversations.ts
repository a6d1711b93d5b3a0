// Pure operations on conversations: no DOM, no storage, unit-tested in unit-tests/.
import type { AppState, Conversation, GenerationSettings, Message } from "./types";

export const DEFAULT_SETTINGS: GenerationSettings = {
  systemPrompt: "",
  temperature: null,
  topP: null,
  maxTokens: null,
  extraParams: "",
};

export const UNTITLED = "New chat";
const TITLE_MAX_CHARS = 48;

export function newId(): string {
  if (typeof crypto !== "undefined" && typeof crypto.randomUUID === "function") {
    return crypto.randomUUID();
  }
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

export function createConversation(model: string, settings: GenerationSettings, now = Date.now()): Conversation {
  return {
    id: newId(),
    title: UNTITLED,
    titleEdited: false,
    createdAt: now,
    updatedAt: now,
    model,
    settings: { ...settings },
    messages: [],
  };
}

// A title from the first line of a message, whitespace collapsed, cut at a word when possible.
export function titleFromText(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length === 0) return UNTITLED;
  if (flat.length <= TITLE_MAX_CHARS) return flat;
  const cut = flat.slice(0, TITLE_MAX_CHARS);
  const lastSpace = cut.lastIndexOf(" ");
  return `${(lastSpace > TITLE_MAX_CHARS / 2 ? cut.slice(0, lastSpace) : cut).trimEnd()}…`;
}

export function findConversation(state: AppState, id: string | null): Conversation | undefined {
  return id === null ? undefined : state.conversations.find((c) => c.id === id);
}

// Moves a conversation to the top of the list (the list is ordered by last update).
export function touch(state: AppState, conversation: Conversation, now = Date.now()): void {
  conversation.updatedAt = now;
  const index = state.conversations.indexOf(conversation);
  if (index > 0) {
    state.conversations.splice(index, 1);
    state.conversations.unshift(conversation);
  }
}

// Another tab's state, to replace `current` with. The chats this tab is streaming answers into
// stay this tab's own objects (the streams write into them, and their saves carry them), so
// neither tab's work is lost: ignoring the other tab while streaming let this tab's next save
// erase what the other one had just written. The active chat stays this tab's when it still exists.
export function takeOtherTabState(current: AppState, next: AppState, streamingIds: Iterable<string>): AppState {
  for (const id of streamingIds) {
    const mine = findConversation(current, id);
    if (mine === undefined) continue;
    const at = next.conversations.findIndex((c) => c.id === id);
    if (at >= 0) next.conversations[at] = mine;
    else next.conversations.unshift(mine);
  }
  if (findConversation(next, current.activeConversationId) !== undefined) next.activeConversationId = current.activeConversationId;
  return next;
}

export function appendUserMessage(conversation: Conversation, text: string, now = Date.now()): Message {
  const message: Message = { id: newId(), role: "user", content: text, createdAt: now };
  conversation.messages.push(message);
  if (!conversation.titleEdited && conversation.messages.filter((m) => m.role === "user").length === 1) {
    conversation.title = titleFromText(text);
  }
  return message;
}

// Drops the answer(s) after the last user message so it can be answered again.
// Returns false when there is no user message to answer.
export function truncateForRegenerate(conversation: Conversation): boolean {
  let lastUser = -1;
  conversation.messages.forEach((m, i) => {
    if (m.role === "user") lastUser = i;
  });
  if (lastUser < 0) return false;
  conversation.messages.length = lastUser + 1;
  return true;
}

// Replaces the text of an earlier user message and drops everything after it, so the conversation
// can be continued from there. Returns false when the message is not a user message of it.
export function editUserMessage(conversation: Conversation, messageId: string, text: string): boolean {
  const index = conversation.messages.findIndex((m) => m.id === messageId);
  const message = conversation.messages[index];
  if (message === undefined || message.role !== "user") return false;
  message.content = text;
  conversation.messages.length = index + 1;
  if (!conversation.titleEdited && conversation.messages.filter((m) => m.role === "user").length === 1) {
    conversation.title = titleFromText(text);
  }
  return true;
}

export interface ChatMessagePayload {
  role: "system" | "user" | "assistant";
  content: string;
}

// The `messages` array of a chat request for the conversation as it stands: the system prompt (when
// set), then every user message and every assistant message that has text. Answers that failed
// before producing text are left out; a stopped answer's partial text is kept, as the user saw it.
export function requestMessages(conversation: Conversation): ChatMessagePayload[] {
  const out: ChatMessagePayload[] = [];
  const system = conversation.settings.systemPrompt.trim();
  if (system.length > 0) out.push({ role: "system", content: conversation.settings.systemPrompt });
  for (const m of conversation.messages) {
    if (m.role === "assistant" && m.content.length === 0) continue;
    out.push({ role: m.role, content: m.content });
  }
  return out;
}

export type RequestBodyResult = { ok: true; body: Record<string, unknown> } | { ok: false; error: string };

// The JSON body of POST /v1/chat/completions for the conversation. Fields left null in the settings
// are not sent; extraParams are merged in but cannot override model, messages or streaming.
export function buildChatRequestBody(conversation: Conversation): RequestBodyResult {
  const body: Record<string, unknown> = {};
  const extra = parseExtraParams(conversation.settings.extraParams);
  if (!extra.ok) return extra;
  Object.assign(body, extra.value);
  const s = conversation.settings;
  if (s.temperature !== null) body.temperature = s.temperature;
  if (s.topP !== null) body.top_p = s.topP;
  if (s.maxTokens !== null) body.max_tokens = s.maxTokens;
  body.model = conversation.model;
  body.messages = requestMessages(conversation);
  body.stream = true;
  body.stream_options = { include_usage: true };
  return { ok: true, body };
}

export function parseExtraParams(text: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (text.trim().length === 0) return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `Extra parameters are not valid JSON: ${(e as Error).message}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, error: "Extra parameters must be a JSON object, like {\"seed\": 1}." };
  }
  return { ok: true, value: value as Record<string, unknown> };
}
