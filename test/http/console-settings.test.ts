/**
 * A conversation's settings in the console: `GET /api/conversations/:id/settings` matches the
 * config's bindings against where the conversation's latest message came from (its run's
 * context), and the conversation's page shows the binding and what set each setting.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import type { ExplainedConversation } from "../../src/gateway/config/explain.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { conversationSettingsReader } from "../../src/gateway/settings-view.ts";
import { createOperatorService } from "../../src/operator/service.ts";
import type { RunContext } from "../../src/run-context.ts";
import { fileConfig } from "../gateway/support/config.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import { launchChromium } from "./support/browser.ts";
import { capturingLogger, testServices } from "./support/services.ts";

const TOKEN = "console-settings-token-7c2e9a";
let dir: ReturnType<typeof tempDir>;
let seed: Seed;
let server: HttpServer;
let browser: Browser;
let bound: string;
let unbound: string;

const contextIn = (chat: string, user: string): RunContext => ({
  channel: "telegram",
  account: "555000111",
  target: chat,
  surface: "group",
  where: { chat },
  delivery: "terminal",
  conversationKey: `tg:555000111:chat:${chat}`,
  principal: { id: user, name: `user ${user}` },
  origin: "user",
});

async function conversationWith(context: RunContext, key: string): Promise<string> {
  const admitted = await seed.stores.runtime.admit({
    conversation: { key },
    idempotencyKey: key,
    fingerprint: key,
    parts: [{ type: "text", text: `hello from ${key}` }],
    context,
    policy: "queue",
    coalescePending: false,
    proposedIds: { runId: `run_${key.slice(-5)}`, messageId: `msg_${key.slice(-5)}` },
    nowMs: seed.clock.now(),
  });
  return admitted.conversationId;
}

beforeAll(async () => {
  dir = tempDir("switchboard-console-settings-");
  seed = await seedDatabase(join(dir.path, "switchboard.sqlite"));
  bound = await conversationWith(contextIn("-10042", "7"), "tg:555000111:chat:-10042");
  unbound = await conversationWith(contextIn("-10043", "8"), "tg:555000111:chat:-10043");
  const file = fileConfig({
    surfaces: { "telegram:group": { requireMention: false } },
    bindings: [
      {
        match: { channel: "telegram", account: "default", chat: "-10042" },
        instructions: "You help the support team.",
        inputPolicy: "interrupt",
      },
    ],
  });
  const operator = createOperatorService({ stores: seed.stores, clock: seed.clock });
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services: testServices({
      operator,
      operatorToken: TOKEN,
      conversationSettings: conversationSettingsReader({ file, agentDir: "/srv/agent" }, operator.runs),
    }).services,
    logger: capturingLogger().logger,
  });
  browser = await launchChromium();
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  seed?.stores.close();
  dir?.cleanup();
});

const get = (path: string) =>
  fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

describe("a conversation's settings", () => {
  test("the API explains the bound and the unbound conversation; one no channel started is 404", async () => {
    const response = await get(`/api/conversations/${bound}/settings`);
    expect(response.status).toBe(200);
    const explained = (await response.json()) as ExplainedConversation;
    expect(explained.binding).toBe(0);
    expect(explained.conversation).toBe(
      "telegram, account default, group, chat -100042, user 7".replace("-100042", "-10042"),
    );
    expect(explained.settings).toMatchObject({
      inputPolicy: "interrupt",
      requireMention: false,
      instructions: "You help the support team.",
    });
    expect(explained.sources).toMatchObject({
      inputPolicy: "bindings.0",
      instructions: "bindings.0",
      requireMention: "surfaces.telegram:group",
      delivery: "default",
    });
    expect(explained.rows.find((row) => row.setting === "agentDir")?.value).toBe("/srv/agent");

    const other = (await (
      await get(`/api/conversations/${unbound}/settings`)
    ).json()) as ExplainedConversation;
    expect(other.binding).toBeNull();
    expect(other.settings.inputPolicy).toBe("queue");

    const none = await get(`/api/conversations/${seed.slack.conversationId}/settings`);
    expect(none.status).toBe(404);
    expect(((await none.json()) as { error: { message: string } }).error.message).toContain(
      "has no run a channel started",
    );
  });

  test("the conversation's page shows the binding and what set each setting", async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    page.setDefaultTimeout(8000);
    try {
      await page.goto(`${server.url}/console#/conversations/${bound}`);
      await page.fill("#token", TOKEN);
      await page.click("#login-form button[type=submit]");
      await page.locator("#settings tr[data-setting]").first().waitFor();
      expect(await page.locator("#settings [data-binding]").textContent()).toBe(
        "bindings.0 (match channel=telegram account=default chat=-10042)",
      );
      const row = async (setting: string) =>
        page.locator(`#settings tr[data-setting="${setting}"] td`).allTextContents();
      expect(await row("inputPolicy")).toEqual(["inputPolicy", "interrupt", "bindings.0"]);
      expect(await row("requireMention")).toEqual(["requireMention", "false", "surfaces.telegram:group"]);

      await page.evaluate((id) => {
        location.hash = `#/conversations/${id}`;
      }, seed.slack.conversationId);
      await page.locator("#settings p", { hasText: "has no run a channel started" }).waitFor();
    } finally {
      await page.close();
    }
  }, 20_000);
});
