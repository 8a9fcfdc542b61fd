// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are the literal ${VAR} syntax of the config
/** McpTools against real MCP servers (test/fixtures/mcp) over stdio and Streamable HTTP. */
import { afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ToolSet } from "ai";
import { type McpServersConfig, mcpServersSchema } from "../../src/tools/mcp/config.ts";
import { McpTools } from "../../src/tools/mcp/tools.ts";
import { createLogger } from "../../src/util/log.ts";
import { eventually } from "../e2e/support/gateway-process.ts";
import { startHttpMcpServer } from "../fixtures/mcp/http-server.ts";
import { tempDir } from "../support/runtime.ts";

const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function setup(servers: (dir: string) => Record<string, unknown>, env: Record<string, string> = {}) {
  const dir = tempDir("switchboard-mcp-");
  const logs: Array<Record<string, unknown>> = [];
  const tools = new McpTools({
    servers: mcpServersSchema.parse(servers(dir.path)) as McpServersConfig,
    env,
    logger: createLogger({ level: "debug", write: (line) => logs.push(JSON.parse(line)) }),
  });
  cleanups.push(dir.cleanup, () => tools.stop());
  return { tools, dir: dir.path, logs, notes: join(dir.path, "notes.txt") };
}

const stdio = (dir: string, extra: Record<string, unknown> = {}) => ({
  command: process.execPath,
  args: [STDIO_SERVER],
  env: { NOTES_FILE: join(dir, "notes.txt"), PID_FILE: join(dir, "pids.txt") },
  approval: "never",
  ...extra,
});

async function run(set: ToolSet, name: string, input: unknown): Promise<unknown> {
  const execute = set[name]?.execute;
  if (!execute) throw new Error(`tool ${name} is not offered; offered: ${Object.keys(set).join(", ")}`);
  return execute(input as never, { toolCallId: "call-1", messages: [] } as never);
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : []);

test("a stdio server's tools are offered as <server>_<tool> and a call has its effect once", async () => {
  const { tools, notes } = setup((dir) => ({ notes: stdio(dir, { tools: { deny: ["hang"] } }) }));
  await tools.start();
  const { tools: set, info } = tools.toolSet();
  expect(Object.keys(set).sort()).toContain("notes_append_note");
  expect(Object.keys(set)).not.toContain("notes_hang");
  expect(info.get("notes_append_note")).toEqual({ server: "notes", tool: "append_note", idempotent: false });
  expect(await run(set, "notes_append_note", { text: "milk" })).toBe('appended "milk"');
  expect(lines(notes)).toEqual(["milk"]);
  await expect(run(set, "notes_fail", {})).rejects.toThrow("the notes are locked");
  expect(tools.statuses()).toEqual([{ name: "notes", state: "up", error: null, tools: 7, restarts: 0 }]);
}, 20_000);

test('servers with approval "ask" (the default) are offered and their calls ask first; allow narrows the catalog', async () => {
  const { tools } = setup((dir) => ({
    asks: { ...stdio(dir), approval: undefined, tools: { allow: ["append_note"] } },
    narrow: stdio(dir, { tools: { allow: ["read_notes"] }, idempotent: ["read_notes"] }),
  }));
  await tools.start();
  const { tools: set, info } = tools.toolSet();
  expect(Object.keys(set).sort()).toEqual(["asks_append_note", "narrow_read_notes"]);
  expect(tools.requiresApproval("asks_append_note")).toBe(true);
  expect(tools.requiresApproval("narrow_read_notes")).toBe(false);
  expect(info.get("narrow_read_notes")?.idempotent).toBe(true);
}, 20_000);

test("a Streamable HTTP server gets its headers with ${VAR} expanded; the value is never logged", async () => {
  const dir = tempDir("switchboard-mcp-http-");
  cleanups.push(dir.cleanup);
  const http = startHttpMcpServer({ notesFile: join(dir.path, "notes.txt"), token: "tok-abc123" });
  cleanups.push(() => http.stop());
  const { tools, logs } = setup(
    () => ({
      remote: { url: http.url, headers: { Authorization: "Bearer ${NOTES_TOKEN}" }, approval: "never" },
      missing: { url: http.url, headers: { Authorization: "Bearer ${UNSET_TOKEN}" }, approval: "never" },
    }),
    { NOTES_TOKEN: "tok-abc123" },
  );
  await tools.start();
  const set = tools.toolSet().tools;
  expect(await run(set, "remote_append_note", { text: "over http" })).toBe('appended "over http"');
  expect(lines(join(dir.path, "notes.txt"))).toEqual(["over http"]);
  expect(http.authorizations).toContain("Bearer tok-abc123");
  const missing = tools.statuses().find((s) => s.name === "missing");
  expect(missing?.state).toBe("down");
  expect(missing?.error).toContain("${UNSET_TOKEN}");
  expect(JSON.stringify(logs)).not.toContain("tok-abc123");
}, 20_000);

test("a server that fails to start is down with its reason; the others work", async () => {
  const { tools, logs } = setup((dir) => ({
    broken: stdio(dir, { env: { MCP_FAIL_START: "1" } }),
    notes: stdio(dir),
  }));
  await tools.start();
  const broken = tools.statuses().find((s) => s.name === "broken");
  expect(broken?.state).toBe("down");
  expect(broken?.error).toContain("refusing to start");
  expect(Object.keys(tools.toolSet().tools).some((n) => n.startsWith("broken_"))).toBe(false);
  expect(Object.keys(tools.toolSet().tools)).toContain("notes_append_note");
  const down = logs.find((l) => l.event === "mcp.server_down" && l.server === "broken");
  expect(down?.error).toContain("refusing to start");
  expect(down?.retryInMs).toBe(1000);
}, 20_000);

test("a server that does not answer within startTimeoutMs is down, and start returns by then", async () => {
  const { tools } = setup(() => ({
    silent: { command: "sleep", args: ["30"], startTimeoutMs: 500, approval: "never" },
  }));
  const began = Date.now();
  await tools.start();
  expect(Date.now() - began).toBeLessThan(3000);
  expect(tools.statuses()[0]?.state).toBe("down");
  expect(tools.statuses()[0]?.error).toContain("startTimeoutMs (500 ms)");
}, 20_000);

test("a server that crashes mid-call fails that call and is started again", async () => {
  const { tools, dir } = setup((dir) => ({ notes: stdio(dir) }));
  await tools.start();
  const firstPid = Number(lines(join(dir, "pids.txt"))[0]);
  await expect(run(tools.toolSet().tools, "notes_crash", {})).rejects.toThrow();
  expect(tools.statuses()[0]?.state).not.toBe("up");
  expect(tools.toolSet().tools.notes_append_note).toBeUndefined();
  await eventually(() => tools.statuses()[0]?.state === "up", 8000, "the restart");
  expect(tools.statuses()[0]?.restarts).toBe(1);
  const pids = lines(join(dir, "pids.txt")).map(Number);
  expect(pids).toHaveLength(2);
  expect(pids[1]).not.toBe(firstPid);
  expect(await run(tools.toolSet().tools, "notes_append_note", { text: "after" })).toBe('appended "after"');
}, 20_000);

test("a call that hangs past timeoutMs fails with a timeout, and the server stays usable", async () => {
  const { tools } = setup((dir) => ({ notes: stdio(dir, { timeoutMs: 300 }) }));
  await tools.start();
  const began = Date.now();
  await expect(run(tools.toolSet().tools, "notes_hang", {})).rejects.toThrow(/timed out/i);
  expect(Date.now() - began).toBeLessThan(2000);
  expect(await run(tools.toolSet().tools, "notes_read_notes", {})).toContain("hang");
}, 20_000);

test("a call whose abort signal fires (the run lost its lease) is cancelled on the server", async () => {
  const { tools, notes } = setup((dir) => ({ notes: stdio(dir) }));
  await tools.start();
  const execute = tools.toolSet().tools.notes_wait_for_cancel?.execute;
  if (!execute) throw new Error("notes_wait_for_cancel is not offered");
  const abort = new AbortController();
  const call = execute(
    { text: "transfer" } as never,
    {
      toolCallId: "call-1",
      messages: [],
      abortSignal: abort.signal,
    } as never,
  );
  call.catch(() => {});
  await eventually(() => lines(notes).includes("begin transfer"), 8000, "the call to begin");
  abort.abort(new Error("lease lost"));
  await expect(call).rejects.toThrow();
  // The SDK client sent notifications/cancelled: the server's handler saw its signal abort.
  await eventually(
    () => lines(notes).includes("cancelled transfer"),
    8000,
    "the server to see the cancellation",
  );
  expect(await run(tools.toolSet().tools, "notes_read_notes", {})).toContain("cancelled transfer");
}, 20_000);

test("tools/list_changed refreshes the catalog", async () => {
  const { tools } = setup((dir) => ({ notes: stdio(dir) }));
  await tools.start();
  expect(tools.toolSet().tools.notes_late_tool).toBeUndefined();
  await run(tools.toolSet().tools, "notes_add_tool", { name: "late_tool" });
  await eventually(() => tools.toolSet().tools.notes_late_tool, 5000, "the refreshed catalog");
  expect(await run(tools.toolSet().tools, "notes_late_tool", {})).toBe("late_tool ran");
}, 20_000);

test("colliding names are refused at start with both tools named", async () => {
  const dupes = setup((dir) => ({
    x: stdio(dir, { tools: { allow: ["read_notes"] } }),
    x_read: stdio(dir, {
      env: { NOTES_FILE: join(dir, "n"), EXTRA_TOOL: "notes" },
      tools: { allow: ["notes"] },
    }),
  }));
  await expect(dupes.tools.start()).rejects.toThrow(
    /"read_notes" \(server "x"\) and "notes" \(server "x_read"\) would both be named x_read_notes/,
  );
}, 20_000);

test("stop ends the server processes", async () => {
  const { tools, dir } = setup((dir) => ({ notes: stdio(dir) }));
  await tools.start();
  const pid = Number(lines(join(dir, "pids.txt"))[0]);
  expect(alive(pid)).toBe(true);
  await tools.stop();
  await eventually(() => !alive(pid), 5000, "the server to exit");
}, 20_000);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.split(" ")[2] !== "Z";
  } catch {
    return false;
  }
}
