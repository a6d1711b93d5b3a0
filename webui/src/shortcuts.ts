// The keyboard shortcuts: one table, which app.ts matches key presses against and the help panel
// (ui/help-dialog.ts) lists, so the two cannot disagree. Pure; unit-tested in unit-tests/shortcuts.test.ts.

export type ShortcutAction = "new-chat" | "focus-composer" | "stop" | "toggle-sidebar" | "help";

// Where the focus may be for a key to count: anywhere; in the message box or on no field at all;
// or on no text field (so typing "?" in a field stays typing).
export type ShortcutScope = "anywhere" | "composer-or-page" | "page";

export interface KeyCombo {
  key: string; // KeyboardEvent.key, lowercase
  ctrl?: boolean; // Ctrl, or ⌘ on a Mac
  shift?: boolean; // undefined: either (for "?", which needs Shift on some layouts only)
  scope: ShortcutScope;
}

export interface Shortcut {
  action: ShortcutAction;
  description: string;
  combos: readonly KeyCombo[];
}

export const SHORTCUTS: readonly Shortcut[] = [
  { action: "new-chat", description: "New chat", combos: [{ key: "o", ctrl: true, shift: true, scope: "anywhere" }] },
  { action: "focus-composer", description: "Focus the message box", combos: [{ key: "escape", shift: true, scope: "anywhere" }] },
  { action: "stop", description: "Stop the answer (or close the open panel)", combos: [{ key: "escape", shift: false, scope: "composer-or-page" }] },
  { action: "toggle-sidebar", description: "Show or hide the chat list", combos: [{ key: "s", ctrl: true, shift: true, scope: "anywhere" }] },
  {
    action: "help",
    description: "Keyboard shortcuts (this list)",
    combos: [
      { key: "?", scope: "page" },
      { key: "/", ctrl: true, scope: "anywhere" },
    ],
  },
];

// What the handler needs of a KeyboardEvent.
export interface KeyPress {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
  altKey: boolean;
}

// Where the focus is: "composer" (the message box), "field" (another text field, a select, a
// contenteditable) or "page" (anything else).
export type FocusPlace = "composer" | "field" | "page";

export function matchShortcut(press: KeyPress, focus: FocusPlace): ShortcutAction | null {
  if (press.altKey) return null;
  const key = press.key.toLowerCase();
  const ctrl = press.ctrlKey || press.metaKey;
  for (const shortcut of SHORTCUTS) {
    for (const combo of shortcut.combos) {
      if (combo.key !== key || (combo.ctrl ?? false) !== ctrl) continue;
      if (combo.shift !== undefined && combo.shift !== press.shiftKey) continue;
      if (combo.scope === "page" && focus !== "page") continue;
      if (combo.scope === "composer-or-page" && focus === "field") continue;
      return shortcut.action;
    }
  }
  return null;
}

// The keys of a combo as shown: ["Ctrl", "Shift", "O"] (⌘ instead of Ctrl on a Mac).
export function comboLabels(combo: KeyCombo, mac: boolean): string[] {
  const labels: string[] = [];
  if (combo.ctrl === true) labels.push(mac ? "⌘" : "Ctrl");
  if (combo.shift === true) labels.push("Shift");
  labels.push(combo.key === "escape" ? "Esc" : combo.key.length === 1 ? combo.key.toUpperCase() : combo.key);
  return labels;
}
