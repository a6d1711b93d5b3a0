// Highlighted code, math and hostile answers. The answers are canned (lib/canned.mjs): page.route()
// fulfils the chat request with a fixed event stream, so the UI gets exactly the text under test.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, saveScreenshot, withApp } from "../lib/browser.mjs";
import { API_KEY, BASE_URL, MOCK_MODEL } from "../lib/env.mjs";
import { cannedAnswers } from "../lib/canned.mjs";
import { layoutProblems } from "../lib/layout.mjs";
import { configureChat, lastAnswer, sendMessage, setApiKey, waitForAnswer } from "../lib/ui.mjs";

let browser;
before(async () => (browser = await launchBrowser()));
after(async () => browser?.close());

// A fresh page whose every answer is `answer`; collects the URLs the page requests.
async function withCannedAnswer(name, answer, body) {
  await withApp(browser, name, {}, async (page) => {
    const requested = [];
    page.on("request", (r) => requested.push(r.url()));
    await cannedAnswers(page, answer);
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL });
    await body(page, requested);
    assert.deepEqual(requested.filter((url) => !url.startsWith(BASE_URL) && !url.startsWith("blob:")), [], "the page loaded something from elsewhere");
    assert.deepEqual(page.problems, [], "console errors (a CSP violation would show here)");
  });
}

const CPP = `#include <vector>
#include <cstdio>

// Sums the vector.
int main() {
  std::vector<int> values{1, 2, 3};
  long total = 0;
  for (int v : values) total += v;
  std::printf("total = %ld\\n", total);
  return total == 6 ? 0 : 1;
}
`;

test("a fenced C++ block is highlighted by highlight.js, its text unchanged", { timeout: 60_000 }, async () => {
  const content = `Here is a small C++ program:\n\n\`\`\`cpp\n${CPP}\`\`\`\n\nIt prints the total.`;
  await withCannedAnswer("code", { content }, async (page, requested) => {
    await sendMessage(page, "Show me some C++.");
    assert.equal(await waitForAnswer(page), "done");
    const code = lastAnswer(page).locator(".code-block code");
    await page.waitForFunction(() => document.querySelector(".code-block code.hljs") !== null);
    assert.equal(await code.getAttribute("data-lang"), "cpp");
    assert.equal(await code.textContent(), CPP, "highlighting changed the code's text");
    const classes = await code.evaluate((el) => [...el.querySelectorAll("*")].map((e) => `${e.tagName.toLowerCase()}.${e.className}`));
    assert.ok(classes.length > 10, `too few token spans: ${classes}`);
    assert.ok(classes.every((c) => /^span\.hljs-/.test(c)), `an element that is not a token span: ${classes}`);
    for (const token of ["hljs-keyword", "hljs-type", "hljs-string", "hljs-comment", "hljs-number", "hljs-meta"]) {
      assert.ok(classes.some((c) => c.includes(token)), `no ${token} in ${classes}`);
    }
    assert.equal(await code.locator(".hljs-keyword", { hasText: "return" }).count(), 1);
    assert.notEqual(await code.locator(".hljs-keyword").first().evaluate((el) => getComputedStyle(el).color), await code.evaluate((el) => getComputedStyle(el).color), "tokens are not coloured");
    // The grammar came as its own chunk, after the page: loaded as needed.
    assert.ok(requested.some((url) => /\/chunks\/cpp-[A-Z0-9]+\.js$/.test(url)), `no C++ chunk among ${requested}`);
    assert.ok(!requested.some((url) => /\/chunks\/python-/.test(url)), "a grammar that no answer needed was loaded");
    assert.deepEqual(await layoutProblems(page), []);
    await saveScreenshot(page, "feature-code");
  });
});

const MATH = [
  "Euler's identity, $e^{i\\pi}+1=0$, links five constants.",
  "",
  "$$",
  "\\int_0^1 x^2\\,dx = \\frac{1}{3}",
  "$$",
  "",
  "Pythagoras: \\(a^2+b^2=c^2\\), and the roots of a quadratic:",
  "\\[ x = \\frac{-b \\pm \\sqrt{b^2-4ac}}{2a} \\]",
  "",
  "Prices stay text: it costs $5 and $10, and `$HOME` is code.",
].join("\n");

test("math renders with KaTeX ($, $$, \\(, \\[), fonts from this server; prices and code stay text", { timeout: 60_000 }, async () => {
  await withCannedAnswer("math", { content: MATH }, async (page, requested) => {
    await sendMessage(page, "Some math, please.");
    assert.equal(await waitForAnswer(page), "done");
    const answer = lastAnswer(page);
    await page.waitForFunction(() => document.querySelectorAll(".katex").length >= 4);
    const formulas = await answer.locator(".katex").evaluateAll((els) =>
      els.map((el) => ({
        tex: el.querySelector("annotation[encoding='application/x-tex']")?.textContent,
        mathml: el.querySelector(".katex-mathml math") !== null,
        html: (el.querySelector(".katex-html")?.children.length ?? 0) > 0,
        display: el.closest(".katex-display") !== null,
      })),
    );
    assert.deepEqual(formulas, [
      { tex: "e^{i\\pi}+1=0", mathml: true, html: true, display: false },
      { tex: "\\int_0^1 x^2\\,dx = \\frac{1}{3}", mathml: true, html: true, display: true },
      { tex: "a^2+b^2=c^2", mathml: true, html: true, display: false },
      { tex: "x = \\frac{-b \\pm \\sqrt{b^2-4ac}}{2a}", mathml: true, html: true, display: true },
    ]);
    const prices = answer.locator("p", { hasText: "Prices stay text" });
    assert.equal(await prices.textContent(), "Prices stay text: it costs $5 and $10, and $HOME is code.");
    assert.equal(await prices.locator(".katex, [data-math]").count(), 0);
    assert.equal(await prices.locator("code").textContent(), "$HOME");
    // KaTeX's own fonts, from this server as woff2, in use.
    await page.evaluate(() => document.fonts.ready);
    const loadedFonts = await page.evaluate(() => [...document.fonts].filter((f) => f.status === "loaded").map((f) => f.family.replace(/"/g, "")));
    assert.ok(loadedFonts.includes("KaTeX_Main") && loadedFonts.includes("KaTeX_Math"), `loaded fonts: ${loadedFonts}`);
    const fontRequests = requested.filter((url) => url.includes("/fonts/"));
    assert.ok(fontRequests.length > 0 && fontRequests.every((url) => url.startsWith(`${BASE_URL}fonts/KaTeX_`) && url.endsWith(".woff2")), `${fontRequests}`);
    assert.ok(requested.some((url) => /\/chunks\/katex-[A-Z0-9]+\.js$/.test(url)), "KaTeX was not loaded as its own chunk");
    assert.deepEqual(await layoutProblems(page), []);
    await saveScreenshot(page, "feature-math");
  });
});

const HOSTILE_CONTENT = [
  "<script>window.__pwned = 'script'</script>",
  '<img src=x onerror="window.__pwned = \'img\'">',
  "[a link](javascript:window.__pwned='link') and <a href=\"javascript:window.__pwned='a'\">raw</a> and [spaced]( javascript:alert(1) )",
  "Math links: $\\href{javascript:window.__pwned='href'}{click me}$ and $$\\url{javascript:alert(2)}$$",
  "Also \\(\\htmlStyle{position:fixed;inset:0}{x}\\) \\(\\includegraphics{https://example.org/x.png}\\) \\(\\htmlData{onclick=alert(1)}{y}\\)",
  "```html\" onmouseover=\"window.__pwned='fence'\n<svg onload=\"window.__pwned='svg'\"></svg>\n```",
  "<iframe src=\"javascript:alert(3)\"></iframe> <style>body{display:none}</style>",
].join("\n\n");
const HOSTILE_REASONING = "I will write <img src=x onerror=\"window.__pwned='thinking'\"> and [x](javascript:alert(4)) and $\\href{javascript:alert(5)}{y}$.";

test("hostile model output (HTML, javascript: links, KaTeX \\href) renders inert", { timeout: 60_000 }, async () => {
  await withCannedAnswer("hostile", { reasoning: HOSTILE_REASONING, content: HOSTILE_CONTENT }, async (page) => {
    const dialogs = [];
    page.on("dialog", (d) => (dialogs.push(d.message()), d.dismiss()));
    await sendMessage(page, "Say something dangerous.");
    assert.equal(await waitForAnswer(page), "done");
    await page.waitForFunction(() => document.querySelectorAll(".katex, .math-error").length >= 6);
    await lastAnswer(page).getByTestId("reasoning-toggle").click();
    const report = await page.evaluate(() => {
      const all = [...document.querySelectorAll("*")];
      const urlAttributes = all.flatMap((el) =>
        [...el.attributes].filter((a) => /^(href|src|xlink:href|action|formaction|data)$/i.test(a.name)).map((a) => `${el.tagName}[${a.name}=${a.value}]`),
      );
      return {
        pwned: window.__pwned ?? null,
        scripts: [...document.scripts].map((s) => s.getAttribute("src")),
        handlers: all.flatMap((el) => [...el.attributes].filter((a) => /^on/i.test(a.name)).map((a) => `${el.tagName}[${a.name}]`)),
        javascriptUrls: urlAttributes.filter((a) => /javascript:/i.test(a)),
        embedded: [...document.querySelectorAll("main img, main iframe, main object, main embed, main svg:not(.icon), main style, main link, main video, main audio")]
          .filter((el) => !el.closest(".katex-html") || el.tagName.toLowerCase() !== "svg")
          .map((el) => el.tagName),
        links: [...document.querySelectorAll("main a")].map((a) => a.getAttribute("href")),
        styled: [...document.querySelectorAll(".katex [style*='fixed']")].length,
        hrefText: [...document.querySelectorAll(".katex")].some((k) => k.textContent.includes("\\href")),
      };
    });
    assert.equal(report.pwned, null, "model text ran script");
    assert.deepEqual(dialogs, []);
    assert.deepEqual(report.scripts, ["app.js"], "only the app's own script is on the page");
    assert.deepEqual(report.handlers, [], "an element has an event handler attribute");
    assert.deepEqual(report.javascriptUrls, [], "an element points at a javascript: URL");
    assert.deepEqual(report.embedded, [], "the answer made an element that loads or styles something");
    assert.deepEqual(report.links, [], "a link was made out of a javascript: URL");
    assert.equal(report.styled, 0, "\\htmlStyle took effect");
    assert.ok(report.hrefText, "KaTeX shows \\href as inert text (trust: false)");
    // The literal text is still there to read.
    const text = await lastAnswer(page).getByTestId("message-text").textContent();
    assert.ok(text.includes("<script>window.__pwned = 'script'</script>") && text.includes("<iframe"), text);
    assert.ok((await lastAnswer(page).getByTestId("reasoning-text").textContent()).includes("<img src=x onerror="));
  });
});

test("the answer stats show the reasoning tokens of the usage", { timeout: 60_000 }, async () => {
  const usage = { prompt_tokens: 20, completion_tokens: 30, total_tokens: 50, completion_tokens_details: { reasoning_tokens: 7 } };
  await withCannedAnswer("reasoning-tokens", { reasoning: "Short thought.", content: "Short answer.", usage }, async (page) => {
    await sendMessage(page, "Be quick.");
    assert.equal(await waitForAnswer(page), "done");
    const stats = lastAnswer(page).getByTestId("stats");
    assert.match(await stats.textContent(), /^30 tokens \(7 reasoning\)/);
    assert.equal(await stats.getAttribute("data-reasoning-tokens"), "7");
    assert.match(await lastAnswer(page).getByTestId("reasoning-toggle").textContent(), /Thoughts\s*7 tokens/);
  });
});
