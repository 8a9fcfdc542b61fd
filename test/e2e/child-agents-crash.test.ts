/**
 * Child agents survive a crash: a real gateway process SIGKILLs itself at a kill point of a
 * spawn's life and is started again on the same SQLite file. Each time there is exactly one child
 * for the spawn call, one result for the child, and one answer in the chat:
 * - after the parent's step with the spawn call was checkpointed, before the child was admitted;
 * - while the child's model call streams;
 * - after the child's terminal commit admitted its result, before the parent resumed.
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KillPoint } from "../../src/util/kill-point.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { GATEWAY_START_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-children-crash-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
fixture.stopGatewaysAfterEach();

const config = join(dir.path, "switchboard.json");
writeFileSync(
  config,
  JSON.stringify({
    version: 1,
    surfaces: { "telegram:dm": { delivery: "terminal", inputPolicy: "queue" } },
    agents: { researcher: { maxSteps: 4 } },
  }),
);

function env(dbFile: string, userId: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...telegramGatewayEnv(fixture, { allowed: [userId], dbFile }),
    SWITCHBOARD_CONFIG: config,
    ...extra,
  };
}

function rows<T>(dbFile: string, sql: string): T[] {
  const db = new Database(join(dir.path, dbFile), { readonly: true });
  try {
    return db.query(sql).all() as T[];
  } finally {
    db.close();
  }
}

/**
 * Starts a gateway armed to die at `point`, sends the request that spawns a waited child, waits
 * for the process to die, starts it again unarmed, and checks the spawn's outcome once done.
 */
async function crashAt(point: KillPoint, userId: number, tag: string): Promise<void> {
  const dbFile = `${tag}.sqlite`;
  const person = user(userId, `User${userId}`);
  llm.setRules([
    {
      match: { lastUserContains: "Result of child agent", lastRole: "user" },
      reply: { kind: "text", text: `Final ${tag}: {{lastUserText}}` },
    },
    {
      match: { lastUserContains: `research ${tag}`, lastRole: "user" },
      reply: {
        kind: "tool-call",
        toolName: "spawn_agent",
        input: { agent: "researcher", task: `Study ${tag}`, wait: true },
      },
    },
    {
      match: { lastUserContains: `Study ${tag}`, lastRole: "user" },
      reply: {
        kind: "text",
        text: `FINDING-${tag} is long enough to stream in pieces`,
        chunks: 6,
        chunkDelayMs: 40,
      },
    },
  ]);
  const dying = await fixture.startGateway(
    env(dbFile, userId, { SWITCHBOARD_TEST_KILL_POINT: point }),
    GATEWAY_START_TIMEOUT_MS,
  );
  telegram.incoming({ chat: privateChat(person), from: person, text: `please research ${tag}` });
  await dying.exited;
  expect(dying.events().some((e) => e.event === "test.kill_point" && e.point === point)).toBe(true);

  await fixture.startGateway(env(dbFile, userId), GATEWAY_START_TIMEOUT_MS);
  const final = await telegram.waitForMessage(
    userId,
    (m) => m.fromBot && m.visibleText.includes(`Final ${tag}`),
    20_000,
  );
  expect(final.visibleText).toContain(`FINDING-${tag}`);
  const children = rows<{ state: string; conversation_id: string }>(dbFile, "SELECT * FROM child_agents");
  expect(children).toEqual([expect.objectContaining({ state: "delivered" })]);
  // One child run answered (a resumed run is the same run), and one result reached the parent.
  const childRuns = rows<{ state: string }>(
    dbFile,
    `SELECT state FROM runs WHERE conversation_id = '${children[0]!.conversation_id}'`,
  );
  expect(childRuns).toEqual([{ state: "completed" }]);
  const results = rows<{ n: number }>(
    dbFile,
    "SELECT count(*) AS n FROM messages WHERE role = 'user' AND parts LIKE '%Result of child agent%'",
  );
  expect(results).toEqual([{ n: 1 }]);
  expect(telegram.messages(userId).filter((m) => m.fromBot && m.visibleText.includes("Final"))).toHaveLength(
    1,
  );
  expect(
    rows(dbFile, "SELECT id FROM runs WHERE state IN ('queued', 'running', 'interrupt_requested')"),
  ).toEqual([]);
}

test("SIGKILL after the spawn step's checkpoint, before the child's admission: one child, one result", async () => {
  await crashAt("step.persisted", 8101, "alpha");
}, 90_000);

test("SIGKILL while the child's model call streams: the child resumes, one child, one result", async () => {
  await crashAt("step.streaming", 8102, "beta");
}, 90_000);

test("SIGKILL after the child's terminal commit, before the parent resumes: one result, answered once", async () => {
  await crashAt("run.input-handed-on", 8103, "gamma");
}, 90_000);
