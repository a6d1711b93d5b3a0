// Screenshots at desktop and phone widths (saved as test artifacts) and a programmatic layout check
// of each state: nothing overlapping, off-screen, cut off or squashed.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { DESKTOP, launchBrowser, PHONE, saveScreenshot, withApp } from "../lib/browser.mjs";
import { API_KEY, MOCK_MODEL, QWEN2_MODEL } from "../lib/env.mjs";
import { layoutProblems } from "../lib/layout.mjs";
import { configureChat, lastAnswer, newChat, openChatList, openSettings, sendMessage, setApiKey, userMessages, waitForAnswer } from "../lib/ui.mjs";

let browser;
before(async () => (browser = await launchBrowser()));
after(async () => browser?.close());

async function check(page, name, problemsByState) {
  problemsByState[name] = await layoutProblems(page);
  await saveScreenshot(page, name);
}

for (const [width, viewport] of [["desktop", DESKTOP], ["phone", PHONE]]) {
  test(`layout at ${width} width (${viewport.width}x${viewport.height})`, { timeout: 120_000 }, async () => {
    await withApp(browser, `layout-${width}`, { viewport }, async (page) => {
      const problems = {};
      await check(page, `${width}-welcome`, problems);

      await setApiKey(page, API_KEY);
      await configureChat(page, { model: QWEN2_MODEL, maxTokens: 48, temperature: 0 });
      await sendMessage(page, "Explain how a lighthouse lens works, with a short list and a code example.");
      await waitForAnswer(page);
      await sendMessage(page, `A long unbroken word must wrap too: ${"x".repeat(120)}\nand a second line.`);
      await waitForAnswer(page);
      await configureChat(page, { model: MOCK_MODEL, maxTokens: 8 });
      await page.context().setOffline(true);
      await sendMessage(page, "This one fails to show the error card.");
      assert.equal(await waitForAnswer(page), "error");
      await page.context().setOffline(false);
      await check(page, `${width}-chat`, problems);
      // The view followed the conversation: the newest thing (the error card) is on screen.
      const card = await lastAnswer(page).getByTestId("error").boundingBox();
      const view = await page.getByTestId("messages").boundingBox();
      assert.ok(card.y >= view.y - 1 && card.y + card.height <= view.y + view.height + 1, `the error card is not in view: ${JSON.stringify({ card, view })}`);

      await userMessages(page).first().hover();
      await userMessages(page).first().getByTestId("edit").click();
      await check(page, `${width}-editing`, problems);
      await page.getByTestId("edit-cancel").click();

      await openSettings(page);
      await check(page, `${width}-settings`, problems);
      await page.keyboard.press("Escape");

      await lastAnswer(page).waitFor();
      await newChat(page);
      await openChatList(page);
      await check(page, `${width}-chat-list`, problems);

      const found = Object.entries(problems).flatMap(([state, list]) => list.map((p) => `${state}: ${p}`));
      assert.deepEqual(found, [], `layout problems:\n${found.join("\n")}`);
      assert.deepEqual(page.problems, []);
    });
  });
}
