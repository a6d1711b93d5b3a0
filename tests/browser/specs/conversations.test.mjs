// The conversation list (switch, rename, delete), reload keeping everything, and the model picker.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, withApp } from "../lib/browser.mjs";
import { API_KEY, BASE_URL, MOCK_MODEL, QWEN2_MODEL } from "../lib/env.mjs";
import { modelIds } from "../lib/server.mjs";
import {
  captureChatRequests,
  configureChat,
  conversationItems,
  conversationTitles,
  newChat,
  sendMessage,
  setApiKey,
  storedState,
  userMessages,
  waitForAnswer,
} from "../lib/ui.mjs";

let browser;
before(async () => (browser = await launchBrowser()));
after(async () => browser?.close());

// What the page shows of the current chat: title and every message's text.
async function visibleChat(page) {
  return {
    title: await page.getByTestId("chat-title").textContent(),
    messages: await page.locator("[data-testid=message]").evaluateAll((els) =>
      els.map((el) => `${el.getAttribute("data-role")}: ${el.querySelector("[data-testid=message-text]")?.textContent ?? ""}`),
    ),
  };
}

test("switch, rename and delete chats; reload keeps everything", { timeout: 90_000 }, async () => {
  await withApp(browser, "conversations", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 8, temperature: 0 });
    await sendMessage(page, "alpha question");
    assert.equal(await waitForAnswer(page), "done");
    await newChat(page);
    assert.equal(await userMessages(page).count(), 0, "a new chat starts empty");
    await sendMessage(page, "beta question");
    assert.equal(await waitForAnswer(page), "done");
    assert.deepEqual(await conversationTitles(page), ["beta question", "alpha question"], "titles come from the first message, newest first");

    // Switch back to the first chat.
    await conversationItems(page).filter({ hasText: "alpha question" }).getByTestId("conversation-select").click();
    let shown = await visibleChat(page);
    assert.equal(shown.title, "alpha question");
    assert.equal(shown.messages.length, 2);
    assert.equal(shown.messages[0], "user: alpha question");

    // Rename it.
    await conversationItems(page).filter({ hasText: "alpha question" }).getByTestId("rename").click();
    const renameInput = page.getByTestId("rename-input");
    await renameInput.fill("Renamed alpha");
    await renameInput.press("Enter");
    assert.deepEqual((await conversationTitles(page)).sort(), ["Renamed alpha", "beta question"]);
    assert.equal(await page.getByTestId("chat-title").textContent(), "Renamed alpha");

    // Reload: same chats, same active chat, same messages and stats.
    shown = await visibleChat(page);
    const titlesBefore = await conversationTitles(page);
    const statsBefore = await page.getByTestId("stats").allTextContents();
    const stateBefore = await storedState(page);
    await page.reload();
    await page.getByTestId("composer-input").waitFor();
    assert.deepEqual(await conversationTitles(page), titlesBefore);
    assert.deepEqual(await visibleChat(page), shown);
    assert.deepEqual(await page.getByTestId("stats").allTextContents(), statsBefore);
    assert.deepEqual(await storedState(page), stateBefore);

    // The other chat survived the reload too.
    await conversationItems(page).filter({ hasText: "beta question" }).getByTestId("conversation-select").click();
    assert.deepEqual((await visibleChat(page)).messages.slice(0, 1), ["user: beta question"]);

    // Delete it (with confirmation); the deletion survives a reload.
    await conversationItems(page).filter({ hasText: "beta question" }).getByTestId("delete").click();
    await page.getByTestId("confirm-delete").click();
    assert.deepEqual(await conversationTitles(page), ["Renamed alpha"]);
    assert.equal(await page.getByTestId("chat-title").textContent(), "Renamed alpha");
    await page.reload();
    await page.getByTestId("composer-input").waitFor();
    assert.deepEqual(await conversationTitles(page), ["Renamed alpha"]);
    assert.deepEqual(page.problems, []);
  });
});

test("the model picker lists the server's models and each chat keeps its own", { timeout: 60_000 }, async () => {
  await withApp(browser, "model-picker", {}, async (page) => {
    const served = await modelIds();
    assert.ok(served.includes(QWEN2_MODEL) && served.includes(MOCK_MODEL), `the server lists ${served.join(", ")}`);
    const picker = page.getByTestId("model-select");
    await page.waitForFunction(() => !document.querySelector("[data-testid=model-select]").disabled);
    const options = await picker.locator("option").evaluateAll((els) => els.map((o) => o.value));
    assert.deepEqual([...options].sort(), [...served].sort(), "the picker offers exactly the served models");

    await setApiKey(page, API_KEY);
    await configureChat(page, { model: QWEN2_MODEL, maxTokens: 4 });
    const requests = captureChatRequests(page);
    await sendMessage(page, "Which model are you?");
    assert.equal(await waitForAnswer(page), "done");
    assert.equal(requests.at(-1).model, QWEN2_MODEL);

    await newChat(page);
    await configureChat(page, { model: MOCK_MODEL });
    await sendMessage(page, "And you?");
    assert.equal(await waitForAnswer(page), "done");
    assert.equal(requests.at(-1).model, MOCK_MODEL);

    await conversationItems(page).filter({ hasText: "Which model are you?" }).getByTestId("conversation-select").click();
    assert.equal(await picker.inputValue(), QWEN2_MODEL, "switching back shows that chat's model");
    await page.reload();
    await page.waitForFunction(() => !document.querySelector("[data-testid=model-select]").disabled);
    assert.equal(await picker.inputValue(), QWEN2_MODEL, "the choice survives a reload");
  });
});

test("a chat made in another tab survives this tab's streaming saves", { timeout: 90_000 }, async () => {
  await withApp(browser, "two-tabs", {}, async (first) => {
    await setApiKey(first, API_KEY);
    // A long answer in the first tab (the launcher slows the mock model down per step).
    await configureChat(first, { model: MOCK_MODEL, maxTokens: 600, temperature: 0 });
    const second = await first.context().newPage();  // same origin and storage: a second tab
    await second.goto(BASE_URL);
    await second.getByTestId("composer-input").waitFor({ timeout: 10_000 });
    await sendMessage(first, "Count slowly to a thousand.");
    await first.waitForFunction(() => {
      const all = document.querySelectorAll("[data-testid=message][data-role=assistant]");
      return (all[all.length - 1]?.querySelector("[data-testid=message-text]")?.textContent?.length ?? 0) > 20;
    });

    await newChat(second);
    await configureChat(second, { model: MOCK_MODEL, maxTokens: 4, temperature: 0 });
    await sendMessage(second, "from tab two");
    assert.equal(await waitForAnswer(second), "done");
    // The first tab saves about once a second while it streams: let it save several times.
    await first.waitForTimeout(2500);
    assert.ok((await conversationTitles(second)).includes("from tab two"), "the second tab lost its chat");
    const stored = (await storedState(second)).conversations.map((c) => c.title);
    assert.ok(stored.includes("from tab two"), `the saved chats lost it: ${JSON.stringify(stored)}`);
    assert.ok(stored.includes("Count slowly to a thousand."), "the streaming chat is saved too");

    await first.getByTestId("stop").click();
    assert.equal(await waitForAnswer(first), "stopped");
    assert.ok((await conversationTitles(first)).includes("from tab two"), "the first tab shows the other tab's chat");
    const after = await storedState(first);
    assert.ok(after.conversations.map((c) => c.title).includes("from tab two"));
    await second.close();
  });
});
