// Turning what went wrong into an InlineError (kept with the answer), and an InlineError into words
// for the user: what happened and what to do about it.
import type { ErrorKind, InlineError } from "../state/types";

// An error thrown by the API client. `error` is what the UI stores and shows.
export class ApiError extends Error {
  constructor(readonly error: InlineError) {
    super(error.message);
    this.name = "ApiError";
  }
}

interface OpenAiErrorBody {
  message: string;
  type: string | null;
  code: string | null;
}

// Reads {"error": {"message", "type", "param", "code"}}; tolerates other shapes.
export function readOpenAiError(json: unknown): OpenAiErrorBody | null {
  if (typeof json !== "object" || json === null) return null;
  const error = (json as { error?: unknown }).error;
  if (typeof error === "string") return { message: error, type: null, code: null };
  if (typeof error !== "object" || error === null) return null;
  const e = error as Record<string, unknown>;
  return {
    message: typeof e.message === "string" ? e.message : JSON.stringify(error),
    type: typeof e.type === "string" ? e.type : null,
    code: typeof e.code === "string" ? e.code : typeof e.code === "number" ? String(e.code) : null,
  };
}

// Retry-After is either delay-seconds or an HTTP date.
export function parseRetryAfter(header: string | null, now = Date.now()): number | null {
  if (header === null) return null;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, Math.ceil((date - now) / 1000));
}

function isContextLength(body: OpenAiErrorBody | null): boolean {
  if (body === null) return false;
  return body.code === "context_length_exceeded" || /context length|context window|maximum context/i.test(body.message);
}

export function errorFromHttp(status: number, json: unknown, retryAfterHeader: string | null): InlineError {
  const body = readOpenAiError(json);
  let kind: ErrorKind;
  if (status === 401 || status === 403) kind = "auth";
  else if (status === 429) kind = "rate_limit";
  else if (status === 503) kind = "overloaded";
  else if (isContextLength(body)) kind = "context_length";
  else if (status >= 400 && status < 500) kind = "bad_request";
  else kind = "server";
  return {
    kind,
    status,
    message: body?.message ?? `The server answered ${status}.`,
    retryAfterSeconds: parseRetryAfter(retryAfterHeader),
  };
}

// An {"error": ...} event inside a stream.
export function errorFromStreamEvent(json: unknown): InlineError {
  const body = readOpenAiError(json);
  let kind: ErrorKind = "stream";
  if (isContextLength(body)) kind = "context_length";
  else if (body?.code === "rate_limit_exceeded" || body?.code === "429") kind = "rate_limit";
  return { kind, status: null, message: body?.message ?? "The server reported an error.", retryAfterSeconds: null };
}

export function networkError(detail: string): InlineError {
  return { kind: "network", status: null, message: detail, retryAfterSeconds: null };
}

export type ErrorAction = "retry" | "api-key" | "settings" | "edit-last" | "new-chat";

export interface ErrorAdvice {
  title: string;
  hint: string;
  actions: ErrorAction[];
}

export function adviceFor(error: InlineError): ErrorAdvice {
  switch (error.kind) {
    case "auth":
      return {
        title: "The server needs an API key",
        hint: "Enter the key the server was started with in the API key field, then retry.",
        actions: ["api-key", "retry"],
      };
    case "rate_limit":
    case "overloaded":
      return {
        title: error.kind === "rate_limit" ? "Too many requests right now" : "The server is busy",
        hint:
          error.retryAfterSeconds !== null
            ? `The server asked to wait ${error.retryAfterSeconds} s before trying again.`
            : "Wait a moment, then retry.",
        actions: ["retry"],
      };
    case "context_length":
      return {
        title: "The conversation is too long for the model",
        hint: "Shorten or edit your last message, lower max tokens in the chat settings, or start a new chat.",
        actions: ["edit-last", "settings", "new-chat"],
      };
    case "network":
      return {
        title: "Could not reach the server",
        hint: "Check that llaisys-server is still running and reachable, then retry.",
        actions: ["retry"],
      };
    case "bad_request":
      return {
        title: "The server rejected the request",
        hint: "Check the chat settings (model, numbers, extra parameters), then retry.",
        actions: ["settings", "retry"],
      };
    case "stream":
    case "server":
      return {
        title: "The server failed to answer",
        hint: "This is a problem on the server side; retry, and check the server log if it persists.",
        actions: ["retry"],
      };
  }
}
