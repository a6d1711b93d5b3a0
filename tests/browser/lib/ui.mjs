// Steps a person takes in the UI, shared by the specs. Everything goes through what is on screen
// (test ids on the controls); only storedState() reads localStorage, to compare raw text.
import { PHONE } from "./browser.mjs";

export const answers = (page) => page.locator('[data-testid=message][data-role=assistant]');
export const userMessages = (page) => page.locator('[data-testid=message][data-role=user]');
export const lastAnswer = (page) => answers(page).last();

function isPhone(page) {
  return page.viewportSize().width <= PHONE.width;
}

export async function sendMessage(page, text) {
  const input = page.getByTestId("composer-input");
  await input.fill(text);
  await input.press("Enter");
}

// Waits until the last answer is no longer streaming; returns its data-state (done, stopped, error).
export async function waitForAnswer(page, timeoutMs = 30_000) {
  const answer = lastAnswer(page);
  await answer.waitFor();
  await page.waitForFunction(
    () => {
      const all = document.querySelectorAll("[data-testid=message][data-role=assistant]");
      const last = all[all.length - 1];
      return last !== undefined && last.getAttribute("data-state") !== "streaming";
    },
    undefined,
    { timeout: timeoutMs },
  );
  return answer.getAttribute("data-state");
}

export async function openSettings(page) {
  await page.getByTestId("settings").click();
  await page.getByTestId("settings-panel").waitFor({ state: "visible" });
}

export async function closeSettings(page) {
  await page.getByTestId("settings-close").click();
  await page.getByTestId("settings-panel").waitFor({ state: "hidden" });
}

// Sets the current chat's model (through the picker) and settings (through the settings panel).
export async function configureChat(page, { model, maxTokens, temperature, topP, systemPrompt, extra } = {}) {
  if (model !== undefined) await page.getByTestId("model-select").selectOption(model);
  const fields = [
    ["setting-maxTokens", maxTokens],
    ["setting-temperature", temperature],
    ["setting-topP", topP],
    ["setting-system-prompt", systemPrompt],
    ["setting-extra", extra],
  ].filter(([, value]) => value !== undefined);
  if (fields.length === 0) return;
  await openSettings(page);
  for (const [id, value] of fields) await page.getByTestId(id).fill(String(value));
  await closeSettings(page);
}

export async function openChatList(page) {
  if (isPhone(page)) {
    await page.getByTestId("menu").click();
    await page.getByTestId("new-chat").waitFor({ state: "visible" });
  }
}

export async function setApiKey(page, key) {
  await openChatList(page);
  await page.getByTestId("api-key").fill(key);
  if (isPhone(page)) await page.keyboard.press("Escape");
}

export async function newChat(page) {
  await openChatList(page);
  await page.getByTestId("new-chat").click();
}

export function conversationItems(page) {
  return page.getByTestId("conversation");
}

export async function conversationTitles(page) {
  return page.getByTestId("conversation-title").allTextContents();
}

// The UI's saved state, as the page would read it back after a reload.
export async function storedState(page) {
  return page.evaluate(() => JSON.parse(localStorage.getItem("llaisys.webui.state") ?? "null"));
}

export function activeConversation(state) {
  return state.conversations.find((c) => c.id === state.activeConversationId);
}

// Records, on every animation frame from now until the last answer stops streaming, how many
// characters of it are on screen; returns the distinct lengths in the order seen.
export async function recordAnswerGrowth(page, timeoutMs = 30_000) {
  return page.evaluate(
    (timeout) =>
      new Promise((resolve, reject) => {
        const lengths = [];
        const started = performance.now();
        const frame = () => {
          const all = document.querySelectorAll("[data-testid=message][data-role=assistant]");
          const last = all[all.length - 1];
          const text = last?.querySelector("[data-testid=message-text]")?.textContent ?? "";
          if (lengths.length === 0 || lengths[lengths.length - 1] !== text.length) lengths.push(text.length);
          if (last !== undefined && last.getAttribute("data-state") !== "streaming") return resolve(lengths);
          if (performance.now() - started > timeout) return reject(new Error(`answer still streaming after ${timeout} ms`));
          requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
      }),
    timeoutMs,
  );
}

// Collects the JSON bodies of the chat requests the page sends from now on.
export function captureChatRequests(page) {
  const bodies = [];
  page.on("request", (request) => {
    if (request.method() === "POST" && request.url().endsWith("/v1/chat/completions")) bodies.push(request.postDataJSON());
  });
  return bodies;
}

// Records, on every animation frame from now until the last answer stops streaming, what its
// reasoning block shows: [reasoning characters, block open, answer characters], each change once.
export async function recordThinking(page, timeoutMs = 30_000) {
  return page.evaluate(
    (timeout) =>
      new Promise((resolve, reject) => {
        const frames = [];
        const started = performance.now();
        const frame = () => {
          const all = document.querySelectorAll("[data-testid=message][data-role=assistant]");
          const last = all[all.length - 1];
          const block = last?.querySelector("[data-testid=reasoning]");
          const reasoning = block?.querySelector("[data-testid=reasoning-text]")?.textContent.length ?? 0;
          const content = last?.querySelector("[data-testid=message-text]")?.textContent.length ?? 0;
          const now = [reasoning, block?.open === true, content];
          const previous = frames[frames.length - 1];
          if (previous === undefined || previous.some((v, i) => v !== now[i])) frames.push(now);
          if (last !== undefined && last.getAttribute("data-state") !== "streaming") return resolve(frames);
          if (performance.now() - started > timeout) return reject(new Error(`answer still streaming after ${timeout} ms`));
          requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
      }),
    timeoutMs,
  );
}

// The text of the answer's reasoning block and of the answer, whitespace collapsed.
export async function shownAnswer(answer) {
  return answer.evaluate((el) => {
    const text = (node) => (node?.textContent ?? "").replace(/\s+/g, " ").trim();
    return { reasoning: text(el.querySelector("[data-testid=reasoning-text]")), content: text(el.querySelector("[data-testid=message-text]")) };
  });
}
