/**
 * The console's views in Chromium against the real HTTP server and operator service: the
 * dashboard, runs and a run's detail, an outbox record's detail, search, deep links that survive
 * a reload, a list that updates live, and no sideways overflow at 390 px. Screenshots are saved
 * under test/.artifacts/ and decoded to check they show something.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { ChangeFeed } from "../../src/gateway/change-feed.ts";
import { readDashboard } from "../../src/gateway/dashboard.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { createMetrics } from "../../src/gateway/metrics.ts";
import { createOperatorService } from "../../src/operator/service.ts";
import { storeGauges } from "../../src/store/sqlite/metrics.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import { ARTIFACT_DIR, launchChromium } from "./support/browser.ts";
import { decodePng, distinctColours } from "./support/png.ts";
import { capturingLogger, testServices } from "./support/services.ts";

const TOKEN = "console-views-token-5b1d7e";
/** What an MCP server's failure looks like: one long unbroken URL, which must not widen a phone's page. */
const MCP_DETAIL =
  "connection refused: http://notes-mcp.internal.example:7010/v1/streamable-http?session=7f3c9a0e5d2b4f18a6c1e9d07b3a5f2c";
let dir: ReturnType<typeof tempDir>;
let seed: Seed;
let server: HttpServer;
let browser: Browser;
let changes: ChangeFeed;
/** The seed's queued run, given two model steps, a tool call and an answer below. */
let DETAILED_RUN: string;
/** The conversation of the one run the budgets count (its context names a channel and user). */
let BUDGET_CONVERSATION: string;

beforeAll(async () => {
  dir = tempDir("switchboard-console-views-");
  seed = await seedDatabase(join(dir.path, "switchboard.sqlite"));
  const nowMs = seed.clock.now();
  const acquired = (await seed.stores.runtime.acquireRun({
    runId: seed.queuedRunId,
    owner: "t",
    nowMs,
    leaseMs: 60_000,
  }))!;
  DETAILED_RUN = acquired.run.id;
  const call = {
    type: "tool-call",
    toolCallId: "call-7",
    toolName: "notes_search",
    input: { q: "retro" },
  } as const;
  const result = {
    type: "tool-result",
    toolCallId: "call-7",
    toolName: "notes_search",
    output: "2 notes",
    isError: false,
    finishedAtMs: nowMs + 400,
  } as const;
  await seed.stores.runtime.checkpoint({
    fence: acquired.fence,
    assistantParts: [{ ...call, startedAtMs: nowMs + 100, attempts: 1 }, result],
    step: {
      step: 0,
      model: "openrouter:acme/fast-1",
      finishReason: "tool-calls",
      usage: { inputTokens: 1200, outputTokens: 40, costUsd: 0.0021 },
      startedAtMs: nowMs,
      finishedAtMs: nowMs + 900,
    },
    joinedInputIds: [],
    nowMs,
  });
  await seed.stores.runtime.commitTerminal({
    fence: acquired.fence,
    state: "completed",
    assistantParts: [
      { ...call, startedAtMs: nowMs + 100, attempts: 1 },
      result,
      {
        type: "text",
        text: "Two notes mention the **retro**: https://notes.example.com/teams/platform/retrospectives/2026-02-27-quarterly-retro-action-items-and-follow-ups",
      },
    ],
    nowMs: nowMs + 1500,
  });
  // A chat command in the Telegram conversation: no message, but part of the exchange.
  await seed.stores.runtime.claimIngress({
    source: "telegram:bot-1",
    key: "update-help",
    outcome: "command:help",
    payload: { text: "/help", channel: "telegram" },
    conversationId: seed.telegram.conversationId,
    nowMs: nowMs + 2000,
  });
  const operator = createOperatorService({
    stores: seed.stores,
    clock: seed.clock,
    budgets: {
      budgets: {
        perUser: { tokensPerDay: 5000, costPerMonthUsd: 2 },
        perSurface: { "*:*": { tokensPerMonth: 1_000_000 } },
      },
      timezone: "UTC",
    },
  });
  const metrics = createMetrics();
  for (const ms of [1.5, 2.5, 4, 40]) metrics.replyStage("send", ms);
  metrics.stepLatency(900);
  changes = new ChangeFeed();
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services: testServices({
      operator,
      operatorToken: TOKEN,
      changes,
      readiness: async () => ({
        ready: true,
        checks: {
          database: { ok: true },
          "channel:telegram": { ok: true },
          "mcp:notes": { ok: false, degraded: true, detail: MCP_DETAIL },
        },
      }),
      dashboard: () =>
        readDashboard({
          nowMs: () => seed.clock.now(),
          gauges: async () => storeGauges(seed.stores.db),
          latency: () => metrics.latency(),
          readiness: async () => ({
            checks: {
              database: { ok: true },
              "channel:telegram": { ok: true },
              "mcp:notes": { ok: false, degraded: true, detail: MCP_DETAIL },
            },
          }),
          stepUsageSince: (sinceMs) => seed.stores.operator.stepUsageSince(sinceMs),
        }),
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

/**
 * A user's run with usage, counted by the budgets (a run counts when its context names a channel
 * and user); made by the budgets test, so the other views' counts stay the seed's.
 */
async function spendInBudgetConversation(): Promise<void> {
  const nowMs = seed.clock.now();
  const spent = await seed.stores.runtime.admit({
    conversation: { key: "telegram:dm:budget-4242" },
    idempotencyKey: "budget-run-1",
    fingerprint: "budget-run-1",
    parts: [{ type: "text", text: "a costly question" }],
    context: { channel: "telegram", surface: "dm", principal: { id: "4242" } },
    policy: "queue",
    coalescePending: false,
    proposedIds: { runId: "run_budget1", messageId: "msg_budget1" },
    nowMs,
  });
  BUDGET_CONVERSATION = spent.conversationId;
  const spending = (await seed.stores.runtime.acquireRun({
    runId: spent.runId,
    owner: "t",
    nowMs,
    leaseMs: 60_000,
  }))!;
  await seed.stores.runtime.checkpoint({
    fence: spending.fence,
    assistantParts: [{ type: "text", text: "An answer that cost something." }],
    step: {
      step: 0,
      model: "openrouter:acme/fast-1",
      finishReason: "stop",
      usage: { inputTokens: 1400, outputTokens: 100, costUsd: 0.003 },
      startedAtMs: nowMs,
      finishedAtMs: nowMs + 500,
    },
    joinedInputIds: [],
    nowMs,
  });
  await seed.stores.runtime.commitTerminal({
    fence: spending.fence,
    state: "completed",
    assistantParts: [{ type: "text", text: "An answer that cost something." }],
    nowMs: nowMs + 600,
  });
}

async function signedIn(hash = "", viewport = { width: 1200, height: 800 }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(8000);
  await page.goto(`${server.url}/console${hash}`);
  await page.fill("#token", TOKEN);
  await page.click("#login-form button[type=submit]");
  await page.locator("#tabs").waitFor();
  return page;
}

/** Saves a screenshot and checks it is a rendered page, not a blank one. */
async function screenshot(page: Page, name: string): Promise<void> {
  const png = decodePng(await page.screenshot({ path: join(ARTIFACT_DIR, `${name}.png`), fullPage: true }));
  expect(distinctColours(png)).toBeGreaterThan(30);
}

describe("console views", () => {
  test("dashboard: work in flight, stuck replies with a nav badge, latency, today's usage, checks", async () => {
    const page = await signedIn();
    try {
      await page.locator("#tile-ambiguous").waitFor();
      expect(page.url()).toEndWith("/console");
      const tile = async (id: string) =>
        (await page.locator(`#tile-${id} .tile-value`).textContent())?.trim();
      expect(await tile("ambiguous")).toBe("1");
      expect(await tile("failed")).toBe("1");
      expect(await tile("waiting")).toBe("1");
      expect(await page.locator("#tile-ambiguous").getAttribute("class")).toContain("alert");
      expect(await page.locator('#tabs button[data-tab="outbox"] .nav-badge').textContent()).toBe("2");
      const send = page.locator('tr[data-latency="send"] td');
      expect(await send.nth(1).textContent()).toMatch(/ms$/);
      expect(await send.nth(3).textContent()).toBe("4");
      expect(await page.locator('tr[data-latency="model step"] td').nth(3).textContent()).toBe("1");
      expect(await page.locator("#usage-today").textContent()).toContain(
        "1 model steps in 1 runs · 1,200 in / 40 out tokens · cost $0.0021",
      );
      expect(await page.locator('tr[data-check="mcp:notes"] .badge').textContent()).toBe("degraded");
      expect(await page.locator('tr[data-check="mcp:notes"]').textContent()).toContain("connection refused");
      await screenshot(page, "console-dashboard");
      // A tile is a link to the list behind it.
      await page.click("#tile-ambiguous");
      await page.locator(`tr[data-id="${seed.ambiguous.outboxId}"]`).waitFor();
      expect(new URL(page.url()).hash).toBe("#/outbox?state=ambiguous");
    } finally {
      await page.close();
    }
  }, 30_000);

  test("runs: state, surface, model, duration, tokens, cost; filters; the detail with steps, tool calls and answer", async () => {
    const page = await signedIn("#/runs");
    try {
      const row = page.locator(`tr[data-id="${DETAILED_RUN}"]`);
      await row.waitFor();
      const cells = await row.locator("td").allTextContents();
      expect(cells[1]).toBe("completed");
      expect(cells[3]).toBe("openrouter:acme/fast-1");
      expect(cells[4]).toBe("1.5 s");
      expect(cells[5]).toBe("1,200 in / 40 out");
      expect(cells[6]).toBe("$0.0021");
      expect(await page.locator("tbody tr").count()).toBe(5);
      await page.selectOption("#runs-state", "failed");
      await page.locator("#view p.muted", { hasText: "No runs match." }).waitFor();
      expect(new URL(page.url()).hash).toBe("#/runs?state=failed");
      await page.selectOption("#runs-state", "completed");
      await page.fill("#runs-conversation", seed.slack.conversationId);
      await page.press("#runs-conversation", "Enter");
      await page.waitForFunction(() => document.querySelectorAll("tbody tr").length === 2);
      expect(new URL(page.url()).hash).toBe(
        `#/runs?state=completed&conversation=${seed.slack.conversationId}`,
      );
      expect(await page.locator('tbody .badge[data-state="completed"]').count()).toBe(2);
      await page.goto(`${server.url}/console#/runs`);

      await row.click();
      await page.locator("#run-answer strong", { hasText: "retro" }).waitFor();
      expect(new URL(page.url()).hash).toBe(`#/runs/${DETAILED_RUN}`);
      const step = await page.locator('tr[data-step="0"] td').allTextContents();
      expect(step).toEqual([
        "0",
        "openrouter:acme/fast-1",
        "tool-calls",
        "900 ms",
        "1,200 in / 40 out",
        "$0.0021",
      ]);
      const toolCall = await page.locator('tr[data-tool-call="call-7"] td').allTextContents();
      expect(toolCall.slice(0, 2)).toEqual(["notes_search", "ok"]);
      expect(toolCall[3]).toBe("300 ms");
      await screenshot(page, "console-run-detail");
      await page.click("#run-conversation");
      await page.locator("#messages .bubble", { hasText: "Two notes mention" }).waitFor();
      // Newest first: the command (received last) heads the list, then the answer.
      const first = page.locator("#messages article").first();
      expect(await first.getAttribute("data-command")).toBe("help");
      expect(await first.textContent()).toContain("/help");
      expect(await page.locator("#messages article").nth(1).textContent()).toContain("Two notes mention");
    } finally {
      await page.close();
    }
  }, 30_000);

  test("outbox detail: full text, target, history with who and note, and jumps to its conversation and run", async () => {
    const id = seed.failed.outboxId!;
    const page = await signedIn("#/outbox");
    try {
      await page.click(`tr[data-id="${id}"] a.detail-link`);
      await page.locator("#outbox-text", { hasText: "Deploy notes: all green." }).waitFor();
      expect(await page.locator("#outbox-target").textContent()).toBe("slack · bot-1 · C9");
      const history = await page.locator("tr.history").allTextContents();
      expect(history.some((line) => line.includes("system") && line.includes("failed"))).toBe(true);
      // An action from here lands in the history with the operator and the note.
      await page.click('#record-actions button[data-action="retry"]');
      await page.fill("#note-input", "Slack channel was archived; unarchived it.");
      await page.click("#note-ok");
      await page.locator("tr.history", { hasText: "Slack channel was archived; unarchived it." }).waitFor();
      expect(await page.locator("tr.history").last().textContent()).toContain("operator:console");
      await screenshot(page, "console-outbox-detail");
      await page.click("#outbox-run");
      await page.locator(`h2 .mono`, { hasText: seed.failed.runId }).waitFor();
      await page.goBack();
      await page.click("#outbox-conversation");
      await page.locator("#messages .bubble", { hasText: "Post the deploy notes" }).waitFor();
    } finally {
      await page.close();
    }
  }, 30_000);

  test("search: words find messages, a user finds their conversation (however old), an id opens its record", async () => {
    const page = await signedIn("#/search");
    try {
      await page.fill("#search-q", "standup");
      await page.click("#search-form button[type=submit]");
      await page.locator("tr.hit mark", { hasText: "standup" }).waitFor();
      expect(new URL(page.url()).hash).toBe("#/search?q=standup");
      // The state of the message's run: completed keeps it, failed leaves none.
      await page.selectOption("#search-state", "completed");
      await page.locator("tr.hit mark", { hasText: "standup" }).waitFor();
      expect(new URL(page.url()).hash).toBe("#/search?q=standup&state=completed");
      await page.selectOption("#search-state", "failed");
      await page.locator("h3", { hasText: "Messages (0)" }).waitFor();
      await page.selectOption("#search-state", "");
      await page.locator("tr.hit mark", { hasText: "standup" }).waitFor();
      // A date range that excludes the seeded day hides it.
      await page.fill("#search-to", "2026-02-01");
      await page.press("#search-to", "Enter");
      await page.locator("h3", { hasText: "Messages (0)" }).waitFor();
      await page.goto(`${server.url}/console#/search?q=C9`);
      await page.locator(`tr[data-id="${seed.slack.conversationId}"]`).waitFor();
      await screenshot(page, "console-search");
      // A user who wrote a day before everyone else, behind 600 more recently active chats: the
      // server searches every conversation, by the user's name or id.
      const old = await seed.stores.runtime.admit({
        conversation: { key: "tg:bot-1:dm:77123" },
        idempotencyKey: "old-user-1",
        fingerprint: "fp-old-user-1",
        parts: [{ type: "text", text: "hello from long ago" }],
        context: {
          channel: "telegram",
          account: "bot-1",
          target: "77123",
          surface: "dm",
          delivery: "terminal",
          conversationKey: "tg:bot-1:dm:77123",
          principal: { id: "77123", name: "Hannelore Quist" },
          origin: "user",
        },
        policy: "queue",
        coalescePending: false,
        proposedIds: { runId: "run_olduser1", messageId: "msg_olduser1" },
        nowMs: seed.clock.now() - 86_400_000,
      });
      // Its turn ended (stopped while queued), so its message is searchable too.
      await seed.stores.runtime.requestStop(old.runId, "interrupted", seed.clock.now() - 86_000_000);
      for (let i = 0; i < 600; i += 1) {
        await seed.clock.advance(1);
        await seed.stores.runtime.admit({
          conversation: { key: `web:filler-${i}` },
          idempotencyKey: `filler-${i}`,
          fingerprint: `fp-filler-${i}`,
          parts: [{ type: "text", text: `filler ${i}` }],
          context: null,
          policy: "queue",
          coalescePending: false,
          proposedIds: { runId: `run_filler${i}`, messageId: `msg_filler${i}` },
          nowMs: seed.clock.now(),
        });
      }
      await page.fill("#search-q", "hannelore q");
      await page.click("#search-form button[type=submit]");
      await page.locator(`tr[data-id="${old.conversationId}"]`, { hasText: "Hannelore Quist" }).waitFor();
      await page.locator("h3", { hasText: "Conversations with a matching user (1)" }).waitFor();
      await page.fill("#search-q", "77123");
      await page.click("#search-form button[type=submit]");
      await page.locator(`tr[data-id="${old.conversationId}"]`).waitFor();
      // The channel filter on messages goes by each hit's run, however old its conversation.
      await page.goto(`${server.url}/console#/search?q=long%20ago&channel=telegram`);
      await page.locator("tr.hit mark", { hasText: "long" }).waitFor();
      await page.selectOption("#search-channel", "slack");
      await page.locator("h3", { hasText: "Messages (0)" }).waitFor();
      await page.selectOption("#search-channel", "");
      // 600 keys match: the 100 most recently active are shown, and the page says there are more.
      await page.fill("#search-q", "web:filler-");
      await page.click("#search-form button[type=submit]");
      await page.locator("#search-more-people").waitFor();
      expect(await page.locator("tr[data-id]").count()).toBe(100);
      await page.locator("tr[data-id] td:nth-child(3)", { hasText: "web:filler-599" }).waitFor();
      await page.fill("#search-q", seed.delivered.runId);
      await page.click("#search-form button[type=submit]");
      await page.waitForFunction((id) => location.hash === `#/runs/${id}`, seed.delivered.runId);
      await page.locator("#run-answer strong", { hasText: "the summary" }).waitFor();
    } finally {
      await page.close();
    }
  }, 60_000);

  test("budgets: limits in force, usage per user with their budget and per conversation, and a conversation's own usage", async () => {
    await spendInBudgetConversation();
    const page = await signedIn("#/budgets");
    try {
      const cells = (selector: string) => page.locator(`${selector} td`).allTextContents();
      await page.locator('tr[data-user="telegram:4242"][data-period="day"]').waitFor();
      expect(await page.locator("#budget-periods").textContent()).toContain("Days and months in UTC");
      const surface = await cells('tr[data-scope="surface:*:*"][data-field="tokensPerMonth"]');
      expect(surface.slice(1, 4)).toEqual(["1,000,000 tokens a month", "1,500", "998,500 left"]);
      expect(surface[4]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
      expect(surface[5]).toBe("ok");
      const today = await cells('tr[data-user="telegram:4242"][data-period="day"]');
      expect(today.slice(1)).toEqual([
        "today",
        "1",
        "1,500",
        "$0.0030",
        "5,000 tokens a day · 3,500 left",
        expect.stringMatching(/^\d{4}-\d\d-\d\d 00:00:00$|^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
      ]);
      const month = await cells('tr[data-user="telegram:4242"][data-period="month"]');
      expect(month.slice(1, 6)).toEqual([
        "this month",
        "1",
        "1,500",
        "$0.0030",
        "$2.00 a month · $2.00 left",
      ]);
      expect(month[6]).not.toBe(today[6]);
      const conversation = page.locator(`tr[data-conversation="${BUDGET_CONVERSATION}"][data-period="day"]`);
      expect((await conversation.locator("td").allTextContents()).slice(1, 5)).toEqual([
        "today",
        "1",
        "1,500",
        "$0.0030",
      ]);
      expect(await page.locator('#tabs button[data-tab="budgets"]').getAttribute("class")).toContain(
        "active",
      );
      await screenshot(page, "console-budgets");

      await conversation.locator("a").click();
      await page.locator("#messages .bubble", { hasText: "An answer that cost something." }).waitFor();
      expect(new URL(page.url()).hash).toBe(`#/conversations/${BUDGET_CONVERSATION}`);
      const usage = await page.locator("#conversation-usage").textContent();
      expect(usage).toContain("today 1,500 tokens, $0.0030 in 1 runs");
      expect(usage).toContain("this month 1,500 tokens, $0.0030 in 1 runs");
      // A conversation the budgets never counted shows zero, not nothing.
      await page.goto(`${server.url}/console#/conversations/${seed.slack.conversationId}`);
      await page.locator("#conversation-usage", { hasText: "today 0 tokens, $0.0000 in 0 runs" }).waitFor();
    } finally {
      await page.close();
    }
  }, 30_000);

  test("a deep link opens its view and filters, and a reload keeps them", async () => {
    const page = await signedIn(`#/outbox?state=delivered&conversation=${seed.telegram.conversationId}`);
    try {
      const check = async () => {
        await page.locator(`tr[data-id="${seed.delivered.outboxId}"]`).waitFor();
        expect(await page.locator("#outbox-filter").inputValue()).toBe("delivered");
        expect(await page.locator("#outbox-conversation").inputValue()).toBe(seed.telegram.conversationId);
        expect(await page.locator("tbody tr").count()).toBe(1);
        expect(await page.locator('#tabs button[data-tab="outbox"]').getAttribute("class")).toContain(
          "active",
        );
      };
      await check();
      await page.reload();
      await check();
      await page.goto(`${server.url}/console#/runs/${DETAILED_RUN}`);
      await page.reload();
      await page.locator("#run-answer strong", { hasText: "retro" }).waitFor();
    } finally {
      await page.close();
    }
  }, 30_000);

  test("a list updates live: a new reply appears without a reload", async () => {
    const page = await signedIn("#/outbox?state=pending");
    try {
      await page.locator(`tr[data-id="${seed.pending.outboxId}"]`).waitFor();
      await page.locator('#live-status[data-state="live"]').waitFor();
      // A new run answers; the gateway publishes the change as its runtime event arrives.
      const nowMs = seed.clock.now();
      const admitted = await seed.stores.runtime.admit({
        conversation: { key: seed.slack.key },
        idempotencyKey: "live-1",
        fingerprint: "live-1",
        parts: [{ type: "text", text: "live?" }],
        context: null,
        policy: "queue",
        coalescePending: false,
        proposedIds: { runId: "run_live1", messageId: "msg_live1" },
        nowMs,
      });
      const acquired = (await seed.stores.runtime.acquireRun({
        runId: admitted.runId,
        owner: "t",
        nowMs,
        leaseMs: 60_000,
      }))!;
      await seed.stores.runtime.commitTerminal({
        fence: acquired.fence,
        state: "completed",
        assistantParts: [{ type: "text", text: "Live and well." }],
        delivery: {
          runId: admitted.runId,
          conversationId: admitted.conversationId,
          channel: "slack",
          account: "bot-1",
          target: "C9",
          state: "completed",
          text: "Live and well.",
        },
        nowMs,
      });
      const before = await page.evaluate(() => performance.getEntriesByType("navigation").length);
      changes.publish({
        kind: "run",
        runId: admitted.runId,
        conversationId: admitted.conversationId,
        state: "completed",
      });
      await page.locator("tbody tr td.text", { hasText: "Live and well." }).waitFor();
      expect(await page.evaluate(() => performance.getEntriesByType("navigation").length)).toBe(before);
      expect(new URL(page.url()).hash).toBe("#/outbox?state=pending");
      await screenshot(page, "console-live-update");
    } finally {
      await page.close();
    }
  }, 30_000);

  test("on a 390 px phone no view overflows sideways and no table cell is cut off, long URLs included", async () => {
    const page = await signedIn("", { width: 390, height: 844 });
    try {
      const views = [
        "#/dashboard",
        "#/runs",
        `#/runs/${DETAILED_RUN}`,
        "#/conversations",
        `#/conversations/${seed.telegram.conversationId}`,
        "#/outbox",
        `#/outbox/${seed.ambiguous.outboxId}`,
        "#/approvals",
        "#/schedules",
        "#/budgets",
        "#/search?q=standup",
      ];
      for (const hash of views) {
        await page.evaluate((h) => {
          location.hash = h;
        }, hash);
        await page.locator("#view h2").first().waitFor();
        await page.waitForFunction(
          () => !document.querySelector("#view p.muted")?.textContent?.startsWith("Loading"),
        );
        const widths = await page.evaluate(() => ({
          page: document.documentElement.scrollWidth,
          viewport: window.innerWidth,
          // A table row is a card here: every cell ends inside the screen, none is hidden in a scroller.
          cellsPastTheEdge: Array.from(document.querySelectorAll("#view td"))
            .filter((cell) => cell.getBoundingClientRect().right > window.innerWidth)
            .map((cell) => cell.textContent?.slice(0, 40)),
        }));
        expect({ hash, ...widths }).toEqual({ hash, page: 390, viewport: 390, cellsPastTheEdge: [] });
        if (hash === "#/dashboard") await screenshot(page, "console-390-dashboard");
      }
      await screenshot(page, "console-390-views");
    } finally {
      await page.close();
    }
  }, 40_000);
});
