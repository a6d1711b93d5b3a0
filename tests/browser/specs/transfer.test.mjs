// Export of one or all conversations to a downloaded JSON file, and import back through the file
// picker; a malformed or wrong file is refused with a message and changes nothing.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, test } from "node:test";
import { launchBrowser, saveScreenshot, withApp } from "../lib/browser.mjs";
import { API_KEY, ARTIFACTS_DIR, MOCK_MODEL } from "../lib/env.mjs";
import { layoutProblems } from "../lib/layout.mjs";
import { configureChat, conversationItems, conversationTitles, newChat, sendMessage, setApiKey, storedState, userMessages, waitForAnswer } from "../lib/ui.mjs";

let browser;
before(async () => (browser = await launchBrowser()));
after(async () => browser?.close());

// Clicks `button` and returns the JSON of the file the page downloads.
async function downloadJson(page, button) {
  const [download] = await Promise.all([page.waitForEvent("download"), button.click()]);
  return { name: download.suggestedFilename(), json: JSON.parse(await readFile(await download.path(), "utf8")) };
}

// Picks `file` (a path, or { name, mimeType, buffer }) through the Import button's file picker.
async function importFile(page, file) {
  const message = page.getByTestId("transfer-message");
  const previous = await message.evaluate((el) => (el.hidden ? null : el.textContent));
  const [chooser] = await Promise.all([page.waitForEvent("filechooser"), page.getByTestId("import").click()]);
  await chooser.setFiles(file);
  await page.waitForFunction((before) => {
    const el = document.querySelector("[data-testid=transfer-message]");
    return el !== null && !el.hidden && el.textContent !== before;
  }, previous);
  return { kind: await message.getAttribute("data-kind"), text: await message.textContent() };
}

async function makeTwoChats(page) {
  await setApiKey(page, API_KEY);
  await configureChat(page, { model: MOCK_MODEL, maxTokens: 6, temperature: 0, systemPrompt: "You are the first chat." });
  await sendMessage(page, "first chat question");
  assert.equal(await waitForAnswer(page), "done");
  await newChat(page);
  await configureChat(page, { systemPrompt: "You are the second chat.", extra: '{"seed": 3}' });
  await sendMessage(page, "second chat question");
  assert.equal(await waitForAnswer(page), "done");
  await sendMessage(page, "second chat, second turn");
  assert.equal(await waitForAnswer(page), "done");
}

test("export all -> clear storage -> import restores the same conversations; one chat exports alone", { timeout: 120_000 }, async () => {
  let exported;
  await withApp(browser, "transfer", {}, async (page) => {
    await makeTwoChats(page);
    const before = await storedState(page);
    assert.equal(before.conversations.length, 2);

    const all = await downloadJson(page, page.getByTestId("export-all"));
    assert.match(all.name, /^llaisys-chats-\d{4}-\d{2}-\d{2}\.json$/);
    assert.equal(all.json.format, "llaisys-webui-chats");
    assert.equal(all.json.version, 1);
    assert.deepEqual(all.json.conversations, before.conversations, "the file holds the conversations as stored");
    exported = all.json;
    assert.ok(!JSON.stringify(all.json).includes(API_KEY), "the API key is not exported");
    assert.match(await page.getByTestId("transfer-message").textContent(), /Exported 2 chats/);

    const firstItem = conversationItems(page).filter({ hasText: "first chat question" });
    await firstItem.hover();
    const one = await downloadJson(page, firstItem.getByTestId("export"));
    assert.equal(one.name, "llaisys-chat-first-chat-question.json");
    assert.deepEqual(one.json.conversations, before.conversations.filter((c) => c.title === "first chat question"));

    assert.deepEqual(page.problems, []);
  });

  // Import into empty storage: a fresh browser profile (clearing the storage under the running
  // page would be undone by the page's own save when it unloads).
  await withApp(browser, "transfer-import", {}, async (page) => {
    assert.ok((await storedState(page)).conversations.every((c) => c.messages.length === 0), "the new profile has no chats");
    const file = path.join(ARTIFACTS_DIR, "exported-chats.json");
    await writeFile(file, JSON.stringify(exported));
    const imported = await importFile(page, file);
    assert.deepEqual(imported, { kind: "ok", text: "Imported 2 chats." });
    const after = await storedState(page);
    const ids = new Set(exported.conversations.map((c) => c.id));
    assert.deepEqual(after.conversations.filter((c) => ids.has(c.id)), exported.conversations, "the imported chats equal the exported ones");
    assert.equal(after.activeConversationId, exported.conversations[0].id, "the newest imported chat is shown");
    assert.deepEqual(await userMessages(page).allTextContents(), ["second chat question", "second chat, second turn"]);

    // The same file again adds nothing; after a reload everything is still there.
    assert.deepEqual(await importFile(page, file), { kind: "ok", text: "2 chats already here." });
    await page.reload();
    await page.getByTestId("composer-input").waitFor();
    assert.deepEqual((await storedState(page)).conversations.filter((c) => ids.has(c.id)), exported.conversations);
    assert.deepEqual(page.problems, []);
  });
});

test("a malformed or wrong import file is refused with a message, and nothing is lost", { timeout: 120_000 }, async () => {
  await withApp(browser, "import-refused", {}, async (page) => {
    await makeTwoChats(page);
    const before = await storedState(page);
    const wrongFiles = [
      { name: "broken.json", mimeType: "application/json", buffer: Buffer.from('{"format": "llaisys-webui-chats", "conversations": [') },
      { name: "other.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify({ conversations: before.conversations })) },
      {
        name: "bad-message.json",
        mimeType: "application/json",
        buffer: Buffer.from(JSON.stringify({ format: "llaisys-webui-chats", version: 1, conversations: [{ ...before.conversations[0], id: "new-id", messages: [{ id: "m", role: "system", content: "x" }] }] })),
      },
      { name: "photo.json", mimeType: "image/png", buffer: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 13]) },
    ];
    const reasons = [/not valid JSON/, /not a llaisys chat export/, /Chat 1 of the file .* has 1 invalid message/, /not valid JSON/];
    for (const [i, file] of wrongFiles.entries()) {
      const outcome = await importFile(page, file);
      assert.equal(outcome.kind, "error", file.name);
      assert.match(outcome.text, new RegExp(`^Nothing was imported from "${file.name}": `));
      assert.match(outcome.text, reasons[i]);
      assert.ok(await page.getByTestId("transfer-message").isVisible());
      assert.equal(await page.getByTestId("transfer-message").getAttribute("role"), "alert");
      assert.deepEqual(await storedState(page), before, `${file.name} changed the stored state`);
      assert.deepEqual(await conversationTitles(page), ["second chat question", "first chat question"]);
      if (i === 0) {
        assert.deepEqual(await layoutProblems(page), []);
        await saveScreenshot(page, "feature-import-error");
      }
    }
    await page.reload();
    await page.getByTestId("composer-input").waitFor();
    assert.deepEqual(await storedState(page), before, "nothing was lost across a reload");
    assert.deepEqual(page.problems, []);
  });
});
