// The global keyboard shortcuts (shortcuts.ts's table) on the window. The listener runs in the
// capture phase, before the focused element's own handlers, so where the focus is is known before
// they change anything. Escape first closes an open drawer or panel, from anywhere, as before.
import { matchShortcut, type FocusPlace, type ShortcutAction } from "../shortcuts";

export interface ShortcutHandlers {
  isComposer(element: Element | null): boolean;
  // A modal dialog is open: it has the keyboard to itself.
  paused(): boolean;
  // Closes the open drawer or panel; false when none was open.
  closePanels(): boolean;
  actions: Readonly<Record<ShortcutAction, () => void>>;
}

export function listenForShortcuts(handlers: ShortcutHandlers): void {
  window.addEventListener(
    "keydown",
    (e) => {
      if (e.isComposing || handlers.paused()) return;
      if (e.key === "Escape" && !e.shiftKey && handlers.closePanels()) return;
      const action = matchShortcut(e, focusPlace(document.activeElement, handlers));
      if (action === null) return;
      e.preventDefault();
      handlers.actions[action]();
    },
    { capture: true },
  );
}

function focusPlace(focused: Element | null, handlers: ShortcutHandlers): FocusPlace {
  if (handlers.isComposer(focused)) return "composer";
  if (focused instanceof HTMLInputElement || focused instanceof HTMLTextAreaElement || focused instanceof HTMLSelectElement) return "field";
  return focused instanceof HTMLElement && focused.isContentEditable ? "field" : "page";
}
