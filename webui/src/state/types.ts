// The data the web UI keeps in localStorage. Everything here is plain JSON: it is written by
// storage.ts and read back through its validation, since localStorage may hold anything.

// Per-conversation request settings. null means "leave it to the server" (the field is not sent).
export interface GenerationSettings {
  systemPrompt: string;
  temperature: number | null;
  topP: number | null;
  maxTokens: number | null;
  // Extra request fields as a JSON object text (e.g. {"seed": 1, "stop": ["\n\n"]}); "" for none.
  extraParams: string;
}

// What the server reported for one answer, plus what the browser measured.
export interface AnswerStats {
  promptTokens: number | null;
  completionTokens: number | null;
  cachedTokens: number | null;
  // Decode speed: tokens after the first one divided by the time between first and last delta.
  tokensPerSecond: number | null;
  timeToFirstTokenMs: number | null;
  // Of completionTokens, how many were reasoning (usage.completion_tokens_details.reasoning_tokens).
  reasoningTokens: number | null;
  // True when the stream ended before the usage chunk (stopped, error): counts are from deltas.
  approximate: boolean;
}

export type ErrorKind =
  | "auth" // 401: missing or wrong API key
  | "rate_limit" // 429: too many requests, Retry-After
  | "overloaded" // 503: server busy or loading, Retry-After
  | "context_length" // 400 context_length_exceeded
  | "bad_request" // other 4xx
  | "server" // 5xx
  | "network" // no answer at all (server down, connection lost)
  | "stream"; // the server sent an error event in the middle of a stream

export interface InlineError {
  kind: ErrorKind;
  status: number | null;
  message: string;
  retryAfterSeconds: number | null;
}

export type Role = "user" | "assistant";

export interface Message {
  id: string;
  role: Role;
  content: string;
  createdAt: number;
  // Assistant messages only.
  model?: string;
  // The model's reasoning before its answer (delta.reasoning_content). Shown in a collapsible
  // block, never sent back to the server: later requests carry `content` only.
  reasoning?: string;
  stats?: AnswerStats;
  finishReason?: string;
  stopped?: boolean;
  error?: InlineError;
}

export interface Conversation {
  id: string;
  title: string;
  // Once renamed by hand the title no longer follows the first message.
  titleEdited: boolean;
  createdAt: number;
  updatedAt: number;
  model: string;
  settings: GenerationSettings;
  messages: Message[];
}

export interface AppState {
  conversations: Conversation[]; // most recently updated first
  activeConversationId: string | null;
  apiKey: string;
  lastModel: string;
}

export const STATE_VERSION = 1;
