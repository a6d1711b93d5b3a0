// The panels over the chat: the chat list (a drawer at phone width, a column that can be hidden on
// wider screens) and the chat settings. Their state is classes on the app's root element, which
// the styles read: sidebar-open, settings-open (drawers), sidebar-hidden (the column).
import { isPhoneWidth } from "./dom";

export type Panel = "sidebar" | "settings";

export class Panels {
  constructor(
    private readonly root: HTMLElement,
    private readonly onSettingsOpened: () => void,
  ) {}

  isOpen(panel: Panel): boolean {
    return this.root.classList.contains(`${panel}-open`);
  }

  set(panel: Panel, open: boolean): void {
    this.root.classList.toggle(`${panel}-open`, open);
    if (!open) return;
    this.root.classList.remove(panel === "settings" ? "sidebar-open" : "settings-open");
    if (panel === "settings") this.onSettingsOpened();
  }

  toggle(panel: Panel): void {
    this.set(panel, !this.isOpen(panel));
  }

  // Closes the open drawer or panel; false when none was open.
  closeAll(): boolean {
    const wasOpen = this.isOpen("sidebar") || this.isOpen("settings");
    this.root.classList.remove("sidebar-open", "settings-open");
    return wasOpen;
  }

  // The chat list button and shortcut: the drawer at phone width, the column otherwise.
  toggleSidebar(): void {
    if (isPhoneWidth()) this.toggle("sidebar");
    else this.root.classList.toggle("sidebar-hidden");
  }
}
