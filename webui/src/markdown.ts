// Markdown for answers. Model output is untrusted: raw HTML is never passed through (html: false
// makes markdown-it escape every "<"), link targets go through markdown-it's validateLink (no
// javascript:, vbscript:, file: or data: URLs), and images are not rendered at all, so an answer
// cannot make the browser fetch anything. Code blocks get a language label and a copy button.
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: true });
md.disable(["image"]);

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

function codeBlock(content: string, language: string): string {
  const label = language.length > 0 ? language : "text";
  return (
    `<div class="code-block"><div class="code-head"><span class="code-lang">${escapeHtml(label)}</span>` +
    `<button type="button" class="code-copy" data-copy-code>Copy</button></div>` +
    `<pre><code>${escapeHtml(content)}</code></pre></div>`
  );
}

md.renderer.rules.fence = (tokens, idx) => {
  const token = tokens[idx]!;
  const language = token.info.trim().split(/\s+/)[0] ?? "";
  return codeBlock(token.content, language);
};
md.renderer.rules.code_block = (tokens, idx) => codeBlock(tokens[idx]!.content, "");

const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const token = tokens[idx]!;
  token.attrSet("target", "_blank");
  token.attrSet("rel", "noopener noreferrer nofollow");
  return defaultLinkOpen(tokens, idx, options, env, self);
};

// HTML for a (possibly incomplete, still streaming) Markdown text; safe to assign to innerHTML.
export function renderMarkdown(source: string): string {
  return md.render(source);
}
