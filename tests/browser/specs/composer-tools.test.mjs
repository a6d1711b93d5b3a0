// Around the message box: attached text files, the per-chat system prompt, keyboard shortcuts and
// their help panel.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, saveScreenshot, withApp } from "../lib/browser.mjs";
import { API_KEY, MOCK_MODEL } from "../lib/env.mjs";
import { layoutProblems } from "../lib/layout.mjs";
import {
  activeConversation,
  captureChatRequests,
  configureChat,
  conversationItems,
  conversationTitles,
  lastAnswer,
  newChat,
  openSettings,
  sendMessage,
  setApiKey,
  storedState,
  userMessages,
  waitForAnswer,
} from "../lib/ui.mjs";

let browser;
before(async () => (browser = await launchBrowser()));
after(async () => browser?.close());

async function attach(page, files) {
  const [chooser] = await Promise.all([page.waitForEvent("filechooser"), page.getByTestId("attach").click()]);
  await chooser.setFiles(files);
}

const textFile = (name, text) => ({ name, mimeType: "text/plain", buffer: Buffer.from(text, "utf8") });

test("attached text files go into the message as fenced blocks; binary and oversized files are refused", { timeout: 60_000 }, async () => {
  await withApp(browser, "attach", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 4 });
    const input = page.getByTestId("composer-input");
    await input.fill("Please review:");
    const source = "int main() {\n  // a fence inside: ```\n  return 0;\n}\n";
    await attach(page, [textFile("main.cpp", source)]);
    const expected = `Please review:\n\nmain.cpp:\n\`\`\`\`cpp\n${source}\`\`\`\`\n`;
    // The file is read asynchronously: wait until the box changes (or give up and compare anyway).
    await page.waitForFunction((text) => document.querySelector("[data-testid=composer-input]").value !== text,
      "Please review:", { timeout: 5_000 }).catch(() => {});
    assert.equal(await input.inputValue(), expected);
    assert.ok(await page.getByTestId("attach-error").isHidden());

    // A binary file and a file over 256 KB are refused by name; the message is left as it was.
    await attach(page, [
      { name: "photo.png", mimeType: "image/png", buffer: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]) },
      textFile("huge.log", "x".repeat(300 * 1024)),
    ]);
    const error = page.getByTestId("attach-error");
    await error.waitFor({ state: "visible", timeout: 5_000 }).catch(() => {});  // shown once every file is read
    assert.ok(await error.isVisible());
    assert.match(await error.textContent(), /"photo.png" is not a text file .*"huge.log" is 300 KB: files up to 256 KB can be attached/);
    assert.equal(await input.inputValue(), expected);

    // Sent as typed: the user bubble shows the text, the request carries it.
    const requests = captureChatRequests(page);
    await input.press("Enter");
    await waitForAnswer(page);
    assert.equal(await userMessages(page).last().getByTestId("message-text").textContent(), expected);
    assert.equal(requests.at(-1).messages.at(-1).content, expected);
    assert.ok(await error.isHidden(), "the refusal is cleared once a message is sent");
    assert.deepEqual(page.problems, []);
  });
});

test("the system prompt belongs to its chat and is sent with it", { timeout: 90_000 }, async () => {
  await withApp(browser, "system-prompt", {}, async (page) => {
    await setApiKey(page, API_KEY);
    const requests = captureChatRequests(page);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 4, systemPrompt: "You are chat A." });
    await sendMessage(page, "question in A");
    await waitForAnswer(page);
    await newChat(page);
    await configureChat(page, { systemPrompt: "You are chat B." });
    await sendMessage(page, "question in B");
    await waitForAnswer(page);
    await conversationItems(page).filter({ hasText: "question in A" }).getByTestId("conversation-select").click();
    await sendMessage(page, "again in A");
    await waitForAnswer(page);

    const systems = requests.map((r) => [r.messages[0], r.messages.at(-1).content]);
    assert.deepEqual(systems, [
      [{ role: "system", content: "You are chat A." }, "question in A"],
      [{ role: "system", content: "You are chat B." }, "question in B"],
      [{ role: "system", content: "You are chat A." }, "again in A"],
    ]);
    await page.reload();
    await page.getByTestId("composer-input").waitFor();
    assert.equal(activeConversation(await storedState(page)).settings.systemPrompt, "You are chat A.");
    await openSettings(page);
    assert.equal(await page.getByTestId("setting-system-prompt").inputValue(), "You are chat A.");
  });
});

test("keyboard shortcuts: new chat, focus, stop, chat list, help panel", { timeout: 90_000 }, async () => {
  await withApp(browser, "shortcuts", {}, async (page) => {
    await setApiKey(page, API_KEY);
    await configureChat(page, { model: MOCK_MODEL, maxTokens: 300 });
    const input = page.getByTestId("composer-input");
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute("data-testid") ?? document.activeElement?.tagName);

    // Esc in the message box stops the answer.
    await sendMessage(page, "Count for a long time.");
    await page.waitForFunction(() => (document.querySelector("[data-state=streaming] [data-testid=message-text]")?.textContent.length ?? 0) > 5);
    await input.press("Escape");
    assert.equal(await waitForAnswer(page, 5_000), "stopped");

    // Ctrl+Shift+O: a new chat, with the focus in its message box.
    await page.keyboard.press("Control+Shift+O");
    assert.deepEqual(await conversationTitles(page), ["New chat", "Count for a long time."]);
    assert.equal(await userMessages(page).count(), 0);
    assert.equal(await focused(), "composer-input");

    // "?" typed in the message box is text; on the page it opens the help panel.
    await input.press("?");
    assert.equal(await input.inputValue(), "?");
    assert.ok(await page.getByTestId("help").isHidden());
    await input.fill("");
    await page.locator("body").click({ position: { x: 640, y: 300 } });
    await page.keyboard.press("?");
    const help = page.getByTestId("help");
    await help.waitFor({ state: "visible" });
    const rows = await help.locator("tr").evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent.trim()).join(" ")));
    for (const expected of ["Ctrl+Shift+O New chat", "Shift+Esc Focus the message box", "Esc Stop the answer", "Ctrl+Shift+S Show or hide the chat list", "? or Ctrl+/ Keyboard shortcuts", "Enter Send the message"]) {
      assert.ok(rows.some((row) => row.startsWith(expected)), `no "${expected}" in ${JSON.stringify(rows)}`);
    }
    assert.deepEqual(await layoutProblems(page), []);
    await saveScreenshot(page, "feature-help");
    await page.keyboard.press("Escape");
    await help.waitFor({ state: "hidden" });

    // Ctrl+/ opens it from the message box; so does the Shortcuts button; the close button closes it.
    await input.focus();
    await page.keyboard.press("Control+/");
    await help.waitFor({ state: "visible" });
    await page.getByTestId("help-close").click();
    await help.waitFor({ state: "hidden" });
    await page.getByTestId("shortcuts").click();
    await help.waitFor({ state: "visible" });
    await page.keyboard.press("Escape");
    await help.waitFor({ state: "hidden" });

    // Shift+Esc from another field focuses the message box.
    await openSettings(page);
    await page.getByTestId("setting-maxTokens").focus();
    await page.keyboard.press("Shift+Escape");
    assert.equal(await focused(), "composer-input");
    await page.keyboard.press("Escape");
    await page.getByTestId("settings-panel").waitFor({ state: "hidden" });

    // Ctrl+Shift+S hides the chat list column, and shows it again.
    const sidebar = page.locator(".sidebar");
    await page.keyboard.press("Control+Shift+S");
    await sidebar.waitFor({ state: "hidden" });
    assert.ok(await page.getByTestId("menu").isVisible(), "the menu button brings the list back");
    assert.deepEqual(await layoutProblems(page), []);
    await page.keyboard.press("Control+Shift+S");
    await sidebar.waitFor({ state: "visible" });
    assert.equal(await lastAnswer(page).count(), 0);
    assert.deepEqual(page.problems, []);
  });
});
