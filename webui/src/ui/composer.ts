// The message box: Enter sends, Shift+Enter adds a line (IME composition is left alone); the send
// button turns into a stop button while the conversation's answer streams. Text files attached
// (the paperclip, or dropped on the box) go into the message as fenced code blocks (attachments.ts);
// a file that cannot be attached is named in a message above the box.
import { attachmentFromBytes, attachmentSizeError } from "../attachments";
import { h, icon, iconButton } from "./dom";
import { autosize } from "./messages";

export interface ComposerCallbacks {
  // Returns true when the text was taken (the box is then cleared).
  onSend(text: string): boolean;
  onStop(): void;
  onHelp(): void;
}

export class Composer {
  readonly element: HTMLElement;
  private readonly textarea: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly fileInput: HTMLInputElement;
  private readonly attachError: HTMLElement;
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
    this.fileInput = h("input", { type: "file", multiple: true, hidden: true, "data-testid": "attach-file", "aria-label": "Text files to attach" });
    this.fileInput.addEventListener("change", () => {
      void this.attach([...(this.fileInput.files ?? [])]);
      this.fileInput.value = "";
    });
    this.attachError = h("p", { class: "composer-error", "data-testid": "attach-error", role: "alert", hidden: true });
    const form = h(
      "form",
      { class: "composer-form", onsubmit: (e: Event) => (e.preventDefault(), this.submit()) },
      iconButton("paperclip", "Attach text files", () => this.fileInput.click(), { class: "icon-button attach-button", "data-testid": "attach" }),
      this.fileInput,
      this.textarea,
      this.sendButton,
      this.stopButton,
    );
    form.addEventListener("dragover", (e) => {
      if (e.dataTransfer?.types.includes("Files") === true) e.preventDefault();
    });
    form.addEventListener("drop", (e) => {
      if (e.dataTransfer === null || e.dataTransfer.files.length === 0) return;
      e.preventDefault();
      void this.attach([...e.dataTransfer.files]);
    });
    this.element = h(
      "footer",
      { class: "composer" },
      this.attachError,
      form,
      h(
        "p",
        { class: "composer-hint" },
        h("kbd", {}, "Enter"),
        " to send · ",
        h("kbd", {}, "Shift"),
        "+",
        h("kbd", {}, "Enter"),
        " for a new line · ",
        h("button", { type: "button", class: "link-button", "data-testid": "shortcuts", onclick: () => this.callbacks.onHelp() }, "Shortcuts"),
        " ",
        h("kbd", {}, "?"),
      ),
    );
    this.refresh();
  }

  // Whether `element` is the message box (for shortcuts that apply while typing in it).
  owns(element: Element | null): boolean {
    return element === this.textarea;
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
      this.showAttachErrors([]);
      this.refresh();
    }
  }

  // Adds each file that can be attached to the message at the cursor; names those that cannot.
  private async attach(files: readonly File[]): Promise<void> {
    const errors: string[] = [];
    for (const file of files) {
      const sizeError = attachmentSizeError(file.name, file.size);
      if (sizeError !== null) {
        errors.push(sizeError);
        continue;
      }
      const result = attachmentFromBytes(file.name, new Uint8Array(await file.arrayBuffer()));
      if (result.ok) this.insertBlock(result.text);
      else errors.push(result.error);
    }
    this.showAttachErrors(errors);
    this.textarea.focus();
  }

  private insertBlock(block: string): void {
    const { value, selectionStart, selectionEnd } = this.textarea;
    const before = value.slice(0, selectionStart);
    const after = value.slice(selectionEnd);
    const lead = before.length === 0 || before.endsWith("\n\n") ? "" : before.endsWith("\n") ? "\n" : "\n\n";
    const trail = after.length === 0 || after.startsWith("\n") ? "\n" : "\n\n";
    this.textarea.value = `${before}${lead}${block}${trail}${after}`;
    const caret = before.length + lead.length + block.length + trail.length;
    this.textarea.setSelectionRange(caret, caret);
    this.refresh();
  }

  private showAttachErrors(errors: readonly string[]): void {
    this.attachError.textContent = errors.join(" ");
    this.attachError.hidden = errors.length === 0;
  }

  private refresh(): void {
    autosize(this.textarea, 200);
    this.sendButton.hidden = this.busy;
    this.stopButton.hidden = !this.busy;
    this.sendButton.disabled = this.textarea.value.trim().length === 0;
  }
}
