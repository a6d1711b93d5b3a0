// The message column: user messages as plain text (pre-wrapped, never Markdown), answers as rich
// text (ui/rich-text.ts) after their collapsible reasoning, with per-answer stats, inline errors and
// the message actions (edit a user message, copy, regenerate the last answer). Elements are kept
// per message and rebuilt only when what they show changed, so a streaming answer re-renders alone.
import { adviceFor, type ErrorAction } from "../api/errors";
import type { Conversation, InlineError, Message } from "../state/types";
import { renderReasoning, renderStats } from "./answer-parts";
import { h, icon, iconButton } from "./dom";
import { setRichText } from "./rich-text";

export interface MessageListCallbacks {
  onEditSubmit(messageId: string, text: string): void;
  onRegenerate(): void;
  onErrorAction(action: ErrorAction): void;
}

export interface MessageListModel {
  conversation: Conversation | undefined;
  // The answer being streamed in this conversation, if any.
  streamingMessageId: string | null;
  modelLabel: string;
}

interface MessageView {
  element: HTMLElement;
  signature: string;
}

const ERROR_ACTION_LABELS: Record<ErrorAction, string> = {
  retry: "Retry",
  "api-key": "Enter API key",
  settings: "Chat settings",
  "edit-last": "Edit last message",
  "new-chat": "New chat",
};

export class MessageList {
  readonly element: HTMLElement;
  private readonly column: HTMLElement;
  private readonly views = new Map<string, MessageView>();
  private conversationId: string | null = null;
  private editingId: string | null = null;
  // Reasoning blocks the user opened (true) or closed (false), by message id; others follow the
  // stream (open while thinking, closed once the answer starts).
  private readonly reasoningOpen = new Map<string, boolean>();
  private lastModel: MessageListModel | null = null;
  // Whether the view follows the newest text: true until the user scrolls up, again once they
  // scroll back down (or send something).
  private followBottom = true;

  constructor(private readonly callbacks: MessageListCallbacks) {
    this.column = h("div", { class: "message-column" });
    this.element = h("section", { class: "messages", "data-testid": "messages", role: "log", "aria-label": "Messages" }, this.column);
    this.element.addEventListener("click", (e) => this.onClick(e));
    this.element.addEventListener("scroll", () => (this.followBottom = this.isNearBottom()), { passive: true });
    // The view also changes size (the message box grows with a long draft, the phone keyboard opens):
    // keep the newest text in view when it was.
    new ResizeObserver(() => {
      if (this.followBottom) this.scrollToBottom();
    }).observe(this.element);
  }

  // Starts editing a user message (the "edit last message" error action uses it too).
  startEditing(messageId: string): void {
    this.editingId = messageId;
    this.rerender();
    const input = this.column.querySelector<HTMLTextAreaElement>("[data-testid=edit-input]");
    if (input !== null) {
      input.focus();
      input.setSelectionRange(input.value.length, input.value.length);
      autosize(input);
    }
  }

  render(model: MessageListModel): void {
    this.lastModel = model;
    const conversation = model.conversation;
    const switched = (conversation?.id ?? null) !== this.conversationId;
    if (switched) {
      this.views.clear();
      this.editingId = null;
      this.conversationId = conversation?.id ?? null;
    }
    const stick = switched || this.followBottom;
    if (conversation === undefined || conversation.messages.length === 0) {
      this.views.clear();
      this.column.replaceChildren(this.renderWelcome(model.modelLabel));
      return;
    }
    const busy = model.streamingMessageId !== null;
    const lastAssistantIndex = findLastIndex(conversation.messages, (m) => m.role === "assistant");
    const lastUserIndex = findLastIndex(conversation.messages, (m) => m.role === "user");
    const elements: HTMLElement[] = [];
    const seen = new Set<string>();
    conversation.messages.forEach((message, index) => {
      const context: RenderContext = {
        streaming: message.id === model.streamingMessageId,
        busy,
        isLastAssistant: index === lastAssistantIndex && index > lastUserIndex,
        editing: message.id === this.editingId,
      };
      const signature = signatureOf(message, context);
      let view = this.views.get(message.id);
      if (view === undefined || view.signature !== signature) {
        view = { element: this.renderMessage(message, context), signature };
        this.views.set(message.id, view);
      }
      seen.add(message.id);
      elements.push(view.element);
    });
    for (const id of [...this.views.keys()]) if (!seen.has(id)) this.views.delete(id);
    const current = Array.from(this.column.children);
    if (current.length !== elements.length || current.some((el, i) => el !== elements[i])) this.column.replaceChildren(...elements);
    if (stick) this.scrollToBottom();
  }

  scrollToBottom(): void {
    this.followBottom = true;
    this.element.scrollTop = this.element.scrollHeight;
  }

  private rerender(): void {
    if (this.lastModel !== null) this.render(this.lastModel);
  }

  private isNearBottom(): boolean {
    const el = this.element;
    return el.scrollHeight - el.scrollTop - el.clientHeight < 96;
  }

  private renderWelcome(modelLabel: string): HTMLElement {
    return h(
      "div",
      { class: "welcome", "data-testid": "welcome" },
      h("div", { class: "welcome-mark", "aria-hidden": "true" }, icon("chat")),
      h("h2", {}, "Start a conversation"),
      h(
        "p",
        {},
        modelLabel.length > 0 ? `Messages go to ${modelLabel} on this llaisys server. ` : "Messages go to the model chosen above. ",
        "Chats are kept in this browser only.",
      ),
      h(
        "ul",
        { class: "welcome-tips" },
        h("li", {}, h("kbd", {}, "Enter"), " sends, ", h("kbd", {}, "Shift"), "+", h("kbd", {}, "Enter"), " adds a line"),
        h("li", {}, "System prompt, temperature and limits are in the chat settings"),
      ),
    );
  }

  private renderMessage(message: Message, context: RenderContext): HTMLElement {
    return message.role === "user" ? this.renderUser(message, context) : this.renderAssistant(message, context);
  }

  private renderUser(message: Message, context: RenderContext): HTMLElement {
    const article = h("article", { class: "message user", "data-testid": "message", "data-role": "user", "data-id": message.id });
    if (context.editing) {
      const input = h("textarea", { class: "edit-input", "data-testid": "edit-input", rows: 3, "aria-label": "Edit message" });
      input.value = message.content;
      input.addEventListener("input", () => autosize(input));
      const submit = (): void => {
        const text = input.value.trim();
        if (text.length === 0) return;
        this.editingId = null;
        this.callbacks.onEditSubmit(message.id, text);
      };
      input.addEventListener("keydown", (e) => {
        if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
          e.preventDefault();
          submit();
        } else if (e.key === "Escape") {
          this.editingId = null;
          this.rerender();
        }
      });
      article.classList.add("editing");
      article.appendChild(
        h(
          "form",
          { class: "edit-form", onsubmit: (e: Event) => (e.preventDefault(), submit()) },
          input,
          h("p", { class: "edit-note" }, "Sending replaces this message and everything after it."),
          h(
            "div",
            { class: "edit-buttons" },
            h("button", { type: "button", class: "small-button", "data-testid": "edit-cancel", onclick: () => ((this.editingId = null), this.rerender()) }, "Cancel"),
            h("button", { type: "submit", class: "small-button primary", "data-testid": "edit-submit", disabled: context.busy }, "Send"),
          ),
        ),
      );
      return article;
    }
    article.append(
      h("div", { class: "bubble" }, h("div", { class: "message-text plain", "data-testid": "message-text" }, message.content)),
      h(
        "div",
        { class: "message-actions" },
        iconButton("pencil", "Edit", () => this.startEditing(message.id), { "data-testid": "edit", disabled: context.busy }),
        iconButton("copy", "Copy", (e) => void copyText(message.content, e.currentTarget as HTMLElement), { "data-testid": "copy" }),
      ),
    );
    return article;
  }

  private renderAssistant(message: Message, context: RenderContext): HTMLElement {
    const article = h("article", {
      class: `message assistant${context.streaming ? " streaming" : ""}`,
      "data-testid": "message",
      "data-role": "assistant",
      "data-id": message.id,
      "data-state": context.streaming ? "streaming" : message.error !== undefined ? "error" : message.stopped === true ? "stopped" : "done",
    });
    if (message.reasoning !== undefined) {
      const userOpen = this.reasoningOpen.get(message.id);
      article.appendChild(renderReasoning(message, context.streaming, userOpen, (open) => this.reasoningOpen.set(message.id, open)));
    }
    if (message.content.length > 0) {
      const body = h("div", { class: "message-text markdown", "data-testid": "message-text" });
      setRichText(body, message.content);
      article.appendChild(body);
    } else if (context.streaming && message.reasoning === undefined) {
      article.appendChild(h("div", { class: "thinking", "aria-label": "Waiting for the answer" }, h("span"), h("span"), h("span")));
    }
    if (message.error !== undefined) article.appendChild(this.renderError(message.error, context));
    if (!context.streaming && (message.content.length > 0 || message.error === undefined)) {
      const footer = h("div", { class: "message-footer" });
      const stats = renderStats(message);
      if (stats !== null) footer.appendChild(stats);
      const actions = h("div", { class: "message-actions" });
      if (message.content.length > 0) {
        actions.appendChild(iconButton("copy", "Copy", (e) => void copyText(message.content, e.currentTarget as HTMLElement), { "data-testid": "copy" }));
      }
      if (context.isLastAssistant) {
        actions.appendChild(iconButton("refresh", "Regenerate", () => this.callbacks.onRegenerate(), { "data-testid": "regenerate", disabled: context.busy }));
      }
      footer.appendChild(actions);
      article.appendChild(footer);
    }
    return article;
  }

  private renderError(error: InlineError, context: RenderContext): HTMLElement {
    const advice = adviceFor(error);
    const detail = error.status !== null ? `${error.message} (HTTP ${error.status})` : error.message;
    return h(
      "div",
      { class: "error-card", role: "alert", "data-testid": "error", "data-kind": error.kind },
      h("div", { class: "error-title" }, advice.title),
      h("div", { class: "error-detail", "data-testid": "error-detail" }, detail),
      h("div", { class: "error-hint", "data-testid": "error-hint" }, advice.hint),
      h(
        "div",
        { class: "error-actions" },
        ...advice.actions.map((action) =>
          h(
            "button",
            {
              type: "button",
              class: `small-button${action === advice.actions[0] ? " primary" : ""}`,
              "data-testid": `error-${action}`,
              disabled: context.busy && action === "retry",
              onclick: () => this.callbacks.onErrorAction(action),
            },
            ERROR_ACTION_LABELS[action],
          ),
        ),
      ),
    );
  }

  private onClick(e: Event): void {
    const target = e.target as HTMLElement | null;
    const button = target?.closest<HTMLElement>("[data-copy-code]");
    if (button === null || button === undefined) return;
    const code = button.closest(".code-block")?.querySelector("code")?.textContent ?? "";
    void copyText(code, button);
  }
}

interface RenderContext {
  streaming: boolean;
  busy: boolean;
  isLastAssistant: boolean;
  editing: boolean;
}

function signatureOf(message: Message, context: RenderContext): string {
  return JSON.stringify([message.content, message.reasoning, message.stats, message.error, message.stopped, message.finishReason, context]);
}

export function autosize(textarea: HTMLTextAreaElement, maxPx = 240): void {
  textarea.style.height = "auto";
  textarea.style.height = `${Math.min(textarea.scrollHeight + 2, maxPx)}px`;
}

async function copyText(text: string, button: HTMLElement | null): Promise<void> {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    // Not a secure context (plain http on another host): fall back to a selection copy.
    const area = h("textarea", { class: "copy-buffer", "aria-hidden": "true" });
    area.value = text;
    document.body.appendChild(area);
    area.select();
    ok = document.execCommand("copy");
    area.remove();
  }
  if (button !== null) {
    button.dataset.copied = ok ? "yes" : "no";
    setTimeout(() => delete button.dataset.copied, 1200);
  }
}

function findLastIndex<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (predicate(items[i]!)) return i;
  return -1;
}
