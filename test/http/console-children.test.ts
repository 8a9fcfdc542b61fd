/**
 * The console's tree of child agents in Chromium, against the real HTTP server and operator
 * service: a run's page and its conversation's page list the children it started and theirs,
 * with link and run states, steps and timings; a child's run links back to its parent.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { createOperatorService } from "../../src/operator/service.ts";
import { openSqliteStores, type SqliteStores } from "../../src/store/sqlite/index.ts";
import { type ChildTree, seedChildTree } from "../operator/support/child-tree.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { tempDir } from "../support/runtime.ts";
import { ARTIFACT_DIR, launchChromium } from "./support/browser.ts";
import { decodePng, distinctColours } from "./support/png.ts";
import { capturingLogger, testServices } from "./support/services.ts";

const TOKEN = "console-children-token-3f9a21";
const T0 = Date.parse("2026-03-01T09:00:00Z");
let dir: ReturnType<typeof tempDir>;
let stores: SqliteStores;
let server: HttpServer;
let browser: Browser;
let tree: ChildTree;

beforeAll(async () => {
  dir = tempDir("switchboard-console-children-");
  stores = openSqliteStores(join(dir.path, "switchboard.sqlite"));
  tree = await seedChildTree(stores.runtime, T0);
  const operator = createOperatorService({ stores, clock: new FakeClock(T0 + 5000) });
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services: testServices({ operator, operatorToken: TOKEN }).services,
    logger: capturingLogger().logger,
  });
  browser = await launchChromium();
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  stores?.close();
  dir?.cleanup();
});

async function signedIn(hash: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  page.setDefaultTimeout(8000);
  await page.goto(`${server.url}/console${hash}`);
  await page.fill("#token", TOKEN);
  await page.click("#login-form button[type=submit]");
  await page.locator("#tabs").waitFor();
  return page;
}

const cells = (page: Page, handle: string) => page.locator(`tr[data-child="${handle}"] td`).allTextContents();

test("a run's page shows the tree of its children with states, steps and timings", async () => {
  const page = await signedIn(`#/runs/${tree.parentRunId}`);
  try {
    await page.locator("#child-agents tr[data-child]").first().waitFor();
    expect(
      await page
        .locator("#child-agents tr[data-child]")
        .evaluateAll((rows) =>
          rows.map((row) => [row.getAttribute("data-child"), row.getAttribute("data-level")]),
        ),
    ).toEqual([
      ["ag_done", "0"],
      ["ag_busy", "0"],
      ["ag_deep", "1"],
    ]);
    const done = await cells(page, "ag_done");
    expect(done[0]).toBe("ag_done");
    expect(done.slice(1, 5)).toEqual(["researcher", "delivered", "completed", "1"]);
    expect(done[6]).toBe("1.0 s");
    expect(done[7]).toBe("completed");
    const busy = await cells(page, "ag_busy");
    expect(busy.slice(1, 5)).toEqual(["scribe", "running", "running", "0"]);
    expect(busy[7]).toBe("—");
    const deep = await cells(page, "ag_deep");
    expect(deep[0]).toBe("└ ag_deep");
    expect(deep.slice(1, 5)).toEqual(["self", "running", "queued", "0"]);
    expect(deep[6]).toBe("—");
    // The grandchild is indented under its parent.
    const indent = (handle: string) =>
      page
        .locator(`tr[data-child="${handle}"] td.tree-handle`)
        .evaluate((cell) => Number.parseFloat(getComputedStyle(cell).paddingLeft));
    expect(await indent("ag_deep")).toBeGreaterThan(await indent("ag_busy"));
    const png = decodePng(
      await page.screenshot({ path: join(ARTIFACT_DIR, "console-child-tree.png"), fullPage: true }),
    );
    expect(distinctColours(png)).toBeGreaterThan(30);

    // A child's handle opens its run, which links back to the run that started it.
    await page.click('tr[data-child="ag_busy"] a');
    await page.locator("#run-parent").waitFor();
    expect(new URL(page.url()).hash).toBe(`#/runs/${tree.busyRunId}`);
    expect(await page.locator("#run-parent").textContent()).toBe(`${tree.parentRunId} (as ag_busy, scribe)`);
    expect(await page.locator("#child-agents tr[data-child]").count()).toBe(1);
  } finally {
    await page.close();
  }
}, 30_000);

test("a conversation's page shows the children its runs started; one without any shows none", async () => {
  const page = await signedIn(`#/conversations/${tree.conversationId}`);
  try {
    await page.locator('#child-agents tr[data-child="ag_deep"]').waitFor();
    expect(await page.locator("#child-agents tr[data-child]").count()).toBe(3);
    expect((await cells(page, "ag_done")).slice(1, 3)).toEqual(["researcher", "delivered"]);
    await page.goto(`${server.url}/console#/conversations/conv_child_done`);
    await page.locator("#messages").waitFor();
    expect(await page.locator("#child-agents").count()).toBe(0);
  } finally {
    await page.close();
  }
}, 30_000);
