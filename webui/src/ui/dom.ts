// A small element builder. Text always goes in as text nodes (never parsed as HTML); the only
// innerHTML in the UI is markdown.ts's output.

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((e: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      el.addEventListener(name.replace(/^on/, ""), value);
    } else if (name === "class") {
      el.className = String(value);
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

const SVG_NS = "http://www.w3.org/2000/svg";

// 24x24 stroke icons (drawn for llaisys).
const ICON_PATHS = {
  plus: "M12 5v14M5 12h14",
  pencil: "M4 20h4L19 9l-4-4L4 16v4zM13.5 6.5l4 4",
  trash: "M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3",
  menu: "M4 6h16M4 12h16M4 18h16",
  sliders: "M4 7h10M18 7h2M4 17h4M12 17h8M14 4v6M8 14v6",
  stop: "M7 7h10v10H7z",
  send: "M12 19V5M6 11l6-6 6 6",
  copy: "M9 9h10v11H9zM5 15V4h10",
  refresh: "M20 12a8 8 0 1 1-2.3-5.6M20 4v5h-5",
  close: "M6 6l12 12M18 6L6 18",
  check: "M5 12l5 5 9-10",
  eye: "M2 12s3.6-7 10-7 10 7 10 7-3.6 7-10 7S2 12 2 12zM12 9a3 3 0 1 0 0 6 3 3 0 1 0 0-6z",
  chat: "M4 5h16v11H9l-5 4V5z",
  chevron: "M9 6l6 6-6 6",
  download: "M12 4v11M7 10l5 5 5-5M5 20h14",
  upload: "M12 16V5M7 10l5-5 5 5M5 20h14",
  paperclip: "M20 11.5l-7.8 7.8a5 5 0 0 1-7.1-7.1l8-8a3.4 3.4 0 0 1 4.8 4.8l-8 8a1.7 1.7 0 0 1-2.4-2.4l7.3-7.3",
  keyboard: "M3 6h18v12H3zM7 10h.01M11 10h.01M15 10h.01M7 14h10",
} as const;

export type IconName = keyof typeof ICON_PATHS;

export function icon(name: IconName): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "icon");
  const path = document.createElementNS(SVG_NS, "path");
  path.setAttribute("d", ICON_PATHS[name]);
  svg.appendChild(path);
  return svg;
}

// A button with an icon and a label; `showLabel` false keeps the label for screen readers only.
export function iconButton(name: IconName, label: string, onClick: (e: Event) => void, extra: Attrs = {}, showLabel = false): HTMLButtonElement {
  const button = h("button", { type: "button", class: "icon-button", title: label, "aria-label": label, onclick: onClick, ...extra }, icon(name));
  if (showLabel) {
    button.classList.add("with-label");
    button.appendChild(h("span", {}, label));
  }
  return button;
}

// Saves `text` as a file through the browser's download (nothing leaves the machine).
export function downloadFile(fileName: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = h("a", { href: url, download: fileName, hidden: true });
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export function formatNumber(n: number, digits = 0): string {
  return n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export function isPhoneWidth(): boolean {
  return window.matchMedia("(max-width: 760px)").matches;
}
