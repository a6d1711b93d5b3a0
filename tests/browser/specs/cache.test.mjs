// Multi-turn reuse: the second turn of a conversation is served partly from the prefix cache, and
// the answer's stats say how many prompt tokens were cached.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, withApp } from "../lib/browser.mjs";
import { API_KEY, QWEN2_MODEL } from "../lib/env.mjs";
import { configureChat, lastAnswer, sendMessage, setApiKey, waitForAnswer } from "../lib/ui.mjs";

let browser;
before(async () => (browser = await launchBrowser()));
after(async () => browser?.close());

test("a second turn shows cached tokens > 0", { timeout: 60_000 }, async () => {
  await withApp(browser, "cached-tokens", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, {
      model: QWEN2_MODEL,
      maxTokens: 8,
      temperature: 0,
      systemPrompt: "You are a patient assistant who answers questions about lighthouses, tides and ships.",
    });
    // Long enough that the first turn fills several KV blocks whatever the block size.
    const first = `Here is some context for my questions. ${"The lighthouse keeper climbed the stairs every evening at dusk. ".repeat(8)}What did the keeper do?`;
    await sendMessage(page, first);
    assert.equal(await waitForAnswer(page), "done");
    await sendMessage(page, "And what happened in the morning?");
    assert.equal(await waitForAnswer(page), "done");

    const stats = lastAnswer(page).getByTestId("stats");
    const cached = Number(await stats.getAttribute("data-cached-tokens"));
    const prompt = Number(await stats.getAttribute("data-prompt-tokens"));
    assert.ok(cached > 0, `the second turn reports ${cached} cached tokens`);
    assert.ok(cached <= prompt, `cached ${cached} <= prompt ${prompt}`);
    assert.match(await stats.textContent(), new RegExp(`\\b${cached} cached\\b`), "the count is on screen");
  });
});
