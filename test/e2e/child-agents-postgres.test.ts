/**
 * Child agents on PostgreSQL: a waited child answered once, /stop stopping a child at work, and a
 * real gateway process SIGKILLed after a child's terminal commit admitted its result, restarted on
 * the same database: one child, one result, one answer. (The same on SQLite, with every kill
 * point, is child-agents-telegram.test.ts and child-agents-crash.test.ts.)
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock } from "../../src/util/clock.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import type { FakeLlmRule } from "../support/llm/fake-llm-rules.ts";
import { createDatabase, queryDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";

useTestServer();
const fixture = useE2eFixture("switchboard-e2e-children-pg-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
fixture.stopGatewaysAfterEach();
const TIMEOUT = 20_000;

const config = join(dir.path, "switchboard.json");
writeFileSync(
  config,
  JSON.stringify({
    version: 1,
    surfaces: { "telegram:dm": { delivery: "terminal", inputPolicy: "queue" } },
    agents: { researcher: { maxSteps: 4 } },
  }),
);

let database: { url: string; drop(): Promise<void> };
let inProcess: InProcessGateway | null = null;
beforeEach(async () => {
  database = await createDatabase({ migrated: true });
});
afterEach(async () => {
  await inProcess?.stop();
  inProcess = null;
  await database.drop();
}, GATEWAY_STOP_TIMEOUT_MS);

const env = (userId: number, extra: Record<string, string> = {}) => {
  const { SWITCHBOARD_DB: _, ...rest } = telegramGatewayEnv(fixture, { allowed: [userId] });
  return { ...rest, SWITCHBOARD_DATABASE_URL: database.url, SWITCHBOARD_CONFIG: config, ...extra };
};
const rows = <T>(sql: string) => queryDatabase<T>(database.url, sql);

function rules(tag: string, child: FakeLlmRule["reply"]): FakeLlmRule[] {
  return [
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
    { match: { lastUserContains: `Study ${tag}`, lastRole: "user" }, reply: child },
  ];
}

test("PostgreSQL: a waited child answers once through its parent; /stop then leaves no child running", async () => {
  inProcess = await startInProcessGateway(env(9101), { clock: systemClock, limits: FAST_PACING });
  const alice = user(9101, "Alice");
  llm.setRules(rules("pg-one", { kind: "text", text: "FINDING-pg-one" }));
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please research pg-one" });
  const final = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("Final"),
    TIMEOUT,
  );
  expect(final.visibleText).toContain("FINDING-pg-one");
  expect(await rows("SELECT state FROM child_agents")).toEqual([{ state: "delivered" }]);

  llm.setRules(rules("pg-two", { kind: "hang" }));
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please research pg-two" });
  await eventually(
    async () => (await rows<{ state: string }>("SELECT state FROM child_agents")).length === 2,
    TIMEOUT,
    "the second child to be spawned",
  );
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "/stop" });
  await telegram.waitForMessage(alice.id, (m) => m.fromBot && m.visibleText.includes("Stopped"), TIMEOUT);
  await eventually(
    async () =>
      (await rows("SELECT id FROM runs WHERE state IN ('queued', 'running', 'interrupt_requested')"))
        .length === 0,
    TIMEOUT,
    "no run left active",
  );
  expect(await rows("SELECT state FROM child_agents ORDER BY created_at_ms")).toEqual([
    { state: "delivered" },
    { state: "cancelled" },
  ]);
}, 60_000);

test("PostgreSQL: SIGKILL after the child's terminal commit, before the parent resumes: one result, answered once", async () => {
  const bob = user(9102, "Bob");
  llm.setRules(rules("pg-crash", { kind: "text", text: "FINDING-pg-crash" }));
  const dying = await fixture.startGateway(
    env(9102, { SWITCHBOARD_TEST_KILL_POINT: "run.input-handed-on" }),
    GATEWAY_START_TIMEOUT_MS,
  );
  telegram.incoming({ chat: privateChat(bob), from: bob, text: "please research pg-crash" });
  await dying.exited;
  expect(dying.events().some((e) => e.event === "test.kill_point")).toBe(true);
  await fixture.startGateway(env(9102), GATEWAY_START_TIMEOUT_MS);
  const final = await telegram.waitForMessage(
    bob.id,
    (m) => m.fromBot && m.visibleText.includes("Final"),
    TIMEOUT,
  );
  expect(final.visibleText).toContain("FINDING-pg-crash");
  expect(await rows("SELECT state FROM child_agents")).toEqual([{ state: "delivered" }]);
  expect(
    await rows(
      "SELECT count(*)::int AS n FROM messages WHERE role = 'user' AND parts LIKE '%Result of child agent%'",
    ),
  ).toEqual([{ n: 1 }]);
  expect(telegram.messages(bob.id).filter((m) => m.fromBot && m.visibleText.includes("Final"))).toHaveLength(
    1,
  );
}, 90_000);
