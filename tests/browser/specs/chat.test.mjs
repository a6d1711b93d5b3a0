// Sending, streaming, stopping, regenerating and editing: the core of the chat.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, withApp } from "../lib/browser.mjs";
import { API_KEY, MOCK_MODEL } from "../lib/env.mjs";
import { referenceAnswer, serverLoad, waitForLoad } from "../lib/server.mjs";
import {
  activeConversation,
  answers,
  captureChatRequests,
  configureChat,
  lastAnswer,
  recordAnswerGrowth,
  sendMessage,
  setApiKey,
  storedState,
  userMessages,
  waitForAnswer,
} from "../lib/ui.mjs";

let browser;
before(async () => (browser = await launchBrowser()));
after(async () => browser?.close());

const lastStoredAnswer = async (page) => activeConversation(await storedState(page)).messages.at(-1);

test("an answer grows over several frames and equals the server's own answer", { timeout: 60_000 }, async () => {
  await withApp(browser, "streaming", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 32, temperature: 0 });
    const requests = captureChatRequests(page);
    await sendMessage(page, "Tell me a story about a lighthouse.");
    const lengths = await recordAnswerGrowth(page);
    const shown = lengths.filter((n) => n > 0);
    assert.ok(shown.length >= 3, `the answer appeared in ${shown.length} steps (${lengths.join(", ")}), expected it to grow over several frames`);
    for (let i = 1; i < shown.length; i++) assert.ok(shown[i] > shown[i - 1], `the answer shrank while streaming: ${lengths.join(", ")}`);
    assert.equal(await lastAnswer(page).getAttribute("data-state"), "done");

    assert.equal(requests.length, 1);
    const body = requests[0];
    assert.equal(body.model, MOCK_MODEL);
    assert.equal(body.stream, true);
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.equal(body.max_tokens, 32);
    assert.equal(body.temperature, 0);
    assert.deepEqual(body.messages, [{ role: "user", content: "Tell me a story about a lighthouse." }]);

    // The streamed text the UI assembled equals the server's non-streamed answer (greedy).
    const reference = await referenceAnswer({ model: MOCK_MODEL, messages: body.messages, max_tokens: 32 });
    assert.equal((await lastStoredAnswer(page)).content, reference.text);

    // Per-answer stats: the token count is the server's usage; tokens/s was measured.
    const stats = lastAnswer(page).getByTestId("stats");
    assert.equal(Number(await stats.getAttribute("data-completion-tokens")), reference.usage.completion_tokens);
    assert.ok(Number(await stats.getAttribute("data-tokens-per-second")) > 0, "tokens/s is shown");
    const statsText = await stats.textContent();
    assert.match(statsText, new RegExp(`\\b${reference.usage.completion_tokens} tokens\\b`));
    assert.match(statsText, /\d+(\.\d)? tok\/s/);
    assert.match(statsText, /\d+ cached/);
    assert.deepEqual(page.problems, []);
  });
});

test("Enter sends, Shift+Enter adds a line", { timeout: 60_000 }, async () => {
  await withApp(browser, "enter-keys", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 4 });
    const input = page.getByTestId("composer-input");
    await input.click();
    await page.keyboard.type("first line");
    await page.keyboard.press("Shift+Enter");
    await page.keyboard.type("second line");
    assert.equal(await input.inputValue(), "first line\nsecond line");
    assert.equal(await userMessages(page).count(), 0, "Shift+Enter must not send");
    await page.keyboard.press("Enter");
    await waitForAnswer(page);
    assert.equal(await userMessages(page).count(), 1);
    assert.equal(await userMessages(page).first().getByTestId("message-text").textContent(), "first line\nsecond line");
    assert.equal(await input.inputValue(), "", "the box is cleared after sending");
  });
});

test("stop aborts the answer and the server frees the request", { timeout: 60_000 }, async () => {
  await withApp(browser, "stop", {}, async (page) => {
    await setApiKey(page, API_KEY);
    // Long enough to be stopped in the middle (the launcher slows the mock model down per step).
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 600, temperature: 0 });
    const idle = await waitForLoad((l) => l.running === 0, 5_000, "the server is not idle before the test");
    await sendMessage(page, "Count slowly to a thousand.");
    await page.waitForFunction(() => {
      const all = document.querySelectorAll("[data-testid=message][data-role=assistant]");
      return (all[all.length - 1]?.querySelector("[data-testid=message-text]")?.textContent?.length ?? 0) > 20;
    });
    const busy = await serverLoad();
    assert.equal(busy.running, 1, "the answer is running on the server");
    assert.ok(busy.kvBlocksUsed > idle.kvBlocksUsed, "the running answer holds KV blocks");

    await page.getByTestId("stop").click();
    assert.equal(await waitForAnswer(page), "stopped");
    await waitForLoad((l) => l.running === 0 && l.kvBlocksUsed === idle.kvBlocksUsed, 3_000, "the stopped request was not freed");

    const answerText = lastAnswer(page).getByTestId("message-text");
    const stoppedLength = (await answerText.textContent()).length;
    await page.waitForTimeout(500);
    assert.equal((await answerText.textContent()).length, stoppedLength, "nothing is added after stop");
    assert.ok((await lastStoredAnswer(page)).content.length > 0, "the partial answer is kept");
    assert.match(await lastAnswer(page).getByTestId("stats").textContent(), /Stopped/);
    assert.ok(await page.getByTestId("send").isVisible(), "the send button is back");
    assert.ok(!(await page.getByTestId("stop").isVisible()), "the stop button is gone");
  });
});

test("regenerate replaces the last answer with a new request", { timeout: 60_000 }, async () => {
  await withApp(browser, "regenerate", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 16, temperature: 0 });
    await sendMessage(page, "Name three colours.");
    assert.equal(await waitForAnswer(page), "done");
    const firstId = await lastAnswer(page).getAttribute("data-id");

    const requests = captureChatRequests(page);
    await lastAnswer(page).getByTestId("regenerate").click();
    const lengths = await recordAnswerGrowth(page);
    assert.equal(await lastAnswer(page).getAttribute("data-state"), "done");
    assert.ok(lengths.filter((n) => n > 0).length >= 2, "the new answer streamed in");
    assert.notEqual(await lastAnswer(page).getAttribute("data-id"), firstId, "the answer was replaced");
    assert.equal(await answers(page).count(), 1);
    assert.equal(await userMessages(page).count(), 1);
    assert.equal(requests.length, 1);
    assert.deepEqual(requests[0].messages, [{ role: "user", content: "Name three colours." }], "the old answer is not sent back");
    const reference = await referenceAnswer({ model: MOCK_MODEL, messages: requests[0].messages, max_tokens: 16 });
    assert.equal((await lastStoredAnswer(page)).content, reference.text);
  });
});

test("editing an earlier message regenerates from there", { timeout: 60_000 }, async () => {
  await withApp(browser, "edit", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 12, temperature: 0 });
    await sendMessage(page, "First question");
    await waitForAnswer(page);
    await sendMessage(page, "Second question");
    await waitForAnswer(page);
    assert.equal(await userMessages(page).count(), 2);

    const requests = captureChatRequests(page);
    const first = userMessages(page).first();
    await first.hover();
    await first.getByTestId("edit").click();
    const editor = page.getByTestId("edit-input");
    assert.equal(await editor.inputValue(), "First question");
    await editor.fill("First question, asked differently");
    await page.getByTestId("edit-submit").click();
    assert.equal(await waitForAnswer(page), "done");

    assert.equal(requests.length, 1);
    assert.deepEqual(requests[0].messages, [{ role: "user", content: "First question, asked differently" }], "later turns are dropped");
    assert.equal(await userMessages(page).count(), 1);
    assert.equal(await answers(page).count(), 1);
    assert.equal(await userMessages(page).first().getByTestId("message-text").textContent(), "First question, asked differently");
    const reference = await referenceAnswer({ model: MOCK_MODEL, messages: requests[0].messages, max_tokens: 12 });
    assert.equal((await lastStoredAnswer(page)).content, reference.text);
  });
});
