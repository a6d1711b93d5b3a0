// Keyboard shortcuts (shortcuts.ts): what each key press means where the focus is, and the labels.
import assert from "node:assert/strict";
import { test } from "node:test";
import { comboLabels, matchShortcut, SHORTCUTS, type KeyPress } from "../src/shortcuts";

const press = (key: string, mods: Partial<KeyPress> = {}): KeyPress => ({ key, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, ...mods });

test("shortcuts match their keys, with Ctrl or ⌘, where the focus allows", () => {
  assert.equal(matchShortcut(press("O", { ctrlKey: true, shiftKey: true }), "field"), "new-chat");
  assert.equal(matchShortcut(press("O", { metaKey: true, shiftKey: true }), "page"), "new-chat");
  assert.equal(matchShortcut(press("o", { ctrlKey: true }), "page"), null, "Ctrl+O alone is the browser's");
  assert.equal(matchShortcut(press("S", { ctrlKey: true, shiftKey: true }), "composer"), "toggle-sidebar");
  assert.equal(matchShortcut(press("Escape", { shiftKey: true }), "field"), "focus-composer");
  assert.equal(matchShortcut(press("Escape"), "composer"), "stop");
  assert.equal(matchShortcut(press("Escape"), "page"), "stop");
  assert.equal(matchShortcut(press("Escape"), "field"), null, "Esc in another field is that field's");
  assert.equal(matchShortcut(press("?", { shiftKey: true }), "page"), "help");
  assert.equal(matchShortcut(press("?"), "composer"), null, "typing ? in the message box stays typing");
  assert.equal(matchShortcut(press("/", { ctrlKey: true }), "composer"), "help");
  assert.equal(matchShortcut(press("O", { ctrlKey: true, shiftKey: true, altKey: true }), "page"), null);
  assert.equal(matchShortcut(press("a"), "page"), null);
});

test("every action has a shortcut and a label for the help panel", () => {
  const actions = SHORTCUTS.map((s) => s.action);
  assert.deepEqual([...new Set(actions)].sort(), ["focus-composer", "help", "new-chat", "stop", "toggle-sidebar"]);
  assert.deepEqual(comboLabels(SHORTCUTS[0]!.combos[0]!, false), ["Ctrl", "Shift", "O"]);
  assert.deepEqual(comboLabels(SHORTCUTS[0]!.combos[0]!, true), ["⌘", "Shift", "O"]);
  assert.deepEqual(comboLabels({ key: "escape", shift: true, scope: "anywhere" }, false), ["Shift", "Esc"]);
});
