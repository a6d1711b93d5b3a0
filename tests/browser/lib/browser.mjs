// Launching Debian's chromium headless through playwright-core (playwright's own browser downloads
// are not used: the machine reaches no download hosts), and page helpers the specs share.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { chromium } from "playwright-core";
import { ARTIFACTS_DIR, BASE_URL } from "./env.mjs";

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

// Without the background-networking flags chromium keeps trying to reach Google's hosts, which
// this machine refuses. playwright-core adds a fresh, empty --user-data-dir of its own to every
// launch (and removes it on close), so no state leaks between runs.
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.LLAISYS_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_ARGS,
  });
}

// A fresh context (empty localStorage) with the app loaded. Browser console errors and failed
// page errors are collected in page.problems, for specs to assert on.
export async function openApp(browser, { viewport = DESKTOP } = {}) {
  // Phone width is also a phone: touch, no hover (so the hover-only controls are always shown).
  const phone = viewport.width <= PHONE.width;
  const context = await browser.newContext({ viewport, reducedMotion: "reduce", deviceScaleFactor: 1, isMobile: phone, hasTouch: phone });
  const page = await context.newPage();
  page.problems = [];
  page.on("pageerror", (e) => page.problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/Failed to load resource/.test(m.text())) page.problems.push(`console: ${m.text()}`);
  });
  const response = await page.goto(BASE_URL);
  if (response === null || !response.ok()) {
    throw new Error(`${BASE_URL} answered ${response?.status()}: is the web UI built and served at / ?`);
  }
  await page.getByTestId("composer-input").waitFor({ timeout: 10_000 });
  return page;
}

export async function saveScreenshot(page, name) {
  await mkdir(ARTIFACTS_DIR, { recursive: true });
  const file = path.join(ARTIFACTS_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

// Runs `body(page)` on a fresh app page; on failure leaves a screenshot named after the test.
export async function withApp(browser, name, options, body) {
  const page = await openApp(browser, options);
  try {
    await body(page);
  } catch (e) {
    await saveScreenshot(page, `FAILED-${name}`).catch(() => undefined);
    throw e;
  } finally {
    await page.context().close();
  }
}
