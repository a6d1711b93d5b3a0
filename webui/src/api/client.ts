// The two calls the UI makes: GET /v1/models and a streamed POST /v1/chat/completions.
// URLs are relative to the page, so the UI works wherever the server mounts it.
import { ApiError, errorFromHttp, errorFromStreamEvent, networkError } from "./errors";
import { SseParser } from "./sse";

export interface ModelEntry {
  id: string;
  ownedBy: string | null;
}

export interface Usage {
  promptTokens: number | null;
  completionTokens: number | null;
  cachedTokens: number | null;
  // completion_tokens_details.reasoning_tokens: how many of the completion tokens were reasoning.
  reasoningTokens: number | null;
}

// One chunk's share of the answer: its text and its reasoning (either may be empty).
export interface AnswerDelta {
  content: string;
  reasoning: string;
}

export interface StreamOutcome {
  finishReason: string | null;
  usage: Usage | null;
}

function apiUrl(path: string): string {
  return new URL(path, document.baseURI).toString();
}

function headers(apiKey: string, json: boolean): Record<string, string> {
  const h: Record<string, string> = { Accept: json ? "application/json" : "text/event-stream" };
  if (json) h["Content-Type"] = "application/json";
  if (apiKey.length > 0) h.Authorization = `Bearer ${apiKey}`;
  return h;
}

async function readJson(response: Response): Promise<unknown> {
  try {
    return await response.json();
  } catch {
    return null;
  }
}

// Throws ApiError (or the AbortError of `signal`).
export async function listModels(apiKey: string, signal?: AbortSignal): Promise<ModelEntry[]> {
  let response: Response;
  try {
    response = await fetch(apiUrl("v1/models"), { headers: headers(apiKey, false), signal });
  } catch (e) {
    if (isAbort(e)) throw e;
    throw new ApiError(networkError(`The model list could not be loaded (${(e as Error).message}).`));
  }
  const json = await readJson(response);
  if (!response.ok) throw new ApiError(errorFromHttp(response.status, json, response.headers.get("Retry-After")));
  const data = (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new ApiError(networkError("The server's model list has no data array."));
  return data
    .filter((m): m is { id: string; owned_by?: unknown } => typeof m === "object" && m !== null && typeof m.id === "string")
    .map((m) => ({ id: m.id, ownedBy: typeof m.owned_by === "string" ? m.owned_by : null }));
}

export interface StreamChatOptions {
  apiKey: string;
  body: Record<string, unknown>;
  signal: AbortSignal;
  // Called with each piece of answer text and reasoning as it arrives.
  onDelta: (delta: AnswerDelta) => void;
}

// Streams one chat completion. Resolves when the server sent [DONE] (or closed after a finish
// reason); throws ApiError for HTTP errors, error events and broken streams, and rethrows the
// AbortError when `signal` aborts (aborting closes the connection, which frees the request).
export async function streamChatCompletion(options: StreamChatOptions): Promise<StreamOutcome> {
  let response: Response;
  try {
    response = await fetch(apiUrl("v1/chat/completions"), {
      method: "POST",
      headers: headers(options.apiKey, true),
      body: JSON.stringify(options.body),
      signal: options.signal,
    });
  } catch (e) {
    if (isAbort(e)) throw e;
    throw new ApiError(networkError(`No answer from the server (${(e as Error).message}).`));
  }
  if (!response.ok) {
    throw new ApiError(errorFromHttp(response.status, await readJson(response), response.headers.get("Retry-After")));
  }
  if (response.body === null) throw new ApiError(networkError("The server's answer has no body."));

  const outcome: StreamOutcome = { finishReason: null, usage: null };
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let done = false;
  try {
    while (!done) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        if (isAbort(e) || options.signal.aborted) throw e;
        throw new ApiError(networkError(`The connection broke during the answer (${(e as Error).message}).`));
      }
      const text = chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
      for (const event of parser.push(text)) {
        if (event.data === "[DONE]") {
          done = true;
          break;
        }
        handleChunk(event.data, outcome, options.onDelta);
      }
      if (chunk.done) break;
    }
  } finally {
    if (done) void reader.cancel().catch(() => undefined);
  }
  if (!done && outcome.finishReason === null) {
    throw new ApiError(networkError("The server closed the connection before the answer was finished."));
  }
  return outcome;
}

function handleChunk(data: string, outcome: StreamOutcome, onDelta: (delta: AnswerDelta) => void): void {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    throw new ApiError({ kind: "stream", status: null, message: "The server sent a chunk that is not JSON.", retryAfterSeconds: null });
  }
  if (typeof json !== "object" || json === null) return;
  const chunk = json as Record<string, unknown>;
  if (chunk.error !== undefined && chunk.error !== null) throw new ApiError(errorFromStreamEvent(chunk));
  const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
  for (const choice of choices) {
    if (typeof choice !== "object" || choice === null || ((choice as { index?: unknown }).index ?? 0) !== 0) continue;
    const c = choice as { delta?: { content?: unknown; reasoning_content?: unknown; reasoning?: unknown }; finish_reason?: unknown };
    // Reasoning comes as reasoning_content (llama.cpp, vLLM, this server), or reasoning as some servers name it.
    const reasoning = c.delta?.reasoning_content ?? c.delta?.reasoning;
    const delta: AnswerDelta = {
      content: typeof c.delta?.content === "string" ? c.delta.content : "",
      reasoning: typeof reasoning === "string" ? reasoning : "",
    };
    if (delta.content.length > 0 || delta.reasoning.length > 0) onDelta(delta);
    if (typeof c.finish_reason === "string") outcome.finishReason = c.finish_reason;
  }
  if (typeof chunk.usage === "object" && chunk.usage !== null) outcome.usage = readUsage(chunk.usage as Record<string, unknown>);
}

function readUsage(u: Record<string, unknown>): Usage {
  const prompt = u.prompt_tokens_details as Record<string, unknown> | null | undefined;
  const completion = u.completion_tokens_details as Record<string, unknown> | null | undefined;
  return {
    promptTokens: typeof u.prompt_tokens === "number" ? u.prompt_tokens : null,
    completionTokens: typeof u.completion_tokens === "number" ? u.completion_tokens : null,
    cachedTokens: typeof prompt?.cached_tokens === "number" ? prompt.cached_tokens : null,
    reasoningTokens: typeof completion?.reasoning_tokens === "number" ? completion.reasoning_tokens : null,
  };
}

export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === "AbortError";
}
