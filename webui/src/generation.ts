// Streams one answer into its message: its text and its reasoning as they arrive, then the stats
// and the finish reason, or what went wrong (stopped, an HTTP or stream error). Never throws: the
// outcome is written on the message. The caller re-renders on onUpdate and saves when it resolves.
import { isAbort, streamChatCompletion, type Usage } from "./api/client";
import { ApiError } from "./api/errors";
import type { AnswerStats, Message } from "./state/types";

export interface StreamAnswerOptions {
  apiKey: string;
  body: Record<string, unknown>;
  signal: AbortSignal;
  // After each piece of text or reasoning was added to the message.
  onUpdate(): void;
}

export async function streamAnswer(answer: Message, options: StreamAnswerOptions): Promise<void> {
  const startedAt = performance.now();
  let firstAt: number | null = null;
  let lastAt: number | null = null;
  let deltas = 0;
  const measured = (usage: Usage | null, approximate: boolean): AnswerStats => {
    const completion = usage?.completionTokens ?? deltas;
    const span = firstAt !== null && lastAt !== null ? (lastAt - firstAt) / 1000 : 0;
    return {
      promptTokens: usage?.promptTokens ?? null,
      completionTokens: completion,
      cachedTokens: usage?.cachedTokens ?? null,
      tokensPerSecond: completion > 1 && span > 0 ? (completion - 1) / span : null,
      timeToFirstTokenMs: firstAt !== null ? firstAt - startedAt : null,
      reasoningTokens: usage?.reasoningTokens ?? null,
      approximate,
    };
  };
  try {
    const outcome = await streamChatCompletion({
      apiKey: options.apiKey,
      body: options.body,
      signal: options.signal,
      onDelta: (delta) => {
        const now = performance.now();
        firstAt ??= now;
        lastAt = now;
        deltas += 1;
        if (delta.reasoning.length > 0) answer.reasoning = (answer.reasoning ?? "") + delta.reasoning;
        answer.content += delta.content;
        options.onUpdate();
      },
    });
    if (outcome.finishReason !== null) answer.finishReason = outcome.finishReason;
    answer.stats = measured(outcome.usage, outcome.usage === null);
  } catch (e) {
    if (isAbort(e)) {
      answer.stopped = true;
    } else if (e instanceof ApiError) {
      answer.error = e.error;
    } else {
      answer.error = { kind: "server", status: null, message: `Unexpected error: ${String(e)}`, retryAfterSeconds: null };
    }
    if (deltas > 0) answer.stats = measured(null, true);
  }
}
