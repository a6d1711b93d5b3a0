// The reasoning ("thinking") block, against the real server: the mock model answers the thinking
// prompt with "<think>...</think>" and an answer, which the server (--reasoning-format deepseek)
// streams as reasoning_content, then content.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, saveScreenshot, withApp } from "../lib/browser.mjs";
import { API_KEY, MOCK_MODEL, THINK_PROMPT } from "../lib/env.mjs";
import { layoutProblems } from "../lib/layout.mjs";
import { referenceAnswer } from "../lib/server.mjs";
import {
  activeConversation,
  captureChatRequests,
  configureChat,
  lastAnswer,
  recordThinking,
  sendMessage,
  setApiKey,
  shownAnswer,
  storedState,
  waitForAnswer,
} from "../lib/ui.mjs";

let browser;
before(async () => (browser = await launchBrowser()));
after(async () => browser?.close());

const MAX_TOKENS = 200;
const collapse = (s) => s.replace(/\s+/g, " ").trim();

test("the thinking block streams open, collapses when the answer starts, and stays with the message", { timeout: 120_000 }, async () => {
  const reference = await referenceAnswer({ model: MOCK_MODEL, messages: [{ role: "user", content: THINK_PROMPT }], max_tokens: MAX_TOKENS });
  assert.ok(reference.reasoning !== undefined && reference.reasoning.includes("step by step"), `the server split no reasoning off: ${JSON.stringify(reference)}`);
  assert.ok(!reference.text.includes("<think>") && reference.text.includes("42"), `content: ${JSON.stringify(reference.text)}`);

  await withApp(browser, "thinking", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: MAX_TOKENS, temperature: 0 });
    const requests = captureChatRequests(page);
    await sendMessage(page, THINK_PROMPT);
    const recording = recordThinking(page);

    // While it thinks: the block is open and its text grows; screenshot it there.
    const block = lastAnswer(page).getByTestId("reasoning");
    await page.waitForFunction(() => (document.querySelector("[data-testid=reasoning-text]")?.textContent.length ?? 0) > 40);
    assert.equal(await block.getAttribute("data-state"), "thinking");
    assert.equal(await block.evaluate((el) => el.open), true);
    const streamingProblems = await layoutProblems(page);
    await saveScreenshot(page, "feature-thinking-streaming");

    const frames = await recording;
    const thinkingFrames = frames.filter(([reasoning, , content]) => reasoning > 0 && content === 0);
    const answerFrames = frames.filter(([, , content]) => content > 0);
    assert.ok(thinkingFrames.length >= 3, `the reasoning grew over too few frames: ${JSON.stringify(frames)}`);
    assert.ok(thinkingFrames.every(([, open]) => open), `the block was closed while thinking: ${JSON.stringify(frames)}`);
    for (let i = 1; i < thinkingFrames.length; i++) assert.ok(thinkingFrames[i][0] >= thinkingFrames[i - 1][0], "the reasoning shrank");
    assert.ok(answerFrames.length >= 1, `no answer text was seen: ${JSON.stringify(frames)}`);
    assert.ok(answerFrames.every(([, open]) => !open), `the block stayed open once the answer started: ${JSON.stringify(frames)}`);

    // Done: the reasoning and the answer are the server's, kept apart, the block closed.
    assert.equal(await waitForAnswer(page), "done");
    const stored = activeConversation(await storedState(page)).messages.at(-1);
    assert.equal(stored.reasoning, reference.reasoning);
    assert.equal(stored.content, reference.text);
    const shown = await shownAnswer(lastAnswer(page));
    assert.equal(shown.reasoning, collapse(reference.reasoning));
    assert.match(shown.content, /^The answer is 42, as the computer Deep Thought found\.$/);
    assert.equal(await block.evaluate((el) => el.open), false);
    assert.equal(await block.getAttribute("data-state"), "done");
    const reasoningTokens = reference.usage.completion_tokens_details?.reasoning_tokens ?? 0;
    if (reasoningTokens > 0) assert.match(await lastAnswer(page).getByTestId("stats").textContent(), new RegExp(`\\(${reasoningTokens} reasoning\\)`));
    await saveScreenshot(page, "feature-thinking-collapsed");
    const doneProblems = await layoutProblems(page);

    // The user opens and closes it.
    await block.getByTestId("reasoning-toggle").click();
    assert.equal(await block.evaluate((el) => el.open), true);
    assert.ok(await lastAnswer(page).getByTestId("reasoning-text").isVisible());
    await block.getByTestId("reasoning-toggle").click();
    assert.equal(await block.evaluate((el) => el.open), false);

    // After a reload it is still there, closed, with the same text.
    await page.reload();
    await page.getByTestId("composer-input").waitFor();
    assert.deepEqual(await shownAnswer(lastAnswer(page)), shown);
    assert.equal(await lastAnswer(page).getByTestId("reasoning").evaluate((el) => el.open), false);

    // The next request carries the answer's content only, never its reasoning.
    await configureChat(page, { maxTokens: 4 });
    await sendMessage(page, "And why is that?");
    await waitForAnswer(page);
    const next = requests.at(-1);
    assert.deepEqual(next.messages.slice(0, 2), [
      { role: "user", content: THINK_PROMPT },
      { role: "assistant", content: reference.text },
    ]);
    const body = JSON.stringify(next);
    assert.ok(!body.includes("reasoning") && !body.includes("step by step") && !body.includes("<think>"), body);

    assert.deepEqual([...streamingProblems, ...doneProblems], [], "layout problems");
    assert.deepEqual(page.problems, []);
  });
});
