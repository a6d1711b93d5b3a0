// The message box: Enter sends, Shift+Enter adds a line (IME composition is left alone); the send
// button turns into a stop button while the conversation's answer streams.
import { h, icon } from "./dom";
import { autosize } from "./messages";

export interface ComposerCallbacks {
  // Returns true when the text was taken (the box is then cleared).
  onSend(text: string): boolean;
  onStop(): void;
}

export class Composer {
  readonly element: HTMLElement;
  private readonly textarea: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private busy = false;

  constructor(private readonly callbacks: ComposerCallbacks) {
    this.textarea = h("textarea", {
      class: "composer-input",
      "data-testid": "composer-input",
      rows: 1,
      placeholder: "Message llaisys…",
      "aria-label": "Message",
      enterkeyhint: "send",
    });
    this.textarea.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        this.submit();
      }
    });
    this.textarea.addEventListener("input", () => this.refresh());
    this.sendButton = h(
      "button",
      { type: "submit", class: "send-button", "data-testid": "send", title: "Send (Enter)", "aria-label": "Send" },
      icon("send"),
    );
    this.stopButton = h(
      "button",
      { type: "button", class: "stop-button", "data-testid": "stop", title: "Stop the answer", "aria-label": "Stop", onclick: () => this.callbacks.onStop() },
      icon("stop"),
      h("span", {}, "Stop"),
    );
    const form = h(
      "form",
      { class: "composer-form", onsubmit: (e: Event) => (e.preventDefault(), this.submit()) },
      this.textarea,
      this.sendButton,
      this.stopButton,
    );
    this.element = h(
      "footer",
      { class: "composer" },
      form,
      h("p", { class: "composer-hint" }, h("kbd", {}, "Enter"), " to send · ", h("kbd", {}, "Shift"), "+", h("kbd", {}, "Enter"), " for a new line"),
    );
    this.refresh();
  }

  setBusy(busy: boolean): void {
    this.busy = busy;
    this.refresh();
  }

  focus(): void {
    this.textarea.focus();
  }

  private submit(): void {
    const text = this.textarea.value;
    if (this.busy || text.trim().length === 0) return;
    if (this.callbacks.onSend(text)) {
      this.textarea.value = "";
      this.refresh();
    }
  }

  private refresh(): void {
    autosize(this.textarea, 200);
    this.sendButton.hidden = this.busy;
    this.stopButton.hidden = !this.busy;
    this.sendButton.disabled = this.textarea.value.trim().length === 0;
  }
}
