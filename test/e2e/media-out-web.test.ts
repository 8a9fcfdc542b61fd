// Kept per platform: the web chat shows files itself (the gateway serves them to the page).
/**
 * Files out end to end in the web chat: a real gateway process, the fake model server calling
 * send_file with a URL on a local page server (or an MCP tool answering with an image), and the
 * chat page in Chromium. The image appears in the page once, fetched with the session's header; a
 * reload and a gateway restart (the transcript then comes from the store) show it once again, and
 * no other session can fetch it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { launchChromium } from "../http/support/browser.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  freePort,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";
import { waitUntilSettled } from "./support/settled.ts";

const dir = tempDir("switchboard-e2e-media-out-web-");
const llm = startFakeLlmServer();
let png: Uint8Array;
let pages: ReturnType<typeof Bun.serve>;
let browser: Browser;
let gateway: GatewayProcess | null = null;

beforeAll(async () => {
  png = new Uint8Array(
    await sharp({ create: { width: 64, height: 40, channels: 3, background: { r: 220, g: 30, b: 30 } } })
      .png()
      .toBuffer(),
  );
  pages = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) =>
      new URL(request.url).pathname === "/chart.png"
        ? new Response(png as Uint8Array<ArrayBuffer>)
        : new Response("missing", { status: 404 }),
  });
  browser = await launchChromium();
}, 30_000);
afterAll(async () => {
  await browser?.close();
  await gateway?.kill("SIGTERM");
  pages?.stop(true);
  await llm.stop();
  dir.cleanup();
}, GATEWAY_STOP_TIMEOUT_MS);

// One port for every start: the page's session id lives in the origin's localStorage.
const port = freePort();
const env = (extra: Record<string, string> = {}) =>
  e2eGatewayEnv({
    dir: dir.path,
    llm,
    dbFile: "web-files.sqlite",
    surfaces: { "web:dm": { delivery: "terminal", inputPolicy: "queue" } },
    extra: {
      ...extra,
      SWITCHBOARD_WEB: "on",
      SWITCHBOARD_HTTP_PORT: String(port),
      SWITCHBOARD_FETCH_ALLOW_PRIVATE: "on",
    },
  });

/** Waits until the page shows `count` images, each decoded; returns their natural sizes. */
async function shownImages(page: Page, count: number): Promise<Array<[number, number]>> {
  await page.waitForFunction(
    (n) => {
      const images = Array.from(
        document.querySelectorAll<HTMLImageElement>(".bubble.assistant img.bubble-image"),
      );
      return images.length === n && images.every((image) => image.complete && image.naturalWidth > 0);
    },
    count,
    { timeout: 15_000 },
  );
  return page.$$eval(".bubble.assistant img.bubble-image", (images) =>
    (images as HTMLImageElement[]).map((image): [number, number] => [
      image.naturalWidth,
      image.naturalHeight,
    ]),
  );
}

async function reloadOnline(page: Page): Promise<void> {
  await page.reload();
  await page.locator('#connection[data-state="online"]').waitFor({ timeout: 15_000 });
  await page.locator(".bubble.assistant", { hasText: "Here it is." }).waitFor();
}

test("the agent sends an image: it shows once in the page, after a reload, and after a gateway restart", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "send me the chart", lastRole: "user" },
      reply: {
        kind: "tool-call",
        toolName: "send_file",
        input: { url: `http://127.0.0.1:${pages.port}/chart.png`, caption: "the **chart**" },
      },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Here it is." } },
  ]);
  gateway = await startGatewayProcess(env(), GATEWAY_START_TIMEOUT_MS);
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  page.setDefaultTimeout(15_000);
  try {
    await page.goto(`${gateway.url}/`);
    await page.locator('#connection[data-state="online"]').waitFor();
    await page.fill("#input", "send me the chart");
    await page.press("#input", "Enter");
    await page.locator(".bubble.assistant", { hasText: "Here it is." }).waitFor();
    expect(await shownImages(page, 1)).toEqual([[64, 40]]);
    // The caption is the image's message; the answer follows it.
    const bubbles = await page.$$eval(".bubble.assistant", (nodes) =>
      nodes.map((node) => [
        node.querySelector("img")?.getAttribute("alt") ?? null,
        node.querySelector(".bubble-text")?.textContent?.trim(),
      ]),
    );
    expect(bubbles).toEqual([
      ["chart.png", "the chart"],
      [null, "Here it is."],
    ]);

    // The file is its session's only, fetched with the session header the page sends.
    const sessionId = await page.evaluate(() => localStorage.getItem("switchboard.sessionId")!);
    const fileId = await page.getAttribute("img.bubble-image", "data-file-id");
    const own = await fetch(`${gateway.url}/web/api/files/${fileId}`, {
      headers: { "x-switchboard-session": sessionId },
    });
    expect(own.status).toBe(200);
    expect(own.headers.get("content-type")).toBe("image/png");
    expect(new Uint8Array(await own.arrayBuffer())).toEqual(new Uint8Array(png));
    const other = await fetch(`${gateway.url}/web/api/files/${fileId}`, {
      headers: { "x-switchboard-session": "someone-else-0123456789" },
    });
    expect(other.status).toBe(404);

    await reloadOnline(page);
    expect(await shownImages(page, 1)).toEqual([[64, 40]]);

    await gateway.kill("SIGTERM");
    gateway = await startGatewayProcess(env(), GATEWAY_START_TIMEOUT_MS);
    await reloadOnline(page);
    expect(await shownImages(page, 1)).toEqual([[64, 40]]);
    expect(await page.locator(".bubble.assistant", { hasText: "Here it is." }).count()).toBe(1);
  } finally {
    await page.close();
  }
}, 90_000);

test("an MCP tool's image is shown in the page, once", async () => {
  const plot = join(dir.path, "plot.png");
  writeFileSync(plot, png);
  const config = join(dir.path, "mcp.json");
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: { "web:dm": { delivery: "terminal", inputPolicy: "queue" } },
      mcpServers: {
        notes: {
          command: process.execPath,
          args: [join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts")],
          env: { NOTES_FILE: join(dir.path, "notes.txt"), PLOT_FILE: plot },
          approval: "never",
        },
      },
    }),
  );
  llm.setRules([
    {
      match: { lastUserContains: "draw the plot", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_plot", input: {} },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Plotted." } },
  ]);
  await gateway?.kill("SIGTERM");
  gateway = await startGatewayProcess(env({ SWITCHBOARD_CONFIG: config }), GATEWAY_START_TIMEOUT_MS);
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  page.setDefaultTimeout(15_000);
  try {
    await page.goto(`${gateway.url}/`);
    await page.locator('#connection[data-state="online"]').waitFor();
    await page.evaluate(() => localStorage.setItem("switchboard.sessionId", "mcp-plot-session-0123456789"));
    await page.reload();
    await page.locator('#connection[data-state="online"]').waitFor();
    await page.fill("#input", "draw the plot");
    await page.press("#input", "Enter");
    await page.locator(".bubble.assistant", { hasText: "Plotted." }).waitFor();
    expect(await shownImages(page, 1)).toEqual([[64, 40]]);
    await waitUntilSettled(env().SWITCHBOARD_DB!);
    expect(await shownImages(page, 1)).toEqual([[64, 40]]);
  } finally {
    await page.close();
  }
}, 60_000);
