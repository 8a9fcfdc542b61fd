/**
 * Instructions, skills and resources from an agent directory, end to end: a real gateway process
 * against the Telegram emulator and the fake model. The model calls read_skill and read_resource
 * and their results reach the next step; a broken skill is reported at start and left out; a
 * SIGHUP or a changed file during a run changes what later runs see, not the run in flight.
 */
import { beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { messageText } from "../support/llm/fake-llm-rules.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-agent-files-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const alice = user(1001, "Alice");
const agentDir = join(dir.path, "agent");
let gateway: GatewayProcess;

function writeSkill(name: string, text: string): void {
  mkdirSync(join(agentDir, "skills", name), { recursive: true });
  writeFileSync(join(agentDir, "skills", name, "SKILL.md"), text);
}

const releaseNotes = (body: string) =>
  `---\nname: release-notes\ndescription: How to write release notes for a version\n---\n${body}\n`;

beforeAll(async () => {
  mkdirSync(join(agentDir, "resources", "policies"), { recursive: true });
  writeFileSync(join(agentDir, "INSTRUCTIONS.md"), "You are Quill, the release assistant of ACME.\n");
  writeSkill("release-notes", releaseNotes("Step one: list every merged change under VERSION-ONE."));
  writeSkill("broken", "name: broken\nno front matter here\n");
  writeFileSync(
    join(agentDir, "resources", "policies", "refunds.md"),
    "# Refund policy\nRefunds within 30 days.\n",
  );
  gateway = await fixture.startGateway(
    {
      ...telegramGatewayEnv(fixture, {
        allowed: [alice.id],
        surfaces: { "telegram:dm": { delivery: "terminal" } },
      }),
      SWITCHBOARD_AGENT_DIR: agentDir,
    },
    GATEWAY_START_TIMEOUT_MS,
  );
}, GATEWAY_START_TIMEOUT_MS + 5000);

const systemOf = (index: number) =>
  messageText(llm.requests()[index]!.messages.find((m) => m.role === "system")!);

test("a broken skill is reported at start with the file and the fix, and the gateway starts without it", () => {
  const refused = gateway.events().find((e) => e.event === "agent.file_refused");
  expect(refused?.file).toBe("skills/broken/SKILL.md");
  expect(String(refused?.fix)).toContain("front matter");
  const loaded = gateway.events().find((e) => e.event === "agent.loaded");
  expect(loaded?.skills).toEqual(["release-notes"]);
});

test("the model calls read_skill: INSTRUCTIONS.md and the skill summary are in the prompt, the body reaches the next step", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "write the release notes", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "read_skill", input: { name: "release-notes" } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Skill said: {{lastToolResult}}" } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please write the release notes" });
  const answer = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("Skill said"),
    20_000,
  );
  expect(answer.visibleText).toContain("VERSION-ONE");
  const first = llm.requests()[0]!;
  expect(first.toolNames).toContain("read_skill");
  expect(first.toolNames).toContain("read_resource");
  const system = systemOf(0);
  expect(system).toContain("You are Quill, the release assistant of ACME.");
  expect(system).toContain("- release-notes: How to write release notes for a version");
  expect(system).toContain("- policies/refunds.md: Refund policy");
  // The body stays out of the prompt until the agent reads it.
  expect(system).not.toContain("VERSION-ONE");
  const toolStep = llm.requests().find((r) => r.messages.at(-1)?.role === "tool")!;
  expect(messageText(toolStep.messages.at(-1)!)).toContain("VERSION-ONE");
}, 40_000);

test("read_resource refuses '..' and reads a listed file", async () => {
  llm.reset();
  llm.setRules([
    {
      match: { lastUserContains: "escape please", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "read_resource", input: { path: "../INSTRUCTIONS.md" } },
    },
    {
      match: { lastUserContains: "refund please", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "read_resource", input: { path: "policies/refunds.md" } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Resource said: {{lastToolResult}}" } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "escape please" });
  const refused = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("Resource said") && m.visibleText.includes(".."),
    20_000,
  );
  expect(refused.visibleText).not.toContain("Quill");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "refund please" });
  const read = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("Refunds within 30 days"),
    20_000,
  );
  expect(read.visibleText).toContain("Resource said");
}, 40_000);

/**
 * A reload lands while a run's first model step is still streaming: the run keeps the skill and
 * instructions it was admitted with, and the next run gets the new ones and the new version.
 */
async function reloadDuringRun(
  reason: "SIGHUP" | "file changed",
  before: { version: string; instructions: string },
  after: { version: string; instructions: string },
): Promise<void> {
  // Slow enough that the reload lands while the first step is still streaming: a SIGHUP reloads
  // at once, polling within its 2 s.
  const chunkDelayMs = reason === "SIGHUP" ? 700 : 1200;
  llm.reset();
  llm.setRules([
    {
      match: { lastUserContains: "notes again", lastRole: "user" },
      reply: {
        kind: "tool-call",
        toolName: "read_skill",
        input: { name: "release-notes" },
        argumentChunks: 3,
        chunkDelayMs,
      },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "In flight: {{lastToolResult}}" } },
  ]);
  const reloadsBefore = gateway.events().filter((e) => e.event === "agent.reloaded").length;
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "notes again, first" });
  await eventually(() => llm.requests().length >= 1, 20_000, "the run's first model call");
  writeSkill("release-notes", releaseNotes(`Step one: list every merged change under ${after.version}.`));
  writeFileSync(join(agentDir, "INSTRUCTIONS.md"), `${after.instructions}\n`);
  // A changed file is noticed by the gateway's own polling (every 2 s); SIGHUP reloads at once.
  if (reason === "SIGHUP") process.kill(gateway.pid, "SIGHUP");
  const reloaded = await eventually(
    () =>
      gateway
        .events()
        .filter((e) => e.event === "agent.reloaded")
        .slice(reloadsBefore)
        .find((e) => e.reason === reason),
    10_000,
    "the reload",
  );
  const inFlight = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("In flight") && m.visibleText.includes(before.version),
    20_000,
  );
  expect(inFlight.visibleText).not.toContain(after.version);
  // The reload came before the run's second step, which still saw the old instructions.
  const second = llm.requests().find((r) => r.messages.at(-1)?.role === "tool")!;
  expect(second.receivedAtMs).toBeGreaterThan(Date.parse(String(reloaded.time)));
  expect(systemOf(second.index)).toContain(before.instructions);

  llm.reset();
  llm.setRules([
    {
      match: { lastUserContains: "notes again", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "read_skill", input: { name: "release-notes" } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Next run: {{lastToolResult}}" } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "notes again, second" });
  const next = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("Next run") && m.visibleText.includes(after.version),
    20_000,
  );
  // The run records the version it used: read_skill reports it (the latest reload's, should
  // polling have caught the two files between their writes).
  const latest = gateway
    .events()
    .filter((e) => e.event === "agent.reloaded")
    .at(-1)!;
  expect(next.visibleText).toContain(String(latest.version));
  expect(systemOf(0)).toContain(after.instructions);
}

test("SIGHUP during a run: the run keeps the version it was admitted with, the next run gets the new one", async () => {
  await reloadDuringRun(
    "SIGHUP",
    { version: "VERSION-ONE", instructions: "You are Quill, the release assistant of ACME." },
    { version: "VERSION-TWO", instructions: "You are Quill 2." },
  );
}, 60_000);

test("a changed file during a run, without SIGHUP: polling reloads it, atomically, the run keeps its version", async () => {
  await reloadDuringRun(
    "file changed",
    { version: "VERSION-TWO", instructions: "You are Quill 2." },
    { version: "VERSION-THREE", instructions: "You are Quill 3." },
  );
}, 60_000);
