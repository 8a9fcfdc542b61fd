/** Debian's Chromium driven by playwright-core, as the machine notes say works here. */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";

export const CHROMIUM_PATH = "/usr/bin/chromium";
export const ARTIFACT_DIR = join(import.meta.dir, "..", "..", ".artifacts");

/** Fails (never skips) when Chromium is missing, saying how to install it. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(
      `Chromium is not installed at ${CHROMIUM_PATH}; the browser tests need it. Install it with ` +
        "`apt-get update && apt-get install -y chromium` (.ci/run does this before the tests).",
    );
  mkdirSync(ARTIFACT_DIR, { recursive: true });
  // playwright-core launches with a fresh, empty temporary profile (user-data-dir) every time.
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    timeout: 20_000,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
