/**
 * Child agents end to end, the gateway composed in this process: grammY against the Telegram
 * emulator, the model behind the fake LLM server, SQLite on a temp file. A parent that waits
 * for its child and one that goes on; the limits refusing as tool errors the model reads; /stop
 * stopping a child at work; and a child's approval prompt on its parent's chat, decided only by
 * the person who asked. The crashes are child-agents-crash.test.ts.
 */
import { Database } from "bun:sqlite";
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock } from "../../src/util/clock.ts";
import { groupChat, privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import type { FakeLlmRule } from "../support/llm/fake-llm-rules.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";

const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const fixture = useE2eFixture("switchboard-e2e-children-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const alice = user(7001, "Alice");
const bob = user(7002, "Bob");
const carol = user(7003, "Carol");
const dave = user(7004, "Dave");
const erin = user(7005, "Erin");
const fred = user(7006, "Fred");
const gina = user(7007, "Gina");
const hank = user(7008, "Hank");
const group = groupChat(-7001, "Team");
const TIMEOUT = 20_000;
let dbCounter = 0;
let dbFile = "";

let running: InProcessGateway[] = [];
afterEach(async () => {
  const stopping = running;
  running = [];
  await Promise.all(stopping.map((gateway) => gateway.stop()));
}, GATEWAY_STOP_TIMEOUT_MS);

/** A gateway with a `researcher` child agent (and `agentLimits` when given), on a fresh database. */
mkdirSync(join(dir.path, "agents", "researcher"), { recursive: true });
writeFileSync(join(dir.path, "agents", "researcher", "INSTRUCTIONS.md"), "You are RESEARCHER-PROMPT.");

async function start(
  agentLimits?: Record<string, number>,
  dmPolicy: "queue" | "supersede" = "queue",
  dmDelivery: "terminal" | "stream" = "terminal",
  more: Record<string, unknown> = {},
): Promise<InProcessGateway> {
  dbFile = `children-${++dbCounter}.sqlite`;
  const config = join(dir.path, `children-${dbCounter}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: {
        "telegram:dm": { delivery: dmDelivery, inputPolicy: dmPolicy },
        "telegram:group": { delivery: "terminal", inputPolicy: "queue", requireMention: false },
      },
      mcpServers: {
        notes: {
          command: process.execPath,
          args: [STDIO_SERVER],
          env: { NOTES_FILE: join(dir.path, "notes.txt") },
        },
      },
      models: { fast: "openai-compatible:child-model" },
      agents: {
        researcher: {
          description: "finds things out",
          maxSteps: 4,
          agentDir: "agents/researcher",
          model: "fast",
          tools: ["web", "agents"],
        },
        scribe: { tools: ["notes"], maxSteps: 4 },
      },
      ...(agentLimits ? { agentLimits } : {}),
      ...more,
    }),
  );
  const gateway = await startInProcessGateway(
    {
      ...telegramGatewayEnv(fixture, {
        allowed: [alice.id, bob.id, carol.id, dave.id, erin.id, fred.id, gina.id, hank.id],
        dbFile,
      }),
      SWITCHBOARD_CONFIG: config,
    },
    { clock: systemClock, limits: FAST_PACING },
  );
  running.push(gateway);
  return gateway;
}

interface ChildRow {
  handle: string;
  state: string;
  agent: string;
  conversation_id: string;
  result_state: string | null;
}

function query<T>(sql: string, ...params: string[]): T[] {
  const db = new Database(join(dir.path, dbFile), { readonly: true });
  try {
    return db.query(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

const children = () => query<ChildRow>("SELECT * FROM child_agents ORDER BY created_at_ms");
const runsOf = (conversationId: string) =>
  query<{ id: string; state: string }>(
    "SELECT id, state FROM runs WHERE conversation_id = ?",
    conversationId,
  );
const botTexts = (chatId: number) =>
  telegram
    .messages(chatId)
    .filter((m) => m.fromBot)
    .map((m) => m.visibleText);

const spawnRule = (prompt: string, input: Record<string, unknown>): FakeLlmRule => ({
  match: { lastUserContains: prompt, lastRole: "user" },
  reply: { kind: "tool-call", toolName: "spawn_agent", input },
});
/** The parent, resumed with its child's result, answers with it. */
const resumeRule: FakeLlmRule = {
  match: { lastUserContains: "Result of child agent", lastRole: "user" },
  reply: { kind: "text", text: "Final answer: {{lastUserText}}" },
};

test("a parent that waits: its turn ends at the spawn, one child runs, and the parent answers with its result", async () => {
  await start();
  llm.setRules([
    {
      match: { lastUserContains: "Result of child agent", lastRole: "user" },
      reply: { kind: "text", text: "Final answer: water boils at 100 C." },
    },
    spawnRule("please research", {
      agent: "researcher",
      task: "Find the boiling point of water",
      wait: true,
    }),
    {
      match: { lastUserContains: "Find the boiling point", lastRole: "user" },
      reply: { kind: "text", text: "CHILD-FINDING: 100 C at sea level." },
    },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please research water" });
  await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("Final answer"),
    TIMEOUT,
  );
  const [child, ...others] = children();
  expect(others).toEqual([]);
  expect(child).toMatchObject({ agent: "researcher", state: "delivered", result_state: "completed" });
  expect(runsOf(child!.conversation_id)).toEqual([{ id: expect.any(String), state: "completed" }]);
  // One message in the chat: the hand-over says nothing and the child's own answer is not a message.
  expect(botTexts(alice.id)).toEqual(["Final answer: water boils at 100 C."]);
  const resumed = llm.requests().find((r) => r.lastUserText.includes("Result of child agent researcher"));
  expect(resumed?.lastUserText).toContain("CHILD-FINDING: 100 C at sea level.");
  // The child was asked as itself: its task, its instructions, and no conversation of the parent.
  const asked = llm.requests().find((r) => r.lastUserText === "Find the boiling point of water");
  expect(asked?.messages.filter((m) => m.role === "user")).toHaveLength(1);
  expect(asked?.model).toBe("child-model");
  const system = JSON.stringify(asked?.messages[0]);
  expect(system).toContain("You are RESEARCHER-PROMPT.");
  expect(system).toContain('child agent \\"researcher\\"');
  expect(asked?.toolNames).toContain("web_fetch");
  expect(asked?.toolNames).not.toContain("notes_append_note");
  // The parent asked the model twice (spawn, then the result), never in between.
  expect(llm.requests().filter((r) => r.toolNames.includes("spawn_agent")).length).toBeGreaterThanOrEqual(2);
}, 60_000);

test("a parent that goes on: it answers at once, and the result arrives later as an input it answers", async () => {
  await start();
  llm.setRules([
    resumeRule,
    spawnRule("look into tides", { agent: "researcher", task: "Explain tides briefly", wait: false }),
    {
      match: { lastRole: "tool", lastToolInputContains: "Explain tides" },
      reply: { kind: "text", text: "I asked a researcher; more soon." },
    },
    {
      match: { lastUserContains: "Explain tides", lastRole: "user" },
      reply: { kind: "text", text: "TIDES-FINDING: the moon pulls the sea.", chunks: 4, chunkDelayMs: 150 },
    },
  ]);
  telegram.incoming({ chat: privateChat(carol), from: carol, text: "please look into tides" });
  await telegram.waitForMessage(carol.id, (m) => m.fromBot && m.visibleText.includes("more soon"), TIMEOUT);
  const final = await telegram.waitForMessage(
    carol.id,
    (m) => m.fromBot && m.visibleText.includes("Final answer"),
    TIMEOUT,
  );
  expect(final.visibleText).toContain("TIDES-FINDING: the moon pulls the sea.");
  expect(botTexts(carol.id)).toHaveLength(2);
  expect(botTexts(carol.id)[0]).toBe("I asked a researcher; more soon.");
  expect(children()).toEqual([expect.objectContaining({ state: "delivered" })]);
}, 60_000);

test("limits: a child spawning past the depth limit, and a spawn past the running limit, get tool errors", async () => {
  await start({ maxDepth: 1, maxRunningPerConversation: 1 });
  llm.setRules([
    resumeRule,
    spawnRule("nest please", { agent: "researcher", task: "Delegate further", wait: true }),
    spawnRule("Delegate further", { agent: "self", task: "nested task", wait: true }),
    {
      match: { lastRole: "tool", lastToolInputContains: "nested task" },
      reply: { kind: "text", text: "CHILD SAW: {{lastToolResult}}" },
    },
  ]);
  telegram.incoming({ chat: privateChat(dave), from: dave, text: "nest please" });
  const final = await telegram.waitForMessage(
    dave.id,
    (m) => m.fromBot && m.visibleText.includes("Final answer"),
    TIMEOUT,
  );
  expect(final.visibleText).toContain("child agents nest at most 1 deep");
  expect(children()).toHaveLength(1);

  llm.setRules([
    spawnRule("two at once", { agent: "researcher", task: "first slow task", wait: false }),
    {
      match: { lastRole: "tool", lastToolInputContains: "first slow task" },
      reply: {
        kind: "tool-call",
        toolName: "spawn_agent",
        input: { agent: "researcher", task: "second task", wait: false },
      },
    },
    {
      match: { lastRole: "tool", lastToolInputContains: "second task" },
      reply: { kind: "text", text: "PARENT SAW: {{lastToolResult}}" },
    },
    { match: { lastUserContains: "first slow task", lastRole: "user" }, reply: { kind: "hang" } },
  ]);
  telegram.incoming({ chat: privateChat(dave), from: dave, text: "two at once" });
  const refused = await telegram.waitForMessage(
    dave.id,
    (m) => m.fromBot && m.visibleText.includes("PARENT SAW"),
    TIMEOUT,
  );
  expect(refused.visibleText).toContain("1 child agents are running in this conversation (at most 1)");
  expect(children().map((c) => c.state)).toEqual(["delivered", "running"]);
  // /stop reaches the child that hangs: no child is left running, and no result comes back.
  telegram.incoming({ chat: privateChat(dave), from: dave, text: "/stop" });
  await telegram.waitForMessage(
    dave.id,
    (m) => m.fromBot && m.visibleText.includes("Stopped the child agents"),
    TIMEOUT,
  );
  await eventually(() => children()[1]?.state === "cancelled", TIMEOUT, "the hanging child to be cancelled");
  const hanging = children()[1]!;
  await eventually(
    () =>
      runsOf(hanging.conversation_id).every(
        (r) => r.state !== "running" && r.state !== "queued" && r.state !== "interrupt_requested",
      ),
    TIMEOUT,
    "the hanging child's run to end",
  );
  expect(query("SELECT id FROM runs WHERE state IN ('queued', 'running', 'interrupt_requested')")).toEqual(
    [],
  );
}, 60_000);

test("a child's approval prompt reaches its parent's chat with its name; only the person who asked decides", async () => {
  await start();
  llm.setRules([
    resumeRule,
    spawnRule("note that", { agent: "scribe", task: "Write the note CHILD-NOTE", wait: true }),
    {
      match: { lastUserContains: "Write the note", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_append_note", input: { text: "CHILD-NOTE" } },
    },
    {
      match: { lastRole: "tool", lastToolInputContains: "CHILD-NOTE" },
      reply: { kind: "text", text: "Scribe done: {{lastToolResult}}" },
    },
  ]);
  telegram.incoming({ chat: group, from: alice, text: "note that down" });
  const prompt = await telegram.waitForMessage(
    group.id,
    (m) => m.visibleText.includes("Approval needed") && !!m.buttons,
    TIMEOUT,
  );
  expect(prompt.visibleText).toContain("Child agent scribe asks");
  const answer = async (queryId: string) =>
    await eventually(
      () => telegram.callbackAnswers().find((a) => a.id === queryId)?.text,
      TIMEOUT,
      `the answer to callback query ${queryId}`,
    );
  const byBob = telegram.press(group.id, prompt.messageId, bob, { label: "Approve" });
  expect(await answer(byBob.queryId)).toBe("Only Alice or an approver can decide this.");
  expect(query<{ state: string }>("SELECT state FROM approvals")).toEqual([{ state: "pending" }]);
  const byAlice = telegram.press(group.id, prompt.messageId, alice, { label: "Approve" });
  expect(await answer(byAlice.queryId)).toBe("Approved.");
  const final = await telegram.waitForMessage(
    group.id,
    (m) => m.fromBot && m.visibleText.includes("Final answer"),
    TIMEOUT,
  );
  expect(final.visibleText).toContain('appended "CHILD-NOTE"');
  expect(children()).toEqual([expect.objectContaining({ agent: "scribe", state: "delivered" })]);
}, 60_000);

test("a parent superseded by a newer message stops the child it started; /new stops a waited child", async () => {
  await start(undefined, "supersede");
  llm.reset();
  llm.setRules([
    resumeRule,
    spawnRule("background job", { agent: "researcher", task: "slow background task", wait: false }),
    // The parent is still thinking when the next message arrives, and the child never finishes.
    { match: { lastRole: "tool", lastToolInputContains: "slow background task" }, reply: { kind: "hang" } },
    { match: { lastUserContains: "slow background task", lastRole: "user" }, reply: { kind: "hang" } },
    spawnRule("waited job", { agent: "researcher", task: "slow waited task", wait: true }),
    { match: { lastUserContains: "slow waited task", lastRole: "user" }, reply: { kind: "hang" } },
    { match: { lastUserContains: "never mind" }, reply: { kind: "text", text: "OK, dropped." } },
  ]);
  telegram.incoming({ chat: privateChat(erin), from: erin, text: "start a background job" });
  await eventually(() => children().length === 1, TIMEOUT, "the background child to be spawned");
  await eventually(
    () => llm.requests().some((r) => r.messages.at(-1)?.role === "tool"),
    TIMEOUT,
    "the parent to think again after the spawn",
  );
  telegram.incoming({ chat: privateChat(erin), from: erin, text: "never mind" });
  await telegram.waitForMessage(erin.id, (m) => m.fromBot && m.visibleText.includes("OK, dropped."), TIMEOUT);
  await eventually(
    () => children()[0]?.state === "cancelled",
    TIMEOUT,
    "the superseded parent's child to stop",
  );

  telegram.incoming({ chat: privateChat(erin), from: erin, text: "start a waited job" });
  await eventually(() => children().length === 2, TIMEOUT, "the waited child to be spawned");
  telegram.incoming({ chat: privateChat(erin), from: erin, text: "/new" });
  await telegram.waitForMessage(
    erin.id,
    (m) => m.fromBot && m.visibleText.includes("Started a new conversation"),
    TIMEOUT,
  );
  await eventually(() => children()[1]?.state === "cancelled", TIMEOUT, "the waited child to stop with /new");
  await eventually(
    () =>
      query("SELECT id FROM runs WHERE state IN ('queued', 'running', 'interrupt_requested')").length === 0,
    TIMEOUT,
    "no run left active",
  );
  expect(llm.requests().some((r) => r.lastUserText.includes("Result of child agent"))).toBe(false);
}, 60_000);

test("/forget stops the conversation's children and deletes what it delegated with it", async () => {
  await start();
  llm.setRules([
    resumeRule,
    spawnRule("secret research", { agent: "researcher", task: "SECRET-TASK done quickly", wait: true }),
    {
      match: { lastUserContains: "SECRET-TASK", lastRole: "user" },
      reply: { kind: "text", text: "SECRET-FINDING" },
    },
  ]);
  telegram.incoming({ chat: privateChat(fred), from: fred, text: "secret research please" });
  await telegram.waitForMessage(fred.id, (m) => m.fromBot && m.visibleText.includes("Final answer"), TIMEOUT);
  const [child] = children();
  telegram.incoming({ chat: privateChat(fred), from: fred, text: "/forget confirm" });
  await telegram.waitForMessage(
    fred.id,
    (m) => m.fromBot && m.visibleText.includes("Done: I deleted this conversation"),
    TIMEOUT,
  );
  expect(
    query("SELECT 1 FROM conversation_tombstones WHERE conversation_id = ?", child!.conversation_id),
  ).toHaveLength(1);
  expect(query("SELECT id FROM messages WHERE conversation_id = ?", child!.conversation_id)).toEqual([]);
  expect(query<{ task: string }>("SELECT task FROM child_agents")).toEqual([{ task: "" }]);
  const db = JSON.stringify(query("SELECT parts FROM messages"));
  expect(db).not.toContain("SECRET-FINDING");
}, 60_000);

test("with the defaults (streamed answers, a newer message supersedes): the chat sees the delegation, then only the parent's final answer", async () => {
  await start(undefined, "supersede", "stream");
  llm.setRules([
    {
      match: { lastUserContains: "Result of child agent", lastRole: "user" },
      reply: { kind: "text", text: "Final answer: streamed after the child", chunks: 4, chunkDelayMs: 30 },
    },
    spawnRule("stream research", { agent: "researcher", task: "STREAM-TASK", wait: true }),
    {
      match: { lastUserContains: "STREAM-TASK", lastRole: "user" },
      reply: { kind: "text", text: "STREAM-CHILD-FINDING in several pieces", chunks: 4, chunkDelayMs: 30 },
    },
  ]);
  telegram.incoming({ chat: privateChat(gina), from: gina, text: "stream research please" });
  await telegram.waitForMessage(
    gina.id,
    (m) => m.fromBot && m.visibleText === "Final answer: streamed after the child",
    TIMEOUT,
  );
  // The turn handed over to the child says so; the child's own answer never reaches the chat.
  expect(botTexts(gina.id)).toEqual(["Asking researcher…", "Final answer: streamed after the child"]);
  expect(telegram.messages(gina.id).some((m) => m.visibleText.includes("STREAM-CHILD-FINDING"))).toBe(false);
  expect(children()).toEqual([expect.objectContaining({ state: "delivered" })]);
}, 60_000);

test("a spawn once the person's budget is spent is refused as a tool error; no child starts", async () => {
  await start(undefined, "queue", "terminal", { budgets: { perUser: { tokensPerDay: 300 } } });
  llm.setRules([
    {
      match: { lastUserContains: "costly research", lastRole: "user" },
      reply: {
        kind: "tool-call",
        toolName: "spawn_agent",
        input: { agent: "researcher", task: "costly task", wait: true },
        usage: { promptTokens: 350, completionTokens: 50 },
      },
    },
    {
      match: { lastRole: "tool", lastToolInputContains: "costly task" },
      reply: { kind: "text", text: "PARENT SAW: {{lastToolResult}}" },
    },
  ]);
  telegram.incoming({ chat: privateChat(hank), from: hank, text: "costly research please" });
  const reply = await telegram.waitForMessage(
    hank.id,
    (m) => m.fromBot && m.visibleText.includes("PARENT SAW"),
    TIMEOUT,
  );
  expect(reply.visibleText).toContain("Spawn refused: the budget of the person who asked");
  expect(children()).toEqual([]);
}, 60_000);
