// The math delimiter rules (markdown-math.ts): what becomes math, what stays text, and that the TeX
// always comes out escaped.
import assert from "node:assert/strict";
import { test } from "node:test";
import { renderMarkdown } from "../src/markdown";

// The math pieces of the rendered HTML: [kind, TeX as it will be read back from the element's text].
function mathOf(source: string): [string, string][] {
  const html = renderMarkdown(source);
  const unescape = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&amp;/g, "&");
  return [...html.matchAll(/<(?:span|div) class="math [^"]*" data-math="(inline|display)">([^<]*)<\/(?:span|div)>/g)].map((m) => [m[1]!, unescape(m[2]!)]);
}

test("the four delimiters", () => {
  assert.deepEqual(mathOf("Euler: $e^{i\\pi}+1=0$."), [["inline", "e^{i\\pi}+1=0"]]);
  assert.deepEqual(mathOf("Also \\(a^2+b^2=c^2\\) inline."), [["inline", "a^2+b^2=c^2"]]);
  assert.deepEqual(mathOf("$$\n\\int_0^1 x\\,dx = \\frac12\n$$"), [["display", "\\int_0^1 x\\,dx = \\frac12"]]);
  assert.deepEqual(mathOf("\\[\nx = \\frac{-b \\pm \\sqrt{b^2-4ac}}{2a}\n\\]"), [["display", "x = \\frac{-b \\pm \\sqrt{b^2-4ac}}{2a}"]]);
  assert.deepEqual(mathOf("$$E = mc^2$$"), [["display", "E = mc^2"]]);
  assert.deepEqual(mathOf("So \\[ x^2 \\] and $$ y $$ sit in the text."), [["display", "x^2"], ["display", "y"]]);
});

test("display math interrupts a paragraph and needs no blank line around it", () => {
  const html = renderMarkdown("The formula is:\n$$\nE = mc^2\n$$\nwhere c is the speed of light.");
  assert.match(html, /<p>The formula is:<\/p>\n<div class="math math-display" data-math="display">E = mc\^2<\/div>\n<p>where c/);
});

test("prices and other lone dollars stay text", () => {
  for (const text of [
    "It costs $5 and $10.",
    "Between $5 and 10 dollars, or $20.",
    "A $ sign alone, and $ spaced $ out.",
    "Escaped \\$x\\$ is not math.",
    "Pay $3.50 or $4.",
    "$x$5 is not closed by a $ before a digit",
  ]) {
    assert.deepEqual(mathOf(text).filter(([, tex]) => tex === "x" || /\d/.test(tex)), [], text);
  }
  assert.deepEqual(mathOf("It costs $5 and $10."), []);
  assert.match(renderMarkdown("It costs $5 and $10."), /<p>It costs \$5 and \$10\.<\/p>/);
  assert.deepEqual(mathOf("Escaped \\$x\\$ is not math."), []);
});

test("dollars in code spans and code blocks stay code", () => {
  assert.deepEqual(mathOf("Run `echo $HOME $PATH` and `$x$`."), []);
  assert.deepEqual(mathOf("```sh\necho $a $b\nprice=$x$\n```"), []);
  assert.deepEqual(mathOf("    indented $x$ code"), []);
  assert.match(renderMarkdown("`$x$`"), /<code>\$x\$<\/code>/);
  assert.equal(renderMarkdown("It costs $5 and $10, and `$HOME` is code."), "<p>It costs $5 and $10, and <code>$HOME</code> is code.</p>\n");
  assert.deepEqual(mathOf("Set $x$ to `$y` first."), [["inline", "x"]]);
});

test("unclosed or empty delimiters stay text, and display math stops at a blank line", () => {
  assert.deepEqual(mathOf("$$\nx = 1"), []);
  assert.deepEqual(mathOf("half $x and \\(y"), []);
  assert.deepEqual(mathOf("$$ $$ and \\(\\) and $ $"), []);
  assert.deepEqual(mathOf("$$\na\n\nb\n$$"), []);
  assert.deepEqual(mathOf("$a\n\nb$"), []);
});

test("the TeX is escaped: math cannot carry HTML", () => {
  const html = renderMarkdown("$<img src=x onerror=alert(1)>$ and $$\n</div><script>alert(1)</script>\n$$");
  assert.doesNotMatch(html, /<img|<script|<\/div><script/);
  assert.deepEqual(mathOf("$<b>x</b>$"), [["inline", "<b>x</b>"]]);
  assert.match(renderMarkdown("$\\href{javascript:alert(1)}{x}$"), /data-math="inline">\\href\{javascript:alert\(1\)\}\{x\}<\/span>/);
  assert.doesNotMatch(renderMarkdown("$\\href{javascript:alert(1)}{x}$"), /<a /);
});
