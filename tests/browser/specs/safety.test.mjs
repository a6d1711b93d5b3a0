// Model output and user text are always shown as text: HTML in either never becomes elements.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, withApp } from "../lib/browser.mjs";
import { API_KEY, QWEN2_MODEL } from "../lib/env.mjs";
import { referenceAnswer, tokenize } from "../lib/server.mjs";
import { activeConversation, configureChat, lastAnswer, sendMessage, setApiKey, storedState, userMessages, waitForAnswer } from "../lib/ui.mjs";

let browser;
before(async () => (browser = await launchBrowser()));
after(async () => browser?.close());

// Elements that must never come out of text: they would run script, load something or style it.
const FORBIDDEN = ["script", "img", "iframe", "object", "embed", "svg", "style", "link", "b", "form", "input", "video", "audio"];

const collapse = (s) => s.replace(/\s+/g, " ").trim();

async function elementTags(locator) {
  return locator.evaluate((el) => [...el.querySelectorAll("*")].map((e) => e.tagName.toLowerCase()));
}

test("a model reply containing <script> and HTML renders as text", { timeout: 60_000 }, async () => {
  await withApp(browser, "model-html", {}, async (page) => {
    const dialogs = [];
    page.on("dialog", (d) => (dialogs.push(d.message()), d.dismiss()));
    // Make the model say HTML: push the tokens of these pieces to the top with logit_bias, so the
    // greedy answer is made of them (in the order the model's own logits rank them).
    const pieces = ["<script>", "</script>", "<img src=x onerror=alert(1)>", "<b>", "</b>", "<iframe>"];
    const ids = [...new Set((await Promise.all(pieces.map((p) => tokenize(QWEN2_MODEL, p)))).flat())];
    const logitBias = Object.fromEntries(ids.map((id) => [String(id), 100]));
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: QWEN2_MODEL, maxTokens: 24, temperature: 0, extra: JSON.stringify({ logit_bias: logitBias }) });
    await sendMessage(page, "Say something.");
    assert.equal(await waitForAnswer(page), "done");

    const raw = activeConversation(await storedState(page)).messages.at(-1).content;
    const reference = await referenceAnswer({ model: QWEN2_MODEL, messages: [{ role: "user", content: "Say something." }], max_tokens: 24, logit_bias: logitBias });
    assert.equal(raw, reference.text, "the UI holds exactly what the model said");
    assert.match(raw, /<\/?(script|img|b|iframe)\b/, `the model's reply should contain HTML tags for this test to mean anything: ${JSON.stringify(raw)}`);

    const body = lastAnswer(page).getByTestId("message-text");
    const tags = await elementTags(body);
    for (const tag of FORBIDDEN) assert.ok(!tags.includes(tag), `the answer produced a <${tag}> element: ${tags.join(", ")}`);
    // The text on screen, less the labels of code blocks (language, Copy) should any form.
    const shownText = await body.evaluate((el) => {
      const copy = el.cloneNode(true);
      copy.querySelectorAll(".code-head").forEach((head) => head.remove());
      return copy.textContent;
    });
    assert.equal(collapse(shownText), collapse(raw), "the reply is shown as its literal text");
    assert.deepEqual(dialogs, [], "no script ran");
    assert.equal(await page.locator("script:not([src])").count(), 0);
  });
});

test("user text with HTML and Markdown is shown exactly as typed", { timeout: 60_000 }, async () => {
  await withApp(browser, "user-html", {}, async (page) => {
    const dialogs = [];
    page.on("dialog", (d) => (dialogs.push(d.message()), d.dismiss()));
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: QWEN2_MODEL, maxTokens: 2 });
    const text = `<img src=x onerror="alert('user')"> <script>alert("user")</script> **not bold** <b>plain</b>`;
    await sendMessage(page, text);
    await waitForAnswer(page);
    const bubble = userMessages(page).first().getByTestId("message-text");
    assert.equal(await bubble.textContent(), text);
    assert.deepEqual(await elementTags(bubble), [], "no element was made from the user's text");
    assert.deepEqual(dialogs, []);
  });
});
