/**
 * A headless Chromium driven by playwright-core: the system's `/usr/bin/chromium` when there is one,
 * otherwise the headless shell shipped inside the `@sparticuz/chromium` dev dependency, which
 * unpacks itself to `<tmpdir>/chromium` on first use (nothing is downloaded at install time).
 * SWITCHBOARD_TEST_SYSTEM_CHROMIUM names another system path to look at (`npm run check:fresh`
 * points it at a missing file to exercise the packaged one).
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";

export const SYSTEM_CHROMIUM_PATH = process.env.SWITCHBOARD_TEST_SYSTEM_CHROMIUM || "/usr/bin/chromium";
export const ARTIFACT_DIR = join(import.meta.dir, "..", "..", ".artifacts");

const ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The system Chromium when it exists, else the packaged one (unpacked on first use). */
async function chromiumExecutable(): Promise<string> {
  if (existsSync(SYSTEM_CHROMIUM_PATH)) return SYSTEM_CHROMIUM_PATH;
  const packaged = (await import("@sparticuz/chromium")).default;
  try {
    return await packaged.executablePath();
  } catch (error) {
    throw new Error(
      `No Chromium at ${SYSTEM_CHROMIUM_PATH}, and unpacking the one in @sparticuz/chromium failed ` +
        `(${(error as Error).message}). Run \`npm install\` so the dev dependency is present, or install ` +
        `Chromium at ${SYSTEM_CHROMIUM_PATH}.`,
      { cause: error },
    );
  }
}

/** Launches Chromium headless with a fresh, empty temporary profile; fails (never skips) when it cannot. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = await chromiumExecutable();
  mkdirSync(ARTIFACT_DIR, { recursive: true });
  return chromium.launch({ executablePath, headless: true, timeout: 20_000, args: ARGS });
}
