// The keyboard shortcuts panel: a modal <dialog> listing shortcuts.ts's table and the message box's
// own keys. Esc or the close button closes it; focus returns where it was.
import { comboLabels, SHORTCUTS } from "../shortcuts";
import { h, iconButton } from "./dom";

const COMPOSER_KEYS: ReadonlyArray<[readonly string[], string]> = [
  [["Enter"], "Send the message"],
  [["Shift", "Enter"], "New line in the message"],
];

export class HelpDialog {
  readonly element: HTMLDialogElement;

  constructor() {
    const mac = /Mac|iPhone|iPad/.test(navigator.platform);
    const rows = [
      ...SHORTCUTS.map((s) => row(s.combos.map((c) => comboLabels(c, mac)), s.description, s.action)),
      ...COMPOSER_KEYS.map(([keys, description]) => row([keys], description, null)),
    ];
    this.element = h(
      "dialog",
      { class: "help-dialog", "data-testid": "help", "aria-labelledby": "help-title", "data-overlay": true },
      h(
        "div",
        { class: "help-panel" },
        h(
          "div",
          { class: "help-head" },
          h("h2", { id: "help-title" }, "Keyboard shortcuts"),
          iconButton("close", "Close", () => this.close(), { "data-testid": "help-close" }),
        ),
        h("table", { class: "help-table" }, h("tbody", {}, ...rows)),
        h("p", { class: "help-note" }, mac ? "⌘ works where Ctrl is shown." : "On a Mac, ⌘ works where Ctrl is shown."),
      ),
    );
    // The panel fills the dialog's box: a click on the dialog itself is on the backdrop.
    this.element.addEventListener("click", (e) => {
      if (e.target === this.element) this.close();
    });
  }

  get isOpen(): boolean {
    return this.element.open;
  }

  open(): void {
    if (!this.element.open) this.element.showModal();
  }

  close(): void {
    this.element.close();
  }
}

function row(combos: readonly (readonly string[])[], description: string, action: string | null): HTMLTableRowElement {
  const keys = h("td", { class: "help-keys" });
  combos.forEach((labels, i) => {
    if (i > 0) keys.append(" or ");
    labels.forEach((label, j) => {
      if (j > 0) keys.append("+");
      keys.append(h("kbd", {}, label));
    });
  });
  return h("tr", { "data-action": action }, keys, h("td", {}, description));
}
