/**
 * Effects survive crashes: a real gateway process is SIGKILLed while an MCP tool call runs, then
 * started again on the same SQLite file. A non-idempotent call is not run again and the model and
 * the user are told its outcome is unknown; an idempotent one is run again, once.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";

const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const fixture = useE2eFixture("switchboard-e2e-tool-crash-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const notes = join(dir.path, "notes.txt");
/** Each tool server appends its pid here when it starts. */
const serverPids = join(dir.path, "server-pids.txt");
const alice = user(1001, "Alice");

const server = (extra: Record<string, unknown>) => ({
  command: process.execPath,
  args: [STDIO_SERVER],
  env: { NOTES_FILE: notes, PID_FILE: serverPids },
  approval: "never",
  ...extra,
});

function env(): Record<string, string> {
  const config = join(dir.path, "switchboard.json");
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: { "telegram:dm": { delivery: "terminal", inputPolicy: "queue" } },
      mcpServers: { notes: server({}), safe: server({ idempotent: ["slow_append"] }) },
    }),
  );
  return { ...telegramGatewayEnv(fixture, { allowed: [alice.id] }), SWITCHBOARD_CONFIG: config };
}

const start = (): Promise<GatewayProcess> => fixture.startGateway(env(), GATEWAY_START_TIMEOUT_MS);

const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : []);
const count = (line: string) => lines(notes).filter((l) => l === line).length;

function slowCall(prompt: string, toolName: string, text: string, ms: number) {
  llm.setRules([
    {
      match: { lastUserContains: prompt, lastRole: "user" },
      reply: { kind: "tool-call", toolName, input: { text, ms } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Answer: {{lastToolResult}}" } },
  ]);
}

/** Whether `pid` is a live process (a zombie has ended: it can write nothing more). */
function alive(pid: number): boolean {
  const stat = join("/proc", String(pid), "stat");
  if (!existsSync(stat)) return false;
  return readFileSync(stat, "utf8").split(") ").at(-1)?.[0] !== "Z";
}

/**
 * Sends `prompt`, SIGKILLs the gateway once the tool has begun, and starts it again. Also returns
 * the pids of the tool servers the killed gateway had started.
 */
async function crashDuringCall(
  prompt: string,
  text: string,
): Promise<{ second: GatewayProcess; killedServers: number[] }> {
  const first = await start();
  telegram.incoming({ chat: privateChat(alice), from: alice, text: prompt });
  await eventually(() => count(`begin ${text}`) === 1, 15_000, `the tool to begin "${text}"`);
  await first.kill("SIGKILL");
  const killedServers = lines(serverPids).map(Number);
  return { second: await start(), killedServers };
}

test("SIGKILL during a non-idempotent call: it is not run again, and the model and the user are told", async () => {
  slowCall("risky write", "notes_slow_append", "risky", 4000);
  const { second, killedServers } = await crashDuringCall("please do the risky write", "risky");
  const answer = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("Answer:"),
    20_000,
  );
  expect(answer.visibleText).toContain("outcome unknown: the gateway restarted while this call was running");
  expect(answer.visibleText).toContain(
    "notes_slow_append: the gateway restarted while this call was running",
  );
  // The interrupted call could still finish only in a tool server of the killed gateway.
  expect(killedServers.length).toBeGreaterThan(0);
  await eventually(
    () => killedServers.every((pid) => !alive(pid)),
    10_000,
    "the killed gateway's tool servers to end",
  );
  expect(count("begin risky")).toBe(1);
  expect(count("end risky")).toBe(0);
  const toModel = llm.requests().find((r) => r.messages.at(-1)?.role === "tool");
  expect(JSON.stringify(toModel?.messages.at(-1))).toContain("outcome unknown");
  expect(
    second.events().some((e) => e.event === "tool.outcome_unknown" && e.tool === "notes_slow_append"),
  ).toBe(true);
  await second.kill("SIGKILL");
}, 60_000);

test("SIGKILL during an idempotent call: it is run again, once, and the answer has its result", async () => {
  llm.reset();
  slowCall("safe write", "safe_slow_append", "safe", 2000);
  const { second } = await crashDuringCall("please do the safe write", "safe");
  const answer = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes('slowly appended "safe"'),
    20_000,
  );
  expect(answer.visibleText).not.toContain("outcome unknown");
  expect(count("begin safe")).toBe(2);
  expect(count("end safe")).toBe(1);
  expect(second.events().some((e) => e.event === "tool.run_again" && e.tool === "safe_slow_append")).toBe(
    true,
  );
  await second.kill("SIGKILL");
}, 60_000);
