// Parts of an answer besides its text: the collapsible reasoning ("thinking") block and the stats
// line. Used by ui/messages.ts.
import type { AnswerStats, Message } from "../state/types";
import { formatNumber, h, icon } from "./dom";
import { setRichText } from "./rich-text";

// The reasoning block: open while the reasoning streams and no answer text has come yet, closed from
// the moment the answer starts, unless the user opened or closed it (`userOpen`, kept by the caller
// through `onToggle`, which gets the state the block is about to take).
export function renderReasoning(message: Message, streaming: boolean, userOpen: boolean | undefined, onToggle: (open: boolean) => void): HTMLElement {
  const reasoning = message.reasoning ?? "";
  const thinking = streaming && message.content.length === 0;
  const open = userOpen ?? thinking;
  const label = thinking ? "Thinking…" : "Thoughts";
  const tokens = message.stats?.reasoningTokens ?? null;
  const summary = h(
    "summary",
    { class: "reasoning-summary", "data-testid": "reasoning-toggle" },
    icon("chevron"),
    h("span", { class: "reasoning-label" }, label),
    tokens !== null && tokens > 0 ? h("span", { class: "reasoning-meta" }, `${formatNumber(tokens)} ${tokens === 1 ? "token" : "tokens"}`) : null,
  );
  const body = h("div", { class: "reasoning-text markdown", "data-testid": "reasoning-text" });
  setRichText(body, reasoning);
  const details = h("details", { class: "reasoning", "data-testid": "reasoning", "data-state": thinking ? "thinking" : "done", open }, summary, body);
  // A click on the summary toggles the block after this handler: report the state it will take.
  summary.addEventListener("click", () => onToggle(!details.open));
  return details;
}

export function renderStats(message: Message): HTMLElement | null {
  const stats: AnswerStats | undefined = message.stats;
  if (stats === undefined) return message.stopped === true ? h("span", { class: "stats", "data-testid": "stats" }, "Stopped") : null;
  const parts: string[] = [];
  if (message.stopped === true) parts.push("Stopped");
  if (stats.completionTokens !== null) {
    const n = stats.completionTokens;
    const reasoning = stats.reasoningTokens !== null && stats.reasoningTokens > 0 ? ` (${formatNumber(stats.reasoningTokens)} reasoning)` : "";
    parts.push(`${stats.approximate ? "≈" : ""}${formatNumber(n)} ${n === 1 ? "token" : "tokens"}${reasoning}`);
  }
  if (stats.cachedTokens !== null) parts.push(`${formatNumber(stats.cachedTokens)} cached`);
  if (stats.tokensPerSecond !== null) parts.push(`${formatNumber(stats.tokensPerSecond, 1)} tok/s`);
  if (message.finishReason === "length") parts.push("cut at max tokens");
  const tooltip: string[] = [];
  if (stats.promptTokens !== null) tooltip.push(`prompt: ${stats.promptTokens} tokens (${stats.cachedTokens ?? 0} from the prefix cache)`);
  if (stats.reasoningTokens !== null) tooltip.push(`reasoning: ${stats.reasoningTokens} of the answer's tokens`);
  if (stats.timeToFirstTokenMs !== null) tooltip.push(`first token after ${Math.round(stats.timeToFirstTokenMs)} ms`);
  if (stats.tokensPerSecond !== null) tooltip.push("tok/s: decode speed, from the first to the last token");
  if (message.model !== undefined) tooltip.push(`model: ${message.model}`);
  return h(
    "span",
    {
      class: "stats",
      "data-testid": "stats",
      title: tooltip.join("\n"),
      "data-completion-tokens": stats.completionTokens,
      "data-cached-tokens": stats.cachedTokens,
      "data-prompt-tokens": stats.promptTokens,
      "data-reasoning-tokens": stats.reasoningTokens,
      "data-tokens-per-second": stats.tokensPerSecond,
    },
    parts.join(" · "),
  );
}
