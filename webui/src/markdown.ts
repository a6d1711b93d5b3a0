// Markdown for answers. Model output is untrusted: raw HTML is never passed through (html: false
// makes markdown-it escape every "<"), link targets go through markdown-it's validateLink (no
// javascript:, vbscript:, file: or data: URLs), and images are not rendered at all, so an answer
// cannot make the browser fetch anything. Code blocks get a language label and a copy button, and
// name their language (when known) in data-lang for the highlighter; math is found by
// markdown-math.ts and left as escaped TeX for ui/math.ts. Nothing here writes a style attribute
// (the page's Content-Security-Policy would refuse it): table alignment becomes a class.
import MarkdownIt from "markdown-it";
import { languageFromFenceInfo } from "./languages";
import { mathPlugin } from "./markdown-math";

const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: true });
md.disable(["image"]);
md.use(mathPlugin);

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

function codeBlock(content: string, info: string): string {
  const label = info.trim().split(/\s+/)[0] ?? "";
  const language = languageFromFenceInfo(info);
  return (
    `<div class="code-block"><div class="code-head"><span class="code-lang">${escapeHtml(label.length > 0 ? label : "text")}</span>` +
    `<button type="button" class="code-copy" data-copy-code>Copy</button></div>` +
    `<pre><code${language !== null ? ` data-lang="${language}"` : ""}>${escapeHtml(content)}</code></pre></div>`
  );
}

md.renderer.rules.fence = (tokens, idx) => {
  const token = tokens[idx]!;
  return codeBlock(token.content, token.info);
};
md.renderer.rules.code_block = (tokens, idx) => codeBlock(tokens[idx]!.content, "");

const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const token = tokens[idx]!;
  token.attrSet("target", "_blank");
  token.attrSet("rel", "noopener noreferrer nofollow");
  return defaultLinkOpen(tokens, idx, options, env, self);
};

// markdown-it aligns table cells with style="text-align:..."; use a class instead.
for (const rule of ["th_open", "td_open"] as const) {
  md.renderer.rules[rule] = (tokens, idx, options, _env, self) => {
    const token = tokens[idx]!;
    const align = /^text-align:(left|center|right)$/.exec(token.attrGet("style") ?? "")?.[1];
    if (token.attrGet("style") !== null) token.attrs = (token.attrs ?? []).filter(([name]) => name !== "style");
    if (align !== undefined) token.attrJoin("class", `align-${align}`);
    return self.renderToken(tokens, idx, options);
  };
}

// HTML for a (possibly incomplete, still streaming) Markdown text; safe to assign to innerHTML.
export function renderMarkdown(source: string): string {
  return md.render(source);
}
