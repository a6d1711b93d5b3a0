// Errors are shown inline, in the conversation, with what to do; and the suggested action works.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, withApp } from "../lib/browser.mjs";
import { API_KEY, MOCK_CONTEXT_TOKENS, MOCK_MODEL, SERVER_CAPACITY } from "../lib/env.mjs";
import { openBackgroundStream, waitForLoad } from "../lib/server.mjs";
import { answers, configureChat, lastAnswer, sendMessage, setApiKey, waitForAnswer } from "../lib/ui.mjs";

let browser;
before(async () => (browser = await launchBrowser()));
after(async () => browser?.close());

const errorCard = (page) => lastAnswer(page).getByTestId("error");

test("401: the UI asks for the API key, and retrying with it works", { skip: API_KEY === "" && "the server runs without an API key", timeout: 60_000 }, async () => {
  await withApp(browser, "error-401", {}, async (page) => {
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 4 });
    await sendMessage(page, "Hello without a key");
    assert.equal(await waitForAnswer(page), "error");
    assert.equal(await errorCard(page).getAttribute("data-kind"), "auth");
    assert.match(await errorCard(page).getByTestId("error-hint").textContent(), /API key/);
    assert.match(await errorCard(page).getByTestId("error-detail").textContent(), /401/);

    await errorCard(page).getByTestId("error-api-key").click();
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-testid")), "api-key", "the key field gets the focus");
    await page.keyboard.type(API_KEY);
    await errorCard(page).getByTestId("error-retry").click();
    assert.equal(await waitForAnswer(page), "done");
    assert.equal(await answers(page).count(), 1, "the failed answer was replaced");
    assert.equal(await page.getByTestId("error").count(), 0);
  });
});

test("context length: the error says the conversation is too long and offers to edit", { timeout: 60_000 }, async () => {
  await withApp(browser, "error-context-length", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 8 });
    const tooLong = "lighthouse keeper ".repeat(MOCK_CONTEXT_TOKENS);
    await sendMessage(page, tooLong);
    assert.equal(await waitForAnswer(page), "error");
    assert.equal(await errorCard(page).getAttribute("data-kind"), "context_length");
    assert.match(await errorCard(page).getByTestId("error-hint").textContent(), /edit your last message|new chat/i);
    await errorCard(page).getByTestId("error-edit-last").click();
    assert.equal((await page.getByTestId("edit-input").inputValue()).trim(), tooLong.trim(), "the long message opens for editing");
  });
});

test("429/503: a full server is reported with when to retry, and retry works once there is room", { timeout: 90_000 }, async () => {
  await withApp(browser, "error-overloaded", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 4 });
    const background = [];
    try {
      for (let i = 0; i < SERVER_CAPACITY; i++) background.push(openBackgroundStream(MOCK_MODEL, 600));
      await waitForLoad((l) => l.running + l.waiting === SERVER_CAPACITY, 10_000, `the server did not take ${SERVER_CAPACITY} requests`);
      await sendMessage(page, "Is there room for me?");
      assert.equal(await waitForAnswer(page), "error");
      const kind = await errorCard(page).getAttribute("data-kind");
      assert.ok(kind === "rate_limit" || kind === "overloaded", `error kind ${kind}`);
      assert.match(await errorCard(page).getByTestId("error-detail").textContent(), /HTTP (429|503)/);
      assert.match(await errorCard(page).getByTestId("error-hint").textContent(), /wait \d+ s|retry/i);
    } finally {
      await Promise.all(background.map((b) => b.abort()));
    }
    await waitForLoad((l) => l.running === 0 && l.waiting === 0, 5_000, "the background requests were not freed");
    await errorCard(page).getByTestId("error-retry").click();
    assert.equal(await waitForAnswer(page), "done");
  });
});

test("network: an unreachable server is reported, and retry works when it is back", { timeout: 60_000 }, async () => {
  await withApp(browser, "error-network", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 4 });
    await page.context().setOffline(true);
    await sendMessage(page, "Anyone there?");
    assert.equal(await waitForAnswer(page), "error");
    assert.equal(await errorCard(page).getAttribute("data-kind"), "network");
    assert.match(await errorCard(page).getByTestId("error-hint").textContent(), /llaisys-server/);
    await page.context().setOffline(false);
    await errorCard(page).getByTestId("error-retry").click();
    assert.equal(await waitForAnswer(page), "done");
  });
});
