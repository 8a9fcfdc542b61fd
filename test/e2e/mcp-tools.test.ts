/**
 * MCP servers as agent tools, end to end: a real gateway process with a stdio MCP server from
 * test/fixtures/mcp, grammY against the Telegram emulator, the model behind the fake LLM server.
 */
import { beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";

const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const fixture = useE2eFixture("switchboard-e2e-mcp-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const notes = join(dir.path, "notes.txt");
const pids = join(dir.path, "pids.txt");
const alice = user(1001, "Alice");
let gateway: GatewayProcess | null = null;

const server = (extra: Record<string, unknown> = {}) => ({
  command: process.execPath,
  args: [STDIO_SERVER],
  env: { NOTES_FILE: notes, PID_FILE: pids },
  approval: "never",
  ...extra,
});

beforeAll(async () => {
  const config = join(dir.path, "switchboard.json");
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: { "telegram:dm": { delivery: "terminal" } },
      mcpServers: {
        notes: server({ timeoutMs: 1000 }),
        broken: server({ env: { MCP_FAIL_START: "1" } }),
      },
    }),
  );
  gateway = await fixture.startGateway(
    { ...telegramGatewayEnv(fixture, { allowed: [alice.id] }), SWITCHBOARD_CONFIG: config },
    GATEWAY_START_TIMEOUT_MS,
  );
}, GATEWAY_START_TIMEOUT_MS + 5000);

const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : []);

test("the model calls an MCP tool: the effect happens once and its result reaches the next step and the answer", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "remember eggs", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_append_note", input: { text: "eggs" } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Done: {{lastToolResult}}" } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember eggs" });
  const answer = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("Done"),
    15_000,
  );
  expect(answer.visibleText).toContain('appended "eggs"');
  expect(lines(notes)).toEqual(["eggs"]);
  const first = llm.requests()[0]!;
  expect(first.toolNames).toContain("notes_append_note");
  expect(first.toolNames.some((name) => name.startsWith("broken_"))).toBe(false);
  const second = llm.requests()[1]!;
  expect(second.messages.at(-1)).toMatchObject({ role: "tool" });
}, 30_000);

test("a call that hangs past timeoutMs reaches the model as a failed call, and the answer follows", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "wait forever", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_hang", input: {} },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Tool said: {{lastToolResult}}" } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "wait forever" });
  const answer = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("Tool said"),
    15_000,
  );
  expect(answer.visibleText).toMatch(/timed out/i);
}, 30_000);

test("web_fetch is offered, and a private address is refused by default", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "read the local page", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "web_fetch", input: { url: `${llm.url}/anything` } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Fetch said: {{lastToolResult}}" } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "read the local page" });
  const answer = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("Fetch said"),
    15_000,
  );
  expect(answer.visibleText).toContain("a private, loopback or link-local address: refused");
}, 30_000);

test("/readyz stays 200 and lists the failed server as degraded; the metric reads 0 for it and 1 for the other", async () => {
  const response = await fetch(`${gateway!.url}/readyz`);
  expect(response.status).toBe(200);
  const body = (await response.json()) as {
    ready: boolean;
    checks: Record<string, { ok: boolean; degraded?: boolean; detail?: string }>;
  };
  expect(body.ready).toBe(true);
  expect(body.checks["mcp:broken"]).toMatchObject({ ok: false, degraded: true });
  expect(body.checks["mcp:broken"]?.detail).toContain("refusing to start");
  expect(body.checks["mcp:notes"]).toEqual({ ok: true });
  const metrics = await (await fetch(`${gateway!.url}/metrics`)).text();
  expect(metrics).toContain('switchboard_mcp_server_up{server="broken"} 0');
  expect(metrics).toContain('switchboard_mcp_server_up{server="notes"} 1');
  const down = gateway!.events().find((e) => e.event === "mcp.server_down" && e.server === "broken");
  expect(String(down?.error)).toContain("refusing to start");
});

test("SIGKILL of the gateway leaves no MCP server process behind", async () => {
  const serverPids = lines(pids).map(Number);
  expect(serverPids.length).toBeGreaterThan(0);
  expect(serverPids.some(alive)).toBe(true);
  await gateway!.kill("SIGKILL");
  gateway = null;
  await eventually(() => !serverPids.some(alive), 5000, "the MCP servers to exit after the gateway died");
}, 15_000);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(" ")[2] !== "Z";
  } catch {
    return false;
  }
}
