// localStorage persistence. What is read back is validated field by field: another version of the
// UI, another page on the same origin or a hand edit may have left anything there. A value that
// cannot be read is set aside under a backup key (never silently thrown away) and the UI starts fresh.
import { DEFAULT_SETTINGS, UNTITLED } from "./conversations";
import {
  STATE_VERSION,
  type AnswerStats,
  type AppState,
  type Conversation,
  type ErrorKind,
  type GenerationSettings,
  type InlineError,
  type Message,
} from "./types";

export const STORAGE_KEY = "llaisys.webui.state";
export const BACKUP_KEY = "llaisys.webui.state.unreadable";

export function emptyState(): AppState {
  return { conversations: [], activeConversationId: null, apiKey: "", lastModel: "" };
}

export function serializeState(state: AppState): string {
  return JSON.stringify({ version: STATE_VERSION, ...state });
}

// Parses stored text into a state; null when it is not a state this version can read.
export function parseState(text: string): AppState | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isRecord(raw) || raw.version !== STATE_VERSION || !Array.isArray(raw.conversations)) return null;
  const conversations = raw.conversations.map(readConversation).filter((c): c is Conversation => c !== null);
  const active = typeof raw.activeConversationId === "string" ? raw.activeConversationId : null;
  return {
    conversations,
    activeConversationId: conversations.some((c) => c.id === active) ? active : (conversations[0]?.id ?? null),
    apiKey: str(raw.apiKey, ""),
    lastModel: str(raw.lastModel, ""),
  };
}

export interface LoadResult {
  state: AppState;
  // Set when stored data existed but could not be read (it was kept under BACKUP_KEY).
  problem: string | null;
  // The unreadable data could not be backed up (storage full): it is still the only copy under
  // STORAGE_KEY, so this session must not save over it.
  saveDisabled: boolean;
}

export function loadState(storage: Storage): LoadResult {
  let text: string | null;
  try {
    text = storage.getItem(STORAGE_KEY);
  } catch (e) {
    return {
      state: emptyState(),
      problem: `Browser storage is not available (${(e as Error).message}); chats will not be kept.`,
      saveDisabled: false,
    };
  }
  if (text === null) return { state: emptyState(), problem: null, saveDisabled: false };
  const state = parseState(text);
  if (state !== null) return { state, problem: null, saveDisabled: false };
  try {
    storage.setItem(BACKUP_KEY, text);
  } catch {
    // No room for a second copy (the data takes more than half the quota): leave the only copy.
    return {
      state: emptyState(),
      problem: `Saved chats could not be read, and there is no room to back them up: they are left as they are under "${STORAGE_KEY}", and chats of this session will not be saved.`,
      saveDisabled: true,
    };
  }
  return {
    state: emptyState(),
    problem: `Saved chats could not be read; they were kept in localStorage under "${BACKUP_KEY}".`,
    saveDisabled: false,
  };
}

// Returns null on success, else why the state could not be saved (e.g. the storage quota is full).
export function saveState(storage: Storage, state: AppState): string | null {
  try {
    storage.setItem(STORAGE_KEY, serializeState(state));
    return null;
  } catch (e) {
    return `Chats could not be saved: ${(e as Error).message}. Delete old chats to free space.`;
  }
}

// One stored conversation, every field checked (missing ones get defaults, unreadable messages
// are dropped); null when it has no id or message list. Imports (state/transfer.ts) use it too.
export function readConversation(raw: unknown): Conversation | null {
  if (!isRecord(raw) || typeof raw.id !== "string" || !Array.isArray(raw.messages)) return null;
  const now = Date.now();
  return {
    id: raw.id,
    title: str(raw.title, UNTITLED),
    titleEdited: raw.titleEdited === true,
    createdAt: num(raw.createdAt, now),
    updatedAt: num(raw.updatedAt, now),
    model: str(raw.model, ""),
    settings: readSettings(raw.settings),
    messages: raw.messages.map(readMessage).filter((m): m is Message => m !== null),
  };
}

function readSettings(raw: unknown): GenerationSettings {
  if (!isRecord(raw)) return { ...DEFAULT_SETTINGS };
  return {
    systemPrompt: str(raw.systemPrompt, ""),
    temperature: numOrNull(raw.temperature),
    topP: numOrNull(raw.topP),
    maxTokens: numOrNull(raw.maxTokens),
    extraParams: str(raw.extraParams, ""),
  };
}

function readMessage(raw: unknown): Message | null {
  if (!isRecord(raw) || typeof raw.id !== "string" || typeof raw.content !== "string") return null;
  if (raw.role !== "user" && raw.role !== "assistant") return null;
  const message: Message = { id: raw.id, role: raw.role, content: raw.content, createdAt: num(raw.createdAt, 0) };
  if (raw.role === "assistant") {
    if (typeof raw.model === "string") message.model = raw.model;
    if (typeof raw.reasoning === "string" && raw.reasoning.length > 0) message.reasoning = raw.reasoning;
    if (isRecord(raw.stats)) message.stats = readStats(raw.stats);
    if (typeof raw.finishReason === "string") message.finishReason = raw.finishReason;
    if (raw.stopped === true) message.stopped = true;
    if (isRecord(raw.error)) message.error = readError(raw.error);
  }
  return message;
}

function readStats(raw: Record<string, unknown>): AnswerStats {
  return {
    promptTokens: numOrNull(raw.promptTokens),
    completionTokens: numOrNull(raw.completionTokens),
    cachedTokens: numOrNull(raw.cachedTokens),
    tokensPerSecond: numOrNull(raw.tokensPerSecond),
    timeToFirstTokenMs: numOrNull(raw.timeToFirstTokenMs),
    reasoningTokens: numOrNull(raw.reasoningTokens),
    approximate: raw.approximate === true,
  };
}

const ERROR_KINDS: readonly ErrorKind[] = [
  "auth", "rate_limit", "overloaded", "context_length", "bad_request", "server", "network", "stream",
];

function readError(raw: Record<string, unknown>): InlineError {
  const kind = ERROR_KINDS.find((k) => k === raw.kind) ?? "server";
  return {
    kind,
    status: numOrNull(raw.status),
    message: str(raw.message, "Unknown error"),
    retryAfterSeconds: numOrNull(raw.retryAfterSeconds),
  };
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
function str(v: unknown, fallback: string): string {
  return typeof v === "string" ? v : fallback;
}
function num(v: unknown, fallback: number): number {
  return typeof v === "number" && Number.isFinite(v) ? v : fallback;
}
function numOrNull(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}
