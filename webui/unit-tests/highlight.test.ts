// Syntax highlighting (highlight.ts): a grammar for every language languages.ts knows, loaded on
// demand, and output that is escaped code in highlight.js's own spans.
import assert from "node:assert/strict";
import { test } from "node:test";
import { canHighlight, highlightNow, loadLanguage } from "../src/highlight";
import { knownLanguages } from "../src/languages";

test("every known language but plain text has a grammar, loaded on demand", async () => {
  for (const language of knownLanguages()) assert.equal(canHighlight(language), language !== "plaintext", language);
  assert.equal(highlightNow("int x;", "cpp"), null, "nothing is loaded before it is needed");
  await loadLanguage("cpp");
  const html = highlightNow('#include <vector>\nint main() { return "</code><script>"[0]; }', "cpp");
  assert.ok(html !== null);
  assert.match(html, /<span class="hljs-type">int<\/span>.*<span class="hljs-keyword">return<\/span>/s);
  assert.match(html, /&lt;vector&gt;/);
  assert.match(html, /&lt;\/code&gt;&lt;script&gt;/);
  // Only highlight.js's own spans come out.
  for (const tag of html.match(/<[^>]+>/g) ?? []) assert.match(tag, /^<(span class="hljs-[a-z_ .-]+"|\/span)>$/, tag);
});
