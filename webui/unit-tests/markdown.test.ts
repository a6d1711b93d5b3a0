// Markdown rendering never lets HTML through: every "<" of the source is escaped, dangerous link
// schemes are dropped and images are not rendered.
import assert from "node:assert/strict";
import { test } from "node:test";
import { escapeHtml, renderMarkdown } from "../src/markdown";

// Tags that markdown-it itself emits for Markdown syntax (and the code-block wrapper).
const OWN_TAGS = new Set(["p", "br", "code", "pre", "strong", "em", "ul", "ol", "li", "a", "blockquote", "h1", "h2", "h3", "hr", "div", "span", "button", "table", "thead", "tbody", "tr", "th", "td", "s"]);

function tagsOf(html: string): string[] {
  return [...html.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9-]*)/g)].map((m) => m[1]!.toLowerCase());
}

const HOSTILE = [
  "<script>alert(1)</script>",
  '<img src=x onerror="alert(1)">',
  "<iframe src=javascript:alert(1)></iframe>",
  "<svg onload=alert(1)>",
  "<style>body{display:none}</style>",
  "Text <b>bold</b> and <a href=\"javascript:alert(1)\">link</a>",
  "<!-- comment --> <div onclick=x>div</div>",
  "```\n</code></pre><script>alert(1)</script>\n```",
  "```html\" onmouseover=\"alert(1)\n<p>x</p>\n```",
  "`<script>inline</script>`",
  "    <script>indented code</script>",
  "> <script>quoted</script>",
  "- <img src=x>\n- item",
];

test("raw HTML in the source never becomes a tag", () => {
  for (const source of HOSTILE) {
    const html = renderMarkdown(source);
    for (const tag of tagsOf(html)) assert.ok(OWN_TAGS.has(tag), `<${tag}> came out of ${JSON.stringify(source)}: ${html}`);
    assert.doesNotMatch(html, /<(script|img|iframe|svg|style)/i, html);
    // Every real tag (text "<" is escaped, so each "<" left starts one) has no event handler.
    for (const tag of html.match(/<[a-zA-Z][^>]*>/g) ?? []) {
      assert.doesNotMatch(tag, /\son[a-z]+=/i, `an event handler came out of ${JSON.stringify(source)}: ${tag}`);
    }
  }
});

test("the escaped text keeps what was written", () => {
  assert.equal(renderMarkdown("<script>alert(1)</script>"), "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n");
  assert.match(renderMarkdown("```js\n<b>x</b>\n```"), /<span class="code-lang">js<\/span>.*<pre><code data-lang="javascript">&lt;b&gt;x&lt;\/b&gt;\n<\/code><\/pre>/s);
});

test("javascript:, vbscript: and data: links are not made into links; others open in a new tab", () => {
  for (const url of ["javascript:alert(1)", "JAVASCRIPT:alert(1)", "vbscript:msgbox(1)", "data:text/html;base64,PHNjcmlwdD4="]) {
    assert.doesNotMatch(renderMarkdown(`[click](${url})`), /<a /, url);
  }
  const html = renderMarkdown("[docs](https://example.org/a?b=1&c=2)");
  assert.match(html, /<a href="https:\/\/example.org\/a\?b=1&amp;c=2" target="_blank" rel="noopener noreferrer nofollow">docs<\/a>/);
});

test("images are shown as text, so an answer cannot make the browser fetch anything", () => {
  const html = renderMarkdown("![tracker](https://example.org/pixel.png)");
  assert.doesNotMatch(html, /<img/);
  assert.match(html, /tracker/);
});

test("Markdown still works: emphasis, lists, code", () => {
  assert.equal(renderMarkdown("**bold** and *it*"), "<p><strong>bold</strong> and <em>it</em></p>\n");
  assert.match(renderMarkdown("- a\n- b"), /<ul>\n<li>a<\/li>\n<li>b<\/li>\n<\/ul>/);
  assert.match(renderMarkdown("```\nunterminated fence while streaming"), /<pre><code>unterminated fence while streaming\n?<\/code><\/pre>/);
});

test("escapeHtml escapes the five HTML-significant characters", () => {
  assert.equal(escapeHtml(`<a href="x" title='y'>&</a>`), "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
});
