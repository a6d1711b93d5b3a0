// The controller: owns the state, talks to the API, and tells the views what to show.
// Views never change state themselves; they call back here.
import { isAbort, listModels, streamChatCompletion, type ModelEntry, type Usage } from "./api/client";
import { ApiError, type ErrorAction } from "./api/errors";
import {
  appendUserMessage,
  buildChatRequestBody,
  createConversation,
  DEFAULT_SETTINGS,
  editUserMessage,
  findConversation,
  newId,
  touch,
  truncateForRegenerate,
} from "./state/conversations";
import { loadState, parseState, saveState, STORAGE_KEY } from "./state/storage";
import type { AnswerStats, AppState, Conversation, GenerationSettings, Message } from "./state/types";
import { Composer } from "./ui/composer";
import { h, isPhoneWidth } from "./ui/dom";
import { MessageList } from "./ui/messages";
import { SettingsPanel } from "./ui/settings-panel";
import { Sidebar } from "./ui/sidebar";
import { Topbar } from "./ui/topbar";

interface Generation {
  controller: AbortController;
  messageId: string;
}

const SAVE_INTERVAL_WHILE_STREAMING_MS = 1000;

export class ChatApp {
  private state: AppState;
  private models: ModelEntry[] | null = null;
  private readonly generations = new Map<string, Generation>();
  private readonly root: HTMLElement;
  private readonly notice: HTMLElement;
  private readonly sidebar: Sidebar;
  private readonly topbar: Topbar;
  private readonly messages: MessageList;
  private readonly composer: Composer;
  private readonly settings: SettingsPanel;
  private renderScheduled = false;
  private saveTimer: number | null = null;
  private sidebarSignature = "";
  private settingsConversationId: string | null = null;
  private saveDisabled = false;

  constructor(mount: HTMLElement) {
    const loaded = loadState(window.localStorage);
    this.state = loaded.state;
    this.saveDisabled = loaded.saveDisabled;
    this.sidebar = new Sidebar(
      {
        onNew: () => this.newChat(),
        onSelect: (id) => this.select(id),
        onRename: (id, title) => this.rename(id, title),
        onDelete: (id) => this.remove(id),
        onApiKeyChange: (key) => {
          this.state.apiKey = key;
          this.scheduleSave();
        },
        onRetryServer: () => void this.loadModels(),
        onClose: () => this.setPanel("sidebar", false),
      },
      this.state.apiKey,
    );
    this.topbar = new Topbar({
      onMenu: () => this.setPanel("sidebar", !this.root.classList.contains("sidebar-open")),
      onModelChange: (model) => this.changeModel(model),
      onSettings: () => this.setPanel("settings", !this.root.classList.contains("settings-open")),
    });
    this.messages = new MessageList({
      onEditSubmit: (id, text) => this.editAndRegenerate(id, text),
      onRegenerate: () => this.regenerate(),
      onErrorAction: (action) => this.onErrorAction(action),
    });
    this.composer = new Composer({ onSend: (text) => this.send(text), onStop: () => this.stop() });
    this.settings = new SettingsPanel({
      onChange: (patch) => this.changeSettings(patch),
      onClose: () => this.setPanel("settings", false),
    });
    this.notice = h("div", { class: "notice", role: "status", "data-testid": "notice", hidden: true });
    const backdrop = h("div", { class: "backdrop", "data-testid": "backdrop", "data-overlay": true, onclick: () => this.closePanels() });
    this.root = h(
      "div",
      { class: "app" },
      this.sidebar.element,
      h("main", { class: "main" }, this.topbar.element, this.notice, this.messages.element, this.composer.element),
      this.settings.element,
      backdrop,
    );
    mount.replaceChildren(this.root);
    if (loaded.problem !== null) this.showNotice(loaded.problem);

    if (findConversation(this.state, this.state.activeConversationId) === undefined) this.newChat();
    window.addEventListener("storage", (e) => this.onStorage(e));
    window.addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.closePanels();
    });
    window.addEventListener("pagehide", () => this.saveNow());
    this.render();
    this.composer.focus();
    void this.loadModels();
  }

  // ---- models -------------------------------------------------------------------------------

  private async loadModels(): Promise<void> {
    this.models = null;
    this.sidebar.setServerStatus("loading", "Connecting…");
    this.render();
    try {
      this.models = await listModels(this.state.apiKey);
    } catch (e) {
      this.models = [];
      const message = e instanceof ApiError ? e.error.message : String(e);
      this.sidebar.setServerStatus("error", `Server unreachable: ${message}`);
      this.render();
      return;
    }
    const n = this.models.length;
    this.sidebar.setServerStatus(n > 0 ? "ok" : "error", n > 0 ? `Connected · ${n} ${n === 1 ? "model" : "models"}` : "The server lists no models");
    const fallback = this.defaultModel();
    for (const c of this.state.conversations) if (c.model === "") c.model = fallback;
    this.render();
  }

  private defaultModel(): string {
    const ids = (this.models ?? []).map((m) => m.id);
    if (ids.includes(this.state.lastModel)) return this.state.lastModel;
    return ids[0] ?? this.state.lastModel;
  }

  // ---- conversations ------------------------------------------------------------------------

  private active(): Conversation | undefined {
    return findConversation(this.state, this.state.activeConversationId);
  }

  private newChat(): void {
    const current = this.active();
    if (current !== undefined && current.messages.length === 0) {
      this.closePanels();
      this.composer.focus();
      return;
    }
    const settings: GenerationSettings = current?.settings ?? DEFAULT_SETTINGS;
    const conversation = createConversation(current?.model || this.defaultModel(), settings);
    this.state.conversations.unshift(conversation);
    this.state.activeConversationId = conversation.id;
    this.saveNow();
    this.closePanels();
    this.render();
    this.composer.focus();
  }

  private select(id: string): void {
    if (findConversation(this.state, id) === undefined) return;
    this.state.activeConversationId = id;
    this.saveNow();
    this.setPanel("sidebar", false);
    this.render();
  }

  private rename(id: string, title: string): void {
    const c = findConversation(this.state, id);
    if (c === undefined) return;
    c.title = title;
    c.titleEdited = true;
    this.saveNow();
    this.render();
  }

  private remove(id: string): void {
    this.generations.get(id)?.controller.abort();
    this.state.conversations = this.state.conversations.filter((c) => c.id !== id);
    if (this.state.activeConversationId === id) this.state.activeConversationId = this.state.conversations[0]?.id ?? null;
    if (this.active() === undefined) this.newChat();
    this.saveNow();
    this.render();
  }

  private changeModel(model: string): void {
    const c = this.active();
    if (c === undefined) return;
    c.model = model;
    this.state.lastModel = model;
    this.saveNow();
    this.render();
  }

  private changeSettings(patch: Partial<GenerationSettings>): void {
    const c = this.active();
    if (c === undefined) return;
    c.settings = { ...c.settings, ...patch };
    this.scheduleSave();
  }

  // ---- generation ---------------------------------------------------------------------------

  private send(text: string): boolean {
    const c = this.active();
    if (c === undefined || this.generations.has(c.id)) return false;
    appendUserMessage(c, text);
    if (c.model === "") c.model = this.defaultModel();
    touch(this.state, c);
    void this.generate(c);
    return true;
  }

  private stop(): void {
    const id = this.state.activeConversationId;
    if (id !== null) this.generations.get(id)?.controller.abort();
  }

  private regenerate(): void {
    const c = this.active();
    if (c === undefined || this.generations.has(c.id) || !truncateForRegenerate(c)) return;
    touch(this.state, c);
    void this.generate(c);
  }

  private editAndRegenerate(messageId: string, text: string): void {
    const c = this.active();
    if (c === undefined || this.generations.has(c.id) || !editUserMessage(c, messageId, text)) return;
    touch(this.state, c);
    void this.generate(c);
  }

  private async generate(conversation: Conversation): Promise<void> {
    const answer: Message = { id: newId(), role: "assistant", content: "", createdAt: Date.now(), model: conversation.model };
    const request = buildChatRequestBody(conversation);
    conversation.messages.push(answer);
    if (!request.ok) {
      answer.error = { kind: "bad_request", status: null, message: request.error, retryAfterSeconds: null };
      this.saveNow();
      this.render();
      return;
    }
    const controller = new AbortController();
    this.generations.set(conversation.id, { controller, messageId: answer.id });
    this.state.lastModel = conversation.model;
    this.saveNow();
    this.render();
    if (conversation === this.active()) this.messages.scrollToBottom();

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
        approximate,
      };
    };
    try {
      const outcome = await streamChatCompletion({
        apiKey: this.state.apiKey,
        body: request.body,
        signal: controller.signal,
        onDelta: (text) => {
          const now = performance.now();
          firstAt ??= now;
          lastAt = now;
          deltas += 1;
          answer.content += text;
          this.scheduleRender();
          this.scheduleSave(SAVE_INTERVAL_WHILE_STREAMING_MS);
        },
      });
      answer.finishReason = outcome.finishReason;
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
    } finally {
      this.generations.delete(conversation.id);
      this.saveNow();
      this.render();
    }
  }

  private onErrorAction(action: ErrorAction): void {
    switch (action) {
      case "retry":
        this.regenerate();
        return;
      case "api-key":
        if (isPhoneWidth()) this.setPanel("sidebar", true);
        this.sidebar.focusApiKey();
        return;
      case "settings":
        this.setPanel("settings", true);
        return;
      case "edit-last": {
        const c = this.active();
        const lastUser = c?.messages.filter((m) => m.role === "user").at(-1);
        if (lastUser !== undefined) this.messages.startEditing(lastUser.id);
        return;
      }
      case "new-chat":
        this.newChat();
        return;
    }
  }

  // ---- panels -------------------------------------------------------------------------------

  private setPanel(panel: "sidebar" | "settings", open: boolean): void {
    this.root.classList.toggle(`${panel}-open`, open);
    if (open && panel === "settings") {
      this.root.classList.remove("sidebar-open");
      // On a phone, focusing a field would pop the keyboard over the panel.
      if (!isPhoneWidth()) this.settings.focusFirst();
    }
    if (open && panel === "sidebar") this.root.classList.remove("settings-open");
  }

  private closePanels(): void {
    this.root.classList.remove("sidebar-open", "settings-open");
  }

  private showNotice(text: string): void {
    this.notice.textContent = text;
    this.notice.hidden = false;
  }

  // ---- rendering and saving -----------------------------------------------------------------

  private scheduleRender(): void {
    if (this.renderScheduled) return;
    this.renderScheduled = true;
    requestAnimationFrame(() => {
      this.renderScheduled = false;
      this.render();
    });
  }

  private render(): void {
    const c = this.active();
    const generating = new Set(this.generations.keys());
    const signature = JSON.stringify([this.state.activeConversationId, this.state.conversations.map((x) => [x.id, x.title]), [...generating]]);
    if (signature !== this.sidebarSignature) {
      this.sidebarSignature = signature;
      this.sidebar.render({ conversations: this.state.conversations, activeId: this.state.activeConversationId, generatingIds: generating });
    }
    const model = c?.model ?? "";
    this.topbar.setTitle(c?.title ?? "llaisys");
    this.topbar.setModels(this.models, model);
    const generation = c === undefined ? undefined : this.generations.get(c.id);
    this.messages.render({ conversation: c, streamingMessageId: generation?.messageId ?? null, modelLabel: model });
    this.composer.setBusy(generation !== undefined);
    if (c !== undefined) {
      if (this.settingsConversationId !== c.id) {
        this.settingsConversationId = c.id;
        this.settings.reset(c.settings);
      } else {
        this.settings.setSettings(c.settings);
      }
    }
  }

  private scheduleSave(delayMs = 300): void {
    if (this.saveTimer !== null) return;
    this.saveTimer = window.setTimeout(() => {
      this.saveTimer = null;
      this.saveNow();
    }, delayMs);
  }

  private saveNow(): void {
    if (this.saveTimer !== null) {
      clearTimeout(this.saveTimer);
      this.saveTimer = null;
    }
    if (this.saveDisabled) return;  // unreadable chats that could not be backed up stay untouched
    const problem = saveState(window.localStorage, this.state);
    if (problem !== null) this.showNotice(problem);
  }

  // Another tab changed the chats: take its state. The chats this tab is streaming answers into
  // stay this tab's own objects (the streams write into them, and their saves carry them), so
  // neither tab's work is lost: ignoring the other tab while streaming, as before, let this tab's
  // next save erase what the other one had just written.
  private onStorage(e: StorageEvent): void {
    if (e.key !== STORAGE_KEY || e.newValue === null) return;
    const next = parseState(e.newValue);
    if (next === null) return;
    for (const id of this.generations.keys()) {
      const mine = findConversation(this.state, id);
      if (mine === undefined) continue;
      const at = next.conversations.findIndex((c) => c.id === id);
      if (at >= 0) next.conversations[at] = mine;
      else next.conversations.unshift(mine);
    }
    const activeId = this.state.activeConversationId;
    this.state = next;
    if (findConversation(next, activeId) !== undefined) this.state.activeConversationId = activeId;
    this.render();
  }
}
