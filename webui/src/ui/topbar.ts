// The bar above the messages: chat list button (phone width), chat title, model picker, settings.
import type { ModelEntry } from "../api/client";
import { h, iconButton } from "./dom";

export interface TopbarCallbacks {
  onMenu(): void;
  onModelChange(model: string): void;
  onSettings(): void;
}

export class Topbar {
  readonly element: HTMLElement;
  private readonly title: HTMLElement;
  private readonly select: HTMLSelectElement;

  constructor(private readonly callbacks: TopbarCallbacks) {
    this.title = h("h1", { class: "chat-title", "data-testid": "chat-title" });
    this.select = h("select", {
      class: "model-select",
      id: "model-select",
      "data-testid": "model-select",
      "aria-label": "Model",
      onchange: () => this.callbacks.onModelChange(this.select.value),
    });
    this.element = h(
      "header",
      { class: "topbar" },
      iconButton("menu", "Chats", () => this.callbacks.onMenu(), { class: "icon-button menu-button", "data-testid": "menu", "aria-controls": "sidebar" }),
      this.title,
      h("label", { class: "model-picker", title: "Model" }, this.select),
      iconButton("sliders", "Chat settings", () => this.callbacks.onSettings(), {
        class: "icon-button settings-button",
        "data-testid": "settings",
        "aria-controls": "settings-panel",
      }),
    );
  }

  setTitle(title: string): void {
    this.title.textContent = title;
    document.title = `${title} · llaisys`;
  }

  // `models` null while loading; `selected` may be a model the server no longer lists.
  setModels(models: readonly ModelEntry[] | null, selected: string): void {
    const options: HTMLOptionElement[] = [];
    if (models === null) {
      options.push(h("option", { value: selected }, selected.length > 0 ? selected : "Loading models…"));
    } else {
      for (const m of models) options.push(h("option", { value: m.id }, m.id));
      if (selected.length > 0 && !models.some((m) => m.id === selected)) {
        options.push(h("option", { value: selected }, `${selected} (not on this server)`));
      }
      if (options.length === 0) options.push(h("option", { value: "" }, "No models"));
    }
    this.select.replaceChildren(...options);
    this.select.value = selected;
    this.select.disabled = models === null || models.length === 0;
  }
}
