// The controller: owns the state, talks to the API, and tells the views what to show.
// Views never change state themselves; they call back here.
import { listModels, type ModelEntry } from "./api/client";
import { ApiError, type ErrorAction } from "./api/errors";
import { streamAnswer } from "./generation";
import {
  appendUserMessage,
  buildChatRequestBody,
  createConversation,
  DEFAULT_SETTINGS,
  editUserMessage,
  findConversation,
  newId,
  takeOtherTabState,
  touch,
  truncateForRegenerate,
} from "./state/conversations";
import { loadState, parseState, saveState, STORAGE_KEY } from "./state/storage";
import { describeImport, mergeImported } from "./state/transfer";
import type { AppState, Conversation, GenerationSettings, Message } from "./state/types";
import { exportToFile, readExportFile } from "./ui/chat-files";
import { Composer } from "./ui/composer";
import { h, isPhoneWidth } from "./ui/dom";
import { HelpDialog } from "./ui/help-dialog";
import { listenForShortcuts } from "./ui/keyboard";
import { MessageList } from "./ui/messages";
import { Panels } from "./ui/panels";
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
  private readonly panels: Panels;
  private readonly notice: HTMLElement;
  private readonly sidebar: Sidebar;
  private readonly topbar: Topbar;
  private readonly messages: MessageList;
  private readonly composer: Composer;
  private readonly settings: SettingsPanel;
  private readonly help = new HelpDialog();
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
        onExport: (id) => {
          const outcome = exportToFile(this.state, id);
          this.sidebar.showTransferMessage(outcome.kind, outcome.text);
        },
        onImport: (file) => void this.importChats(file),
        onApiKeyChange: (key) => {
          this.state.apiKey = key;
          this.scheduleSave();
        },
        onRetryServer: () => void this.loadModels(),
        onClose: () => this.panels.set("sidebar", false),
      },
      this.state.apiKey,
    );
    this.topbar = new Topbar({
      onMenu: () => this.panels.toggleSidebar(),
      onModelChange: (model) => this.changeModel(model),
      onSettings: () => this.panels.toggle("settings"),
    });
    this.messages = new MessageList({
      onEditSubmit: (id, text) => this.editAndRegenerate(id, text),
      onRegenerate: () => this.regenerate(),
      onErrorAction: (action) => this.onErrorAction(action),
    });
    this.composer = new Composer({ onSend: (text) => this.send(text), onStop: () => this.stop(), onHelp: () => this.help.open() });
    this.settings = new SettingsPanel({
      onChange: (patch) => this.changeSettings(patch),
      onClose: () => this.panels.set("settings", false),
    });
    this.notice = h("div", { class: "notice", role: "status", "data-testid": "notice", hidden: true });
    const backdrop = h("div", { class: "backdrop", "data-testid": "backdrop", "data-overlay": true, onclick: () => this.panels.closeAll() });
    const root = h(
      "div",
      { class: "app" },
      this.sidebar.element,
      h("main", { class: "main" }, this.topbar.element, this.notice, this.messages.element, this.composer.element),
      this.settings.element,
      backdrop,
      this.help.element,
    );
    this.panels = new Panels(root, () => {
      // On a phone, focusing a field would pop the keyboard over the panel.
      if (!isPhoneWidth()) this.settings.focusFirst();
    });
    mount.replaceChildren(root);
    if (loaded.problem !== null) this.showNotice(loaded.problem);

    if (findConversation(this.state, this.state.activeConversationId) === undefined) this.newChat();
    window.addEventListener("storage", (e) => this.onStorage(e));
    listenForShortcuts({
      isComposer: (element) => this.composer.owns(element),
      paused: () => this.help.isOpen,
      closePanels: () => this.panels.closeAll(),
      actions: {
        "new-chat": () => this.newChat(),
        "focus-composer": () => this.composer.focus(),
        stop: () => this.stop(),
        "toggle-sidebar": () => this.panels.toggleSidebar(),
        help: () => this.help.open(),
      },
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
      this.panels.closeAll();
      this.composer.focus();
      return;
    }
    const settings: GenerationSettings = current?.settings ?? DEFAULT_SETTINGS;
    const conversation = createConversation(current?.model || this.defaultModel(), settings);
    this.state.conversations.unshift(conversation);
    this.state.activeConversationId = conversation.id;
    this.saveNow();
    this.panels.closeAll();
    this.render();
    this.composer.focus();
  }

  private select(id: string): void {
    if (findConversation(this.state, id) === undefined) return;
    this.state.activeConversationId = id;
    this.saveNow();
    this.panels.set("sidebar", false);
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

    await streamAnswer(answer, {
      apiKey: this.state.apiKey,
      body: request.body,
      signal: controller.signal,
      onUpdate: () => {
        this.scheduleRender();
        this.scheduleSave(SAVE_INTERVAL_WHILE_STREAMING_MS);
      },
    });
    this.generations.delete(conversation.id);
    this.saveNow();
    this.render();
  }

  private onErrorAction(action: ErrorAction): void {
    switch (action) {
      case "retry":
        this.regenerate();
        return;
      case "api-key":
        if (isPhoneWidth()) this.panels.set("sidebar", true);
        this.sidebar.focusApiKey();
        return;
      case "settings":
        this.panels.set("settings", true);
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

  // ---- import -------------------------------------------------------------------------------

  // All or nothing: a file that does not validate changes nothing.
  private async importChats(file: File): Promise<void> {
    const parsed = await readExportFile(file);
    if (!parsed.ok) {
      this.sidebar.showTransferMessage("error", parsed.error);
      return;
    }
    const result = mergeImported(this.state, parsed.conversations);
    if (result.firstId !== null) this.state.activeConversationId = result.firstId;
    this.saveNow();
    this.render();
    this.sidebar.showTransferMessage("ok", describeImport(result));
  }

  // ---- rendering and saving -----------------------------------------------------------------

  private showNotice(text: string): void {
    this.notice.textContent = text;
    this.notice.hidden = false;
  }

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

  // Another tab changed the chats: take its state (keeping the chats this tab streams into).
  private onStorage(e: StorageEvent): void {
    if (e.key !== STORAGE_KEY || e.newValue === null) return;
    const next = parseState(e.newValue);
    if (next === null) return;
    this.state = takeOtherTabState(this.state, next, this.generations.keys());
    this.render();
  }
}
