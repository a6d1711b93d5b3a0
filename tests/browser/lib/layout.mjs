// Programmatic layout check of the page as it is now: nothing a person sees or uses overlaps
// something else, sticks out of the viewport, is cut off by its container, or is squashed.
// Returns a list of problems (empty when the layout is clean), each naming the elements.
//
// What is checked: the page regions (header, footer, main, asides, forms), visible buttons, fields,
// headings, paragraphs, list items, message bubbles, answer bodies, stats, error cards and code
// blocks. An element counts as visible when it has a box, is not display:none / visibility:hidden /
// opacity:0 (itself or an ancestor) nor inside a closed <details>, and some of it is inside every
// scrolling container around it (an answer scrolled out of view is not "off-screen"). When a
// drawer, the settings panel or a dialog is open (an element marked data-overlay is fixed-position
// and visible), only what is inside the open overlays is checked: the rest is behind the backdrop.
export async function layoutProblems(page) {
  return page.evaluate(() => {
    const SELECTOR = [
      "header", "footer", "main", "aside", "nav", "form",
      "button", "input", "select", "textarea", "a[href]", "h1", "h2", "h3", "p", "li", "kbd", "label",
      ".bubble", ".message-text", ".stats", ".error-card", ".code-block", ".brand", ".server-status",
    ].join(",");
    const INTERACTIVE = new Set(["BUTTON", "INPUT", "SELECT", "TEXTAREA", "A"]);
    const vw = document.documentElement.clientWidth;
    const vh = document.documentElement.clientHeight;
    const problems = [];

    const describe = (el) => {
      const id = el.getAttribute("data-testid") ?? el.id ?? "";
      const cls = typeof el.className === "string" && el.className ? `.${el.className.trim().split(/\s+/).join(".")}` : "";
      const text = (el.getAttribute("aria-label") ?? el.textContent ?? "").trim().replace(/\s+/g, " ").slice(0, 30);
      return `<${el.tagName.toLowerCase()}${id ? ` [${id}]` : ""}${cls}${text ? ` "${text}"` : ""}>`;
    };
    const hiddenByStyle = (el) => {
      // checkVisibility() also sees what a closed <details> hides (content-visibility: hidden).
      if (!el.checkVisibility()) return true;
      for (let e = el; e !== null; e = e.parentElement) {
        const s = getComputedStyle(e);
        if (s.display === "none" || s.visibility === "hidden" || s.visibility === "collapse" || Number(s.opacity) === 0) return true;
      }
      return false;
    };
    const intersect = (a, b) => {
      const left = Math.max(a.left, b.left), top = Math.max(a.top, b.top);
      const right = Math.min(a.right, b.right), bottom = Math.min(a.bottom, b.bottom);
      return right > left && bottom > top ? { left, top, right, bottom } : null;
    };
    const rectOf = (r) => ({ left: r.left, top: r.top, right: r.right, bottom: r.bottom });

    if (document.documentElement.scrollWidth > vw + 1) {
      problems.push(`the page scrolls sideways: content is ${document.documentElement.scrollWidth}px wide in a ${vw}px viewport`);
    }

    const overlays = [...document.querySelectorAll("[data-overlay]")].filter(
      (el) => getComputedStyle(el).position === "fixed" && !hiddenByStyle(el),
    );
    const inOpenOverlay = (el) => overlays.some((o) => o.contains(el));

    const boxes = [];
    for (const el of document.querySelectorAll(SELECTOR)) {
      if (hiddenByStyle(el) || el.getClientRects().length === 0) continue;
      if (overlays.length > 0 && !inOpenOverlay(el)) continue;
      const own = rectOf(el.getBoundingClientRect());
      if (own.right - own.left < 0.5 || own.bottom - own.top < 0.5) continue;
      // Clip by every ancestor that clips its overflow.
      let visible = own;
      let cutBy = null;
      for (let p = el.parentElement; p !== null && visible !== null; p = p.parentElement) {
        const s = getComputedStyle(p);
        if (s.overflowX === "visible" && s.overflowY === "visible") continue;
        const pr = rectOf(p.getBoundingClientRect());
        const scrolls = /(auto|scroll)/.test(s.overflowX + s.overflowY);
        const next = intersect(visible, pr);
        if (next !== null && !scrolls &&
            (next.left - visible.left > 1 || visible.right - next.right > 1 || next.top - visible.top > 1 || visible.bottom - next.bottom > 1)) {
          cutBy = p;
        }
        visible = next;
      }
      if (visible === null) continue; // scrolled out of view
      if (cutBy !== null) problems.push(`${describe(el)} is cut off by ${describe(cutBy)}`);
      if (visible.left < -1 || visible.top < -1 || visible.right > vw + 1 || visible.bottom > vh + 1) {
        problems.push(`${describe(el)} is off-screen: [${Math.round(visible.left)}, ${Math.round(visible.top)}, ${Math.round(visible.right)}, ${Math.round(visible.bottom)}] in ${vw}x${vh}`);
      }
      if (getComputedStyle(el).textOverflow === "ellipsis" && el.textContent.trim().length > 3 && own.right - own.left < 60) {
        problems.push(`${describe(el)} is squashed to ${Math.round(own.right - own.left)}px, its text cut to an ellipsis`);
      }
      if (INTERACTIVE.has(el.tagName)) {
        if (own.right - own.left < 20 || own.bottom - own.top < 20) {
          problems.push(`${describe(el)} is squashed to ${Math.round(own.right - own.left)}x${Math.round(own.bottom - own.top)}px`);
        }
        if (el.tagName === "BUTTON" && el.scrollWidth > el.clientWidth + 1) problems.push(`${describe(el)}: its label overflows the button`);
      }
      boxes.push({ el, rect: visible });
    }

    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i], b = boxes[j];
        if (a.el.contains(b.el) || b.el.contains(a.el)) continue;
        const overlap = intersect(a.rect, b.rect);
        if (overlap === null) continue;
        const w = overlap.right - overlap.left, h = overlap.bottom - overlap.top;
        if (w > 1 && h > 1) problems.push(`${describe(a.el)} overlaps ${describe(b.el)} by ${Math.round(w)}x${Math.round(h)}px`);
      }
    }
    return problems;
  });
}
