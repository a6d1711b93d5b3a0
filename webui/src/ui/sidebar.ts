// The conversation list (new, switch, rename, export, delete), export / import of all chats, and
// the connection box (server status, API key).
import type { Conversation } from "../state/types";
import { h, icon, iconButton } from "./dom";

export interface SidebarCallbacks {
  onNew(): void;
  onSelect(id: string): void;
  onRename(id: string, title: string): void;
  onDelete(id: string): void;
  // null: every conversation.
  onExport(id: string | null): void;
  onImport(file: File): void;
  onApiKeyChange(key: string): void;
  onRetryServer(): void;
  onClose(): void;
}

export interface SidebarModel {
  conversations: readonly Conversation[];
  activeId: string | null;
  generatingIds: ReadonlySet<string>;
}

export type ServerStatusKind = "loading" | "ok" | "error";

export class Sidebar {
  readonly element: HTMLElement;
  private readonly list: HTMLUListElement;
  private readonly statusLine: HTMLElement;
  private readonly apiKeyInput: HTMLInputElement;
  private readonly transferMessage: HTMLElement;
  private renamingId: string | null = null;
  private confirmingDeleteId: string | null = null;
  private lastModel: SidebarModel | null = null;

  constructor(private readonly callbacks: SidebarCallbacks, apiKey: string) {
    this.list = h("ul", { class: "conversation-list", "data-testid": "conversation-list" });
    this.statusLine = h("div", { class: "server-status", "data-testid": "server-status", role: "status" });
    this.apiKeyInput = h("input", {
      id: "api-key",
      type: "password",
      autocomplete: "off",
      spellcheck: "false",
      placeholder: "Only if the server needs one",
      "data-testid": "api-key",
      oninput: () => this.callbacks.onApiKeyChange(this.apiKeyInput.value.trim()),
    });
    this.apiKeyInput.value = apiKey;
    const importInput = h("input", { type: "file", accept: ".json,application/json", hidden: true, "data-testid": "import-file", "aria-label": "Chat export file" });
    importInput.addEventListener("change", () => {
      const file = importInput.files?.[0];
      importInput.value = "";
      if (file !== undefined) this.callbacks.onImport(file);
    });
    this.transferMessage = h("p", { class: "transfer-message", "data-testid": "transfer-message", role: "status", hidden: true });
    const reveal = iconButton("eye", "Show or hide the API key", () => {
      this.apiKeyInput.type = this.apiKeyInput.type === "password" ? "text" : "password";
    });
    this.element = h(
      "aside",
      { class: "sidebar", id: "sidebar", "aria-label": "Chats and connection", "data-overlay": true },
      h(
        "div",
        { class: "sidebar-head" },
        h("div", { class: "brand" }, h("span", { class: "brand-mark", "aria-hidden": "true" }), "llaisys"),
        iconButton("close", "Close the chat list", () => this.callbacks.onClose(), { class: "icon-button sidebar-close" }),
      ),
      h(
        "button",
        { type: "button", class: "new-chat", "data-testid": "new-chat", onclick: () => this.callbacks.onNew() },
        icon("plus"),
        h("span", {}, "New chat"),
      ),
      h("nav", { class: "conversation-nav", "aria-label": "Chats" }, this.list),
      h(
        "div",
        { class: "sidebar-transfer" },
        h(
          "div",
          { class: "transfer-buttons" },
          h("button", { type: "button", class: "small-button", "data-testid": "import", onclick: () => importInput.click() }, icon("upload"), h("span", {}, "Import")),
          h("button", { type: "button", class: "small-button", "data-testid": "export-all", onclick: () => this.callbacks.onExport(null) }, icon("download"), h("span", {}, "Export all")),
          importInput,
        ),
        this.transferMessage,
      ),
      h(
        "div",
        { class: "sidebar-foot" },
        this.statusLine,
        h("label", { class: "field-label", for: "api-key" }, "API key"),
        h("div", { class: "api-key-row" }, this.apiKeyInput, reveal),
      ),
    );
  }

  focusApiKey(): void {
    this.apiKeyInput.focus();
    this.apiKeyInput.select();
  }

  // The outcome of an import or export, shown under its buttons until the next one.
  showTransferMessage(kind: "ok" | "error", text: string): void {
    this.transferMessage.textContent = text;
    this.transferMessage.dataset.kind = kind;
    this.transferMessage.setAttribute("role", kind === "error" ? "alert" : "status");
    this.transferMessage.hidden = false;
  }

  setServerStatus(kind: ServerStatusKind, text: string): void {
    this.statusLine.replaceChildren(h("span", { class: `status-dot ${kind}`, "aria-hidden": "true" }), h("span", { class: "status-text" }, text));
    this.statusLine.dataset.state = kind;
    if (kind === "error") {
      this.statusLine.appendChild(
        h("button", { type: "button", class: "link-button", "data-testid": "server-retry", onclick: () => this.callbacks.onRetryServer() }, "Retry"),
      );
    }
  }

  render(model: SidebarModel): void {
    this.lastModel = model;
    // A re-render while renaming (e.g. another chat's answer finished) keeps what was typed.
    const typing = this.list.querySelector<HTMLInputElement>(".rename-input");
    const typed = typing !== null && typing.dataset.id === this.renamingId ? typing.value : null;
    const items = model.conversations.map((c) => this.renderItem(c, model));
    if (items.length === 0) {
      items.push(h("li", { class: "conversation-empty" }, "No chats yet. Your chats are kept in this browser."));
    }
    this.list.replaceChildren(...items);
    const editor = this.list.querySelector<HTMLInputElement>(".rename-input");
    if (editor !== null && typed !== null) editor.value = typed;
    if (editor !== null && document.activeElement !== editor) {
      editor.focus();
      editor.select();
    }
  }

  private rerender(): void {
    if (this.lastModel !== null) this.render(this.lastModel);
  }

  private renderItem(c: Conversation, model: SidebarModel): HTMLLIElement {
    const active = c.id === model.activeId;
    const item = h("li", { class: `conversation${active ? " active" : ""}`, "data-testid": "conversation", "data-id": c.id });
    if (this.renamingId === c.id) {
      item.appendChild(this.renderRenameForm(c));
      return item;
    }
    if (this.confirmingDeleteId === c.id) {
      item.classList.add("confirming");
      item.append(
        h("span", { class: "confirm-text" }, "Delete this chat?"),
        h(
          "button",
          { type: "button", class: "small-button danger", "data-testid": "confirm-delete", onclick: () => this.finishDelete(c.id, true) },
          "Delete",
        ),
        h("button", { type: "button", class: "small-button", onclick: () => this.finishDelete(c.id, false) }, "Cancel"),
      );
      return item;
    }
    const select = h(
      "button",
      {
        type: "button",
        class: "conversation-select",
        "data-testid": "conversation-select",
        "aria-current": active ? "page" : null,
        onclick: () => this.callbacks.onSelect(c.id),
      },
      h("span", { class: "conversation-title", "data-testid": "conversation-title" }, c.title),
    );
    if (model.generatingIds.has(c.id)) select.appendChild(h("span", { class: "typing-dot", title: "Answering…" }));
    item.append(
      select,
      h(
        "div",
        { class: "conversation-actions" },
        iconButton("pencil", "Rename", () => this.startRename(c.id), { "data-testid": "rename" }),
        iconButton("download", "Export this chat", () => this.callbacks.onExport(c.id), { "data-testid": "export" }),
        iconButton("trash", "Delete", () => this.startDelete(c.id), { "data-testid": "delete" }),
      ),
    );
    return item;
  }

  private renderRenameForm(c: Conversation): HTMLFormElement {
    const input = h("input", {
      class: "rename-input",
      "data-testid": "rename-input",
      "aria-label": "Chat name",
      "data-id": c.id,
      maxlength: 200,
      onkeydown: (e: Event) => {
        if ((e as KeyboardEvent).key === "Escape") this.finishRename(c.id, null);
      },
    });
    input.value = c.title;
    return h(
      "form",
      {
        class: "rename-form",
        onsubmit: (e: Event) => {
          e.preventDefault();
          this.finishRename(c.id, input.value);
        },
      },
      input,
      iconButton("check", "Save name", () => this.finishRename(c.id, input.value), { "data-testid": "rename-save" }),
    );
  }

  private startRename(id: string): void {
    this.renamingId = id;
    this.confirmingDeleteId = null;
    this.rerender();
  }

  private finishRename(id: string, title: string | null): void {
    if (this.renamingId !== id) return;
    this.renamingId = null;
    const trimmed = title?.trim() ?? "";
    if (trimmed.length > 0) this.callbacks.onRename(id, trimmed);
    else this.rerender();
  }

  private startDelete(id: string): void {
    this.confirmingDeleteId = id;
    this.renamingId = null;
    this.rerender();
  }

  private finishDelete(id: string, confirmed: boolean): void {
    this.confirmingDeleteId = null;
    if (confirmed) this.callbacks.onDelete(id);
    else this.rerender();
  }
}
