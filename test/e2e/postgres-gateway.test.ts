/**
 * The gateway on PostgreSQL (SWITCHBOARD_DATABASE_URL), end to end: a real gateway process with
 * grammY against the Telegram emulator and the fake LLM, a fresh database on the local server,
 * SIGKILL and restart on the same database, and the operator CLI working on that database while
 * the gateway runs.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import type { OutboxRecord } from "../../outbox/types.ts";
import {
  privateChat,
  startTelegramEmulator,
  type TelegramEmulator,
  user,
} from "../emulators/telegram/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { createDatabase, gatewayLockHolder, queryDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  eventually,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";
import { waitUntilSettled } from "./support/settled.ts";

const dir = tempDir("switchboard-e2e-postgres-");
const alice = user(3001, "Alice");
const bob = user(3002, "Bob");
const carol = user(3003, "Carol");
let llm: FakeLlmServer;
let telegram: TelegramEmulator;
let database: { url: string; drop(): Promise<void> };
let gateway: GatewayProcess;

function env(): Record<string, string> {
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    databaseUrl: database.url,
    surfaces: { "telegram:dm": { inputPolicy: "queue", delivery: "terminal" } },
    extra: {
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.url,
      TELEGRAM_ALLOWED_USERS: [alice.id, bob.id, carol.id].join(","),
    },
  });
}
const cliEnv = () => ({ SWITCHBOARD_DATABASE_URL: database.url });
const botTexts = (chatId: number) =>
  telegram
    .messages(chatId)
    .filter((m) => m.fromBot)
    .map((m) => m.visibleText);

useTestServer();

beforeAll(async () => {
  llm = startFakeLlmServer();
  telegram = startTelegramEmulator();
  database = await createDatabase();
  gateway = await startGatewayProcess(env());
}, GATEWAY_START_TIMEOUT_MS);

afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await telegram.close();
  await llm.stop();
  await database?.drop();
  dir.cleanup();
}, GATEWAY_STOP_TIMEOUT_MS);

describe("a gateway on PostgreSQL", () => {
  test("creates its schema, answers a DM once and says where its data lives", async () => {
    const started = gateway.events().find((e) => e.event === "gateway.started");
    expect(String(started?.database)).toStartWith("postgres://");
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "hello postgres" });
    await telegram.waitForMessage(alice.id, (m) => m.visibleText === "echo: hello postgres", 15_000);
    const [version] = await queryDatabase<{ value: string }>(
      database.url,
      "SELECT value FROM switchboard_meta WHERE key = 'schema_version'",
    );
    expect(Number(version!.value)).toBeGreaterThanOrEqual(5);
    // The platform shows the reply a moment before its receipt is committed (T3).
    const outbox = await eventually(
      async () => {
        const rows = await queryDatabase<{ state: string }>(
          database.url,
          "SELECT state FROM outbox WHERE markdown = 'echo: hello postgres'",
        );
        return rows[0]?.state === "sending" ? undefined : rows;
      },
      10_000,
      "the reply's receipt",
    );
    expect(outbox).toEqual([{ state: "delivered" }]);

    const conversations = await runCliJson<
      Array<{ id: string; runs: number; activeRuns: number; key: string }>
    >(["conversations", "list"], cliEnv());
    expect(conversations).toMatchObject([
      { runs: 1, activeRuns: 0, key: `tg:${telegram.token.split(":")[0]}:dm:${alice.id}` },
    ]);
    const runs = await runCliJson<Array<{ conversationId: string; state: string }>>(
      ["runs", "list", "--conversation", conversations[0]!.id],
      cliEnv(),
    );
    expect(runs.map((run) => run.state)).toEqual(["completed"]);

    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toContain('switchboard_outbox_records{state="delivered"} 1');
    expect(metrics).toContain("switchboard_outbox_oldest_ambiguous_seconds 0");
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(ready.status).toBe(200);
  }, 30_000);

  test("SIGKILL mid-answer, restart on the same database: every input answered once; a replayed update is a duplicate", async () => {
    llm.addRules([
      {
        match: { lastUserContains: "slow on postgres" },
        reply: { kind: "text", text: "a slow answer from postgres", chunks: 6, chunkDelayMs: 400 },
      },
    ]);
    const { update } = telegram.incoming({ chat: privateChat(bob), from: bob, text: "slow on postgres" });
    telegram.incoming({ chat: privateChat(bob), from: bob, text: "queued behind it" });
    await eventually(() => llm.requestsContaining("slow on postgres").length === 1, 10_000, "the model call");
    // The answer streams for about two seconds; its run is recorded as running before the kill.
    await eventually(
      async () =>
        (
          await queryDatabase<{ n: number }>(
            database.url,
            "SELECT count(*)::int AS n FROM runs WHERE state = 'running'",
          )
        )[0]!.n >= 1,
      5_000,
      "the run to be recorded as running",
    );
    await gateway.kill("SIGKILL");
    gateway = await startGatewayProcess(env());

    await telegram.waitForMessage(bob.id, (m) => m.visibleText === "echo: queued behind it", 20_000);
    telegram.deliverAgain(update.update_id);
    await telegram.waitForConfirmed(update.update_id, 10_000);
    await waitUntilSettled(database.url);
    expect(botTexts(bob.id)).toEqual(["a slow answer from postgres", "echo: queued behind it"]);
    const runs = await runCliJson<Array<{ state: string }>>(["runs", "list"], cliEnv());
    expect(runs.filter((run) => run.state !== "completed")).toEqual([]);
  }, 45_000);

  test("a send hung at a SIGKILL is ambiguous; the CLI's retry on the database reaches the running gateway at once", async () => {
    telegram.injectFault("sendMessage", { kind: "hang" });
    telegram.incoming({ chat: privateChat(carol), from: carol, text: "hang on postgres" });
    await telegram.waitForCall(
      "sendMessage",
      (call) => Number(call.params.chat_id) === carol.id && call.fault === "hang",
      15_000,
    );
    await gateway.kill("SIGKILL");
    gateway = await startGatewayProcess(env());

    const ambiguous = await eventually(
      async () =>
        (await runCliJson<OutboxRecord[]>(["outbox", "list", "--state", "ambiguous"], cliEnv())).find(
          (record) => record.markdown === "echo: hang on postgres",
        ),
      10_000,
      "the interrupted record, ambiguous",
    );
    expect(botTexts(carol.id)).toEqual([]);
    const retriedAtMs = Date.now();
    const retried = await runCli(
      ["outbox", "retry", ambiguous.id, "--note", "not in the chat", "--actor", "e2e-operator"],
      cliEnv(),
    );
    expect(retried.exitCode).toBe(0);
    const shown = await telegram.waitForMessage(
      carol.id,
      (m) => m.visibleText === "echo: hang on postgres",
      10_000,
    );
    // Announced on the database: the gateway does not wait for an unrelated wake-up.
    expect(shown.sentAtMs - retriedAtMs).toBeLessThan(8_000);
    expect(botTexts(carol.id)).toEqual(["echo: hang on postgres"]);
  }, 45_000);

  test("/in 2s fires once from the PostgreSQL schedule store", async () => {
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "/in 2s stretch on postgres" });
    await telegram.waitForMessage(
      alice.id,
      (m) => m.fromBot && m.visibleText.startsWith("echo:") && m.visibleText.includes("stretch on postgres"),
      15_000,
    );
    // A completed one-off is never due again; with its run ended and its reply sent, a second
    // firing or a second answer would already show.
    await eventually(
      async () =>
        (
          await queryDatabase<{ state: string }>(
            database.url,
            "SELECT state FROM schedules WHERE prompt = 'stretch on postgres'",
          )
        )[0]?.state === "completed",
      10_000,
      "the schedule to complete",
    );
    await waitUntilSettled(database.url);
    expect(llm.requestsContaining("stretch on postgres")).toHaveLength(1);
    const schedules = await runCliJson<Array<{ state: string; prompt: string }>>(
      ["schedules", "list", "--all"],
      cliEnv(),
    );
    expect(schedules.find((s) => s.prompt === "stretch on postgres")?.state).toBe("completed");
  }, 30_000);

  test("a second gateway on the same database refuses to start and names the fix; the first keeps answering", async () => {
    const second = await runCli(["start"], { ...env(), SWITCHBOARD_HTTP_PORT: "0" });
    expect(second.exitCode).toBe(78);
    expect(second.stderr).toContain("Another switchboard gateway is already active on postgres://");
    expect(second.stderr).toContain("SWITCHBOARD_STANDBY=on");
    telegram.incoming({ chat: privateChat(bob), from: bob, text: "still there?" });
    await telegram.waitForMessage(bob.id, (m) => m.visibleText === "echo: still there?", 15_000);
  }, 30_000);

  test("the CLI's file commands refuse to run while SWITCHBOARD_DATABASE_URL points at PostgreSQL", async () => {
    const result = await runCli(["db", "check"], cliEnv());
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain("SWITCHBOARD_DATABASE_URL puts the data on PostgreSQL");
  }, 20_000);

  test("the CLI refuses a PostgreSQL database without switchboard's schema and says how to get one", async () => {
    const empty = await createDatabase();
    try {
      const result = await runCli(["runs", "list"], { SWITCHBOARD_DATABASE_URL: empty.url });
      expect(result.exitCode).toBe(4);
      expect(result.stderr).toContain("has no switchboard schema. Start the gateway once");
      const reader = new SQL(empty.url, { max: 1 });
      const [tables] = await reader`SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'`;
      await reader.close();
      // The CLI created nothing.
      expect(Number(tables.n)).toBe(0);
    } finally {
      await empty.drop();
    }
  }, 20_000);

  test("every connection of the gateway is cut, as a server restart would: the next message is still answered", async () => {
    await queryDatabase(
      database.url,
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "after the cut" });
    await telegram.waitForMessage(alice.id, (m) => m.visibleText === "echo: after the cut", 20_000);
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(ready.status).toBe(200);
  }, 30_000);

  test("the lock's connection dies: the gateway takes the lock again, and a second gateway is still refused", async () => {
    const before = await eventually(
      async () => (await gatewayLockHolder(database.url)) ?? undefined,
      15_000,
      "a lock holder",
    );
    await queryDatabase(database.url, "SELECT pg_terminate_backend($1)", [before]);
    const after = await eventually(
      async () => {
        const pid = await gatewayLockHolder(database.url);
        return pid !== null && pid !== before ? pid : undefined;
      },
      15_000,
      "the gateway to take its lock again",
    );
    expect(after).not.toBe(before);
    const second = await runCli(["start"], { ...env(), SWITCHBOARD_HTTP_PORT: "0" });
    expect(second.exitCode).toBe(78);
  }, 30_000);

  test("another gateway takes the lock while this one's connection is down: this one stops at once", async () => {
    const holder = await eventually(
      async () => (await gatewayLockHolder(database.url)) ?? undefined,
      15_000,
      "a lock holder",
    );
    const intruder = new SQL(database.url, { max: 1 });
    try {
      const session = await intruder.reserve();
      await queryDatabase(database.url, "SELECT pg_terminate_backend($1)", [holder]);
      await session.unsafe("SELECT pg_advisory_lock(hashtext('switchboard:gateway'))");
      expect(await gateway.exited).toBe(1);
      expect(gateway.events().some((e) => e.event === "gateway.exclusive_lock_lost")).toBe(true);
      session.release();
    } finally {
      await intruder.close();
    }
  }, 30_000);
});
