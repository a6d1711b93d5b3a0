// Per-conversation settings: system prompt, temperature, top_p, max_tokens and extra request fields.
// A field is saved as soon as it holds a valid value; an invalid one shows why and is not saved.
import { parseExtraParams } from "../state/conversations";
import type { GenerationSettings } from "../state/types";
import { h, iconButton } from "./dom";

export interface SettingsCallbacks {
  onChange(patch: Partial<GenerationSettings>): void;
  onClose(): void;
}

interface NumberField {
  key: "temperature" | "topP" | "maxTokens";
  input: HTMLInputElement;
  error: HTMLElement;
  min: number;
  max: number;
  integer: boolean;
}

export class SettingsPanel {
  readonly element: HTMLElement;
  private readonly systemPrompt: HTMLTextAreaElement;
  private readonly extraParams: HTMLTextAreaElement;
  private readonly extraError: HTMLElement;
  private readonly numbers: NumberField[] = [];

  constructor(private readonly callbacks: SettingsCallbacks) {
    this.systemPrompt = h("textarea", { id: "setting-system", class: "settings-input", rows: 4, "data-testid": "setting-system-prompt", placeholder: "Optional: instructions sent before the conversation" });
    this.systemPrompt.addEventListener("input", () => this.callbacks.onChange({ systemPrompt: this.systemPrompt.value }));
    this.extraParams = h("textarea", {
      id: "setting-extra",
      class: "settings-input mono",
      rows: 3,
      spellcheck: "false",
      "data-testid": "setting-extra",
      placeholder: '{"seed": 42, "stop": ["\\n\\n"]}',
    });
    this.extraError = h("p", { class: "field-error", "data-testid": "setting-extra-error", role: "alert" });
    this.extraParams.addEventListener("input", () => {
      const parsed = parseExtraParams(this.extraParams.value);
      this.extraError.textContent = parsed.ok ? "" : parsed.error;
      if (parsed.ok) this.callbacks.onChange({ extraParams: this.extraParams.value });
    });

    const body = h(
      "div",
      { class: "settings-body" },
      h("p", { class: "settings-note" }, "These settings belong to this chat; a new chat starts with a copy. Empty fields use the server's defaults."),
      field("setting-system", "System prompt", this.systemPrompt),
      h(
        "div",
        { class: "settings-grid" },
        this.numberField("temperature", "Temperature", 0, 2, 0.1, false, "0 = always the likeliest token"),
        this.numberField("topP", "Top p", 0, 1, 0.05, false, "nucleus sampling"),
        this.numberField("maxTokens", "Max tokens", 1, 1_000_000, 1, true, "answer length limit"),
      ),
      field("setting-extra", "Extra request fields (JSON)", this.extraParams, this.extraError, h("p", { class: "field-help" }, "Merged into each request, e.g. seed, stop, top_k, logit_bias.")),
    );
    this.element = h(
      "aside",
      { class: "settings-panel", id: "settings-panel", "data-testid": "settings-panel", "aria-label": "Chat settings", "data-overlay": true },
      h("div", { class: "settings-head" }, h("h2", {}, "Chat settings"), iconButton("close", "Close settings", () => this.callbacks.onClose(), { "data-testid": "settings-close" })),
      body,
    );
    this.element.addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.callbacks.onClose();
    });
  }

  // Shows a conversation's settings; fields being edited keep what the user typed.
  setSettings(settings: GenerationSettings): void {
    setIfIdle(this.systemPrompt, settings.systemPrompt);
    setIfIdle(this.extraParams, settings.extraParams);
    for (const f of this.numbers) setIfIdle(f.input, settings[f.key] === null ? "" : String(settings[f.key]));
  }

  // Forgets invalid input (on switching conversations).
  reset(settings: GenerationSettings): void {
    for (const f of this.numbers) f.error.textContent = "";
    this.extraError.textContent = "";
    this.systemPrompt.value = settings.systemPrompt;
    this.extraParams.value = settings.extraParams;
    for (const f of this.numbers) f.input.value = settings[f.key] === null ? "" : String(settings[f.key]);
  }

  focusFirst(): void {
    this.systemPrompt.focus();
  }

  private numberField(key: NumberField["key"], label: string, min: number, max: number, step: number, integer: boolean, help: string): HTMLElement {
    const id = `setting-${key}`;
    const input = h("input", { id, type: "number", class: "settings-input", min, max, step, inputmode: integer ? "numeric" : "decimal", placeholder: "default", "data-testid": id });
    const error = h("p", { class: "field-error", role: "alert" });
    const f: NumberField = { key, input, error, min, max, integer };
    this.numbers.push(f);
    input.addEventListener("input", () => {
      const text = input.value.trim();
      if (text.length === 0) {
        error.textContent = "";
        this.callbacks.onChange({ [key]: null });
        return;
      }
      const value = Number(text);
      if (!Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
        error.textContent = `${integer ? "A whole number" : "A number"} from ${min} to ${max}.`;
        return;
      }
      error.textContent = "";
      this.callbacks.onChange({ [key]: value });
    });
    return field(id, label, input, error, h("p", { class: "field-help" }, help));
  }
}

function field(id: string, label: string, ...controls: HTMLElement[]): HTMLElement {
  return h("div", { class: "settings-field" }, h("label", { class: "field-label", for: id }, label), ...controls);
}

function setIfIdle(input: HTMLInputElement | HTMLTextAreaElement, value: string): void {
  if (document.activeElement !== input && input.value !== value) input.value = value;
}
