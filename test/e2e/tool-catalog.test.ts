/**
 * Large tool catalogs and large outputs, end to end: a real gateway process with a 200-tool stdio
 * MCP server (test/fixtures/mcp/catalog-server.ts, official SDK), grammY against the Telegram
 * emulator, the model behind the fake LLM server, web_search against a fake SearXNG. Also:
 * per-surface tool sets, an MCP server that crashes mid-call, and `runs show` listing the calls.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { groupChat, privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { bigOutputLine } from "../fixtures/mcp/catalog-server.ts";
import { startFakeSearxng } from "../fixtures/search/fake-search.ts";
import type { FakeLlmRequest } from "../support/llm/fake-llm-rules.ts";
import { messageText } from "../support/llm/fake-llm-rules.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";

const CATALOG_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "catalog-server.ts");
const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const fixture = useE2eFixture("switchboard-e2e-catalog-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const searxng = startFakeSearxng();
const alice = user(1001, "Alice");
const bob = user(1002, "Bob");
const team = groupChat(-7001, "Team");
const dbEnv = { SWITCHBOARD_DB: join(dir.path, "gateway.sqlite") };
const OPERATOR_TOKEN = "operator-token-0123456789";
let gateway: GatewayProcess | null = null;

afterAll(async () => {
  await searxng.stop();
});

function env(): Record<string, string> {
  const config = join(dir.path, "switchboard.json");
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: {
        "telegram:dm": { delivery: "terminal", inputPolicy: "queue" },
        "telegram:group": { delivery: "terminal", requireMention: false, tools: ["web"] },
      },
      mcpServers: {
        catalog: { command: process.execPath, args: [CATALOG_SERVER], approval: "never" },
        notes: {
          command: process.execPath,
          args: [STDIO_SERVER],
          env: { NOTES_FILE: join(dir.path, "notes.txt") },
          approval: "never",
        },
      },
      toolCatalog: { pinned: ["catalog_big_output", "notes_crash", "notes_append_note"] },
    }),
  );
  return {
    ...telegramGatewayEnv(fixture, { allowed: [alice.id, bob.id] }),
    SWITCHBOARD_CONFIG: config,
    SWITCHBOARD_SEARXNG_URL: searxng.url,
    SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
  };
}

const start = () => fixture.startGateway(env(), GATEWAY_START_TIMEOUT_MS);

beforeAll(async () => {
  gateway = await start();
}, GATEWAY_START_TIMEOUT_MS + 5000);

/** The model requests of one conversation turn, by a phrase of its user message. */
const requestsFor = (phrase: string): FakeLlmRequest[] =>
  llm.requests().filter((r) => r.lastUserText.includes(phrase));
const lastToolText = (request: FakeLlmRequest) =>
  messageText(request.messages.findLast((m) => m.role === "tool") ?? { role: "tool" });
const answerTo = (chatId: number, marker: string) =>
  telegram.waitForMessage(chatId, (m) => m.fromBot && m.visibleText.includes(marker), 30_000);

test("a 200-tool catalog: the model gets tool_search and the pinned tools, then the tool it selected", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "open a ticket", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "tool_search", input: { query: "create tickets" } },
    },
    {
      match: { lastUserContains: "open a ticket", lastRole: "tool" },
      times: 1,
      reply: { kind: "tool-call", toolName: "catalog_tickets_create", input: { title: "Printer jam" } },
    },
    {
      match: { lastUserContains: "open a ticket", lastRole: "tool" },
      reply: { kind: "text", text: "Ticket: {{lastToolResult}}" },
    },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please open a ticket" });
  const answer = await answerTo(alice.id, "Ticket:");
  expect(answer.visibleText).toContain('tickets_create done: {"title":"Printer jam"}');

  const [first, second, third] = requestsFor("open a ticket");
  expect(first!.toolNames.sort()).toEqual(
    [
      "catalog_big_output",
      "goal_get",
      "goal_set",
      "history_read",
      "history_search",
      "notes_append_note",
      "notes_crash",
      "todo_write",
      "schedule_after",
      "schedule_at",
      "schedule_cancel",
      "schedule_every",
      "schedule_list",
      "send_file",
      "tool_search",
      "web_fetch",
      "web_search",
    ].sort(),
  );
  expect(second!.toolNames).toContain("catalog_tickets_create");
  expect(second!.toolNames.filter((n) => n.startsWith("catalog_")).length).toBeLessThanOrEqual(9);
  expect(lastToolText(second!)).toContain("catalog_tickets_create");
  expect(third!.toolNames).toContain("catalog_tickets_create");
  // The deferred prompt is a fraction of what 200 schemas would weigh.
  expect(JSON.stringify(first!.body.tools).length).toBeLessThan(24 * 1024);
}, 60_000);

test("a deferred tool called without a search fails with a hint to search for it", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "list my orders", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "catalog_orders_list", input: {} },
    },
    {
      match: { lastUserContains: "list my orders", lastRole: "tool" },
      reply: { kind: "text", text: "Said: {{lastToolResult}}" },
    },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "list my orders" });
  const answer = await answerTo(alice.id, "Said:");
  expect(answer.visibleText).toContain("catalog_orders_list is not offered yet: call tool_search first");
}, 60_000);

test("runs show lists the run's tool calls with outcome and timing (CLI, over the database)", async () => {
  const runs = await runCliJson<Array<{ id: string; conversationId: string }>>(["runs", "list"], dbEnv);
  let found: { toolCalls: Array<Record<string, unknown>> } | null = null;
  for (const run of runs) {
    const shown = await runCliJson<{ toolCalls: Array<Record<string, unknown>> }>(
      ["runs", "show", run.id],
      dbEnv,
    );
    if (shown.toolCalls.some((c) => c.toolName === "catalog_tickets_create")) {
      found = shown;
      const human = await runCli(["runs", "show", run.id], dbEnv);
      expect(human.stdout).toContain("Tool calls:");
      expect(human.stdout).toMatch(/catalog_tickets_create\s+ok\s+\S+\s+\d+ ms\s+1/);
      const api = await fetch(`${gateway!.url}/api/runs/${run.id}`, {
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
      });
      expect(api.status).toBe(200);
      expect(((await api.json()) as { toolCalls: unknown }).toolCalls).toEqual(shown.toolCalls);
      break;
    }
  }
  expect(found?.toolCalls.map((c) => [c.toolName, c.outcome, c.attempts])).toEqual([
    ["tool_search", "ok", 1],
    ["catalog_tickets_create", "ok", 1],
  ]);
  for (const call of found!.toolCalls) {
    expect(call.durationMs as number).toBeGreaterThanOrEqual(0);
    expect(call.finishedAtMs as number).toBeGreaterThanOrEqual(call.startedAtMs as number);
  }
}, 60_000);

test("a 1 MB tool output: the model gets its head and a reference; read_output pages it; another conversation cannot", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "big report", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "catalog_big_output", input: { kb: 1024 } },
    },
    {
      match: { lastUserContains: "big report", lastRole: "tool" },
      times: 1,
      reply: {
        kind: "tool-call",
        toolName: "read_output",
        input: { ref: "{{lastToolRef}}", offset: 640_000, length: 128 },
      },
    },
    {
      match: { lastUserContains: "big report", lastRole: "tool" },
      reply: { kind: "text", text: "Page: {{lastToolResult}}" },
    },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "the big report please" });
  await answerTo(alice.id, "Page:");
  const [first, second, third] = requestsFor("big report");
  // read_output is offered once there is a cut output to read, not before.
  expect(first!.toolNames).not.toContain("read_output");
  expect(second!.toolNames).toContain("read_output");
  const head = lastToolText(second!);
  expect(Buffer.byteLength(head)).toBeLessThan(16 * 1024);
  expect(head.startsWith(bigOutputLine(1) + bigOutputLine(2))).toBe(true);
  expect(head).toContain(`characters 0-4000 of ${1024 * 1024} (${1024 * 1024} bytes)`);
  const ref = head.match(/out_[A-Za-z0-9_-]+/)?.[0];
  expect(ref).toBeDefined();
  // Lines are 64 characters: offset 640,000 is the start of line 10,001.
  const page = lastToolText(third!);
  expect(page.startsWith(bigOutputLine(10_001) + bigOutputLine(10_002))).toBe(true);
  expect(page).toContain(`characters 640000-640128 of ${1024 * 1024}`);
  expect(page).toContain(`next: {"ref": "${ref}", "offset": 640128}`);
  const db = new Database(dbEnv.SWITCHBOARD_DB, { readonly: true });
  try {
    const row = db.query("SELECT length(text) AS chars, tool_name FROM tool_outputs WHERE ref = ?").get(ref!);
    expect(row).toEqual({ chars: 1024 * 1024, tool_name: "catalog_big_output" });
  } finally {
    db.close();
  }

  // Another conversation, with a cut output of its own (so it is offered read_output), asks for
  // this one's reference.
  llm.setRules([
    {
      match: { lastUserContains: "peek", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "catalog_big_output", input: { kb: 32 } },
    },
    {
      match: { lastUserContains: "peek", lastRole: "tool" },
      times: 1,
      reply: { kind: "tool-call", toolName: "read_output", input: { ref } },
    },
    {
      match: { lastUserContains: "peek", lastRole: "tool" },
      reply: { kind: "text", text: "Peek: {{lastToolResult}}" },
    },
  ]);
  telegram.incoming({ chat: privateChat(bob), from: bob, text: "peek at it" });
  const peek = await answerTo(bob.id, "Peek:");
  expect(requestsFor("peek")[1]!.toolNames).toContain("read_output");
  expect(peek.visibleText).toContain(`no stored output "${ref}" in this conversation`);
  expect(peek.visibleText).not.toContain("line 0");
}, 60_000);

test("a surface that picks only the web tool set is offered exactly those", async () => {
  llm.setRules([
    { match: { lastUserContains: "group question" }, reply: { kind: "text", text: "Group answer" } },
  ]);
  telegram.incoming({ chat: team, from: alice, text: "a group question" });
  await answerTo(team.id, "Group answer");
  expect(requestsFor("group question")[0]!.toolNames.sort()).toEqual(["web_fetch", "web_search"]);
}, 60_000);

test("web_search asks the configured SearXNG and the model gets title, url and snippet", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "search the web", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "web_search", input: { query: "bun runtime" } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Found: {{lastToolResult}}" } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "search the web for bun" });
  const answer = await answerTo(alice.id, "Found:");
  expect(answer.visibleText).toContain("https://bun.sh/docs");
  expect(answer.visibleText).toContain("Bun is a fast JavaScript runtime.");
  expect(searxng.requests.at(-1)?.query).toEqual({ q: "bun runtime", format: "json" });
}, 60_000);

test("an MCP server that crashes mid-call: that call fails, the server is started again and the next call works", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "crash the notes", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_crash", input: {} },
    },
    {
      match: { lastUserContains: "note milk", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_append_note", input: { text: "milk" } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Tool said: {{lastToolResult}}" } },
  ]);
  telegram.incoming({ chat: privateChat(bob), from: bob, text: "crash the notes" });
  const failed = await answerTo(bob.id, "Tool said:");
  expect(failed.visibleText).toMatch(/closed|exited|not available/i);
  await eventually(
    async () => {
      const body = (await (await fetch(`${gateway!.url}/readyz`)).json()) as {
        checks: Record<string, { ok: boolean }>;
      };
      return body.checks["mcp:notes"]?.ok === true;
    },
    20_000,
    "the notes server to be up again",
  );
  telegram.incoming({ chat: privateChat(bob), from: bob, text: "note milk" });
  const ok = await telegram.waitForMessage(
    bob.id,
    (m) => m.fromBot && m.visibleText.includes('appended "milk"'),
    30_000,
  );
  expect(ok.visibleText).toContain("Tool said:");
}, 90_000);

test("SIGKILL after tool_search: the restarted gateway restores the selection from the run's history", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "ship the release", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "tool_search", input: { query: "create deployments" } },
    },
    { match: { lastUserContains: "ship the release", lastRole: "tool" }, reply: { kind: "hang" } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "ship the release" });
  await eventually(() => requestsFor("ship the release").length >= 2, 30_000, "the step after tool_search");
  expect(requestsFor("ship the release")[1]!.toolNames).toContain("catalog_deployments_create");
  await gateway!.kill("SIGKILL");
  llm.setRules([
    {
      match: { lastUserContains: "ship the release", lastRole: "tool" },
      times: 1,
      reply: { kind: "tool-call", toolName: "catalog_deployments_create", input: { title: "v2" } },
    },
    {
      match: { lastUserContains: "ship the release", lastRole: "tool" },
      reply: { kind: "text", text: "Shipped: {{lastToolResult}}" },
    },
  ]);
  gateway = await start();
  const answer = await answerTo(alice.id, "Shipped:");
  expect(answer.visibleText).toContain('deployments_create done: {"title":"v2"}');
  const afterRestart = requestsFor("ship the release").slice(2);
  expect(afterRestart[0]!.toolNames).toContain("catalog_deployments_create");
  // The search ran once: the selection came back from the history, not from a second search.
  const turn = afterRestart.at(-1)!.messages;
  const searches = turn
    .slice(turn.findLastIndex((m) => m.role === "user"))
    .flatMap((m) => m.tool_calls ?? [])
    .filter((c) => c.function.name === "tool_search");
  expect(searches).toHaveLength(1);
}, 120_000);
