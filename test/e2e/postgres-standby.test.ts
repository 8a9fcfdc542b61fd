/**
 * Two gateway processes on one PostgreSQL database: the first is active, the second
 * (SWITCHBOARD_STANDBY=on) waits, serving health, metrics and the operator API, and takes over
 * when the active one is SIGKILLed mid-answer. grammY against the Telegram emulator, the fake
 * LLM, real processes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
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
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  eventually,
  exitCodeWithin,
  freePort,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";
import { passScheduleSlot } from "./support/schedule-marker.ts";
import { waitUntilSettled } from "./support/settled.ts";

const TOKEN = "standby-operator-token-0123456789";
const dir = tempDir("switchboard-e2e-standby-");
const alice = user(4001, "Alice");
let llm: FakeLlmServer;
let telegram: TelegramEmulator;
let database: { url: string; drop(): Promise<void> };
let first: GatewayProcess;
let second: GatewayProcess;
const secondPort = freePort();

function env(extra: Record<string, string> = {}): Record<string, string> {
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    databaseUrl: database.url,
    surfaces: { "telegram:dm": { inputPolicy: "queue", delivery: "terminal" } },
    extra: {
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.url,
      TELEGRAM_ALLOWED_USERS: alice.id.toString(),
      SWITCHBOARD_OPERATOR_TOKEN: TOKEN,
      SWITCHBOARD_STANDBY: "on",
      ...extra,
    },
  });
}
const botTexts = () =>
  telegram
    .messages(alice.id)
    .filter((m) => m.fromBot)
    .map((m) => m.visibleText);
const authorized = { headers: { authorization: `Bearer ${TOKEN}` } };

useTestServer();

beforeAll(async () => {
  llm = startFakeLlmServer();
  telegram = startTelegramEmulator();
  database = await createDatabase();
  // With the lock free, a standby-enabled gateway simply becomes active.
  first = await startGatewayProcess(env());
  second = await startGatewayProcess(
    env({ SWITCHBOARD_HTTP_PORT: String(secondPort) }),
    GATEWAY_START_TIMEOUT_MS,
    ["gateway.standby"],
  );
}, 2 * GATEWAY_START_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all([first?.kill("SIGTERM"), second?.kill("SIGTERM")]);
  await telegram.close();
  await llm.stop();
  await database?.drop();
  dir.cleanup();
}, GATEWAY_STOP_TIMEOUT_MS);

describe("a standby gateway on PostgreSQL", () => {
  test("waits as a standby: live, not ready, active 0 in its metrics, the operator API on the shared database", async () => {
    expect((await fetch(`${second.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${second.url}/readyz`);
    expect(ready.status).toBe(503);
    const readiness = (await ready.json()) as { checks: Record<string, { ok: boolean; detail?: string }> };
    expect(readiness.checks.database).toEqual({ ok: true });
    expect(readiness.checks.role?.detail).toContain("standby");
    expect(await (await fetch(`${second.url}/metrics`)).text()).toContain("switchboard_gateway_active 0");
    expect(await (await fetch(`${first.url}/metrics`)).text()).toContain("switchboard_gateway_active 1");

    telegram.incoming({ chat: privateChat(alice), from: alice, text: "hello active" });
    await telegram.waitForMessage(alice.id, (m) => m.visibleText === "echo: hello active", 15_000);
    // The standby reads what the active gateway wrote.
    const runs = await fetch(`${second.url}/api/runs`, authorized);
    expect(runs.status).toBe(200);
    const { items: list } = (await runs.json()) as { items: Array<{ state: string }> };
    expect(list.map((run) => run.state)).toEqual(["completed"]);
    // Event streams need the runtime, which only the active gateway runs.
    const {
      items: [conversation],
    } = (await (await fetch(`${second.url}/api/conversations`, authorized)).json()) as {
      items: Array<{ id: string }>;
    };
    const events = await fetch(`${second.url}/api/conversations/${conversation!.id}/events`, authorized);
    expect(events.status).toBe(503);
    expect(((await events.json()) as { error: { message: string } }).error.message).toContain("standby");
    // A webhook sent to the standby is refused with a status platforms retry.
    const webhook = await fetch(`${second.url}/telegram/webhook`, { method: "POST", body: "{}" });
    expect(webhook.status).toBe(503);
    expect(webhook.headers.get("retry-after")).toBe("5");
    expect(second.events().some((e) => e.event === "gateway.started")).toBe(false);
  }, 30_000);

  test("an operator's change made through the standby reaches the active gateway at once", async () => {
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "/in 3s ping from the schedule" });
    const schedule = await eventually(
      async () =>
        (
          (await (await fetch(`${second.url}/api/schedules`, authorized)).json()) as Array<{
            id: string;
            prompt: string;
          }>
        ).find((s) => s.prompt === "ping from the schedule"),
      10_000,
      "the schedule, seen from the standby",
    );
    const post = (action: string) =>
      fetch(`${second.url}/api/schedules/${schedule.id}/${action}`, {
        method: "POST",
        headers: { ...authorized.headers, "content-type": "application/json" },
        body: "{}",
      });
    expect((await post("pause")).status).toBe(200);
    // The slot passes while paused: nothing fires.
    const [paused] = await queryDatabase<{ at_ms: string | number }>(
      database.url,
      "SELECT at_ms FROM schedules WHERE id = $1",
      [schedule.id],
    );
    await passScheduleSlot(telegram, alice, Number(paused!.at_ms));
    const claimed = await queryDatabase<{ n: number }>(
      database.url,
      "SELECT count(*)::int AS n FROM schedule_occurrences WHERE schedule_id = $1",
      [schedule.id],
    );
    expect(claimed[0]!.n).toBe(0);
    expect(llm.requestsContaining("ping from the schedule")).toHaveLength(0);
    const resumedAtMs = Date.now();
    expect((await post("resume")).status).toBe(200);
    const fired = await telegram.waitForMessage(
      alice.id,
      (m) =>
        m.fromBot && m.visibleText.startsWith("echo:") && m.visibleText.includes("ping from the schedule"),
      10_000,
    );
    // Announced on the database: the active gateway does not wait for an unrelated wake-up.
    expect(fired.sentAtMs - resumedAtMs).toBeLessThan(4_000);
    expect(llm.requestsContaining("ping from the schedule")).toHaveLength(1);
  }, 30_000);

  test("the active gateway is SIGKILLed mid-answer: the standby takes over, answers that input once and the next one", async () => {
    llm.addRules([
      {
        match: { lastUserContains: "slow before the failover" },
        reply: { kind: "text", text: "answered across the failover", chunks: 6, chunkDelayMs: 400 },
      },
    ]);
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "slow before the failover" });
    await eventually(
      () => llm.requestsContaining("slow before the failover").length === 1,
      10_000,
      "the model call",
    );
    const killedAtMs = Date.now();
    await first.kill("SIGKILL");

    await eventually(
      () => second.events().find((e) => e.event === "gateway.started"),
      20_000,
      "the standby to take over",
    );
    const tookOverMs = Date.now() - killedAtMs;
    expect(second.events().some((e) => e.event === "gateway.taking_over")).toBe(true);
    // Same port: a load balancer's health check sees it turn ready.
    expect((await fetch(`http://127.0.0.1:${secondPort}/readyz`)).status).toBe(200);
    expect(await (await fetch(`http://127.0.0.1:${secondPort}/metrics`)).text()).toContain(
      "switchboard_gateway_active 1",
    );

    await telegram.waitForMessage(alice.id, (m) => m.visibleText === "answered across the failover", 20_000);
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "after the failover" });
    await telegram.waitForMessage(alice.id, (m) => m.visibleText === "echo: after the failover", 15_000);
    await waitUntilSettled(database.url);
    const texts = botTexts();
    expect(texts.filter((t) => t === "answered across the failover")).toHaveLength(1);
    expect(texts.filter((t) => t === "echo: after the failover")).toHaveLength(1);
    expect(texts.indexOf("answered across the failover")).toBeLessThan(
      texts.indexOf("echo: after the failover"),
    );
    console.log(`standby took over ${tookOverMs} ms after the SIGKILL`);
    expect(tookOverMs).toBeLessThan(15_000);
  }, 60_000);

  test("only the active gateway's lock connection dies and a standby takes the lock: the old one stops before the new one acts", async () => {
    const third = await startGatewayProcess(env(), GATEWAY_START_TIMEOUT_MS, ["gateway.standby"]);
    try {
      // Whoever asks first after the cut gets the lock: the old gateway, taking it again (then
      // nothing changes; cut again), or the standby (then the old one must stop).
      let exitCode: number | null = null;
      for (let attempt = 0; attempt < 6 && exitCode === null; attempt++) {
        const holder = await eventually(
          async () => (await gatewayLockHolder(database.url)) ?? undefined,
          10_000,
          "a lock holder",
        );
        await queryDatabase(database.url, "SELECT pg_terminate_backend($1)", [holder]);
        exitCode = await exitCodeWithin(second, 5_000);
      }
      expect(exitCode).toBe(1);
      const lost = second.events().find((e) => e.event === "gateway.exclusive_lock_lost");
      expect(lost).toBeDefined();
      const takingOver = await eventually(
        () => third.events().find((e) => e.event === "gateway.taking_over"),
        15_000,
        "the new standby to take over",
      );
      // The old gateway had stopped working before the new one recovered its runs and sends.
      expect(Date.parse(String(takingOver.time))).toBeGreaterThan(Date.parse(String(lost!.time)));
      await eventually(
        () => third.events().find((e) => e.event === "gateway.started"),
        15_000,
        "the new gateway",
      );
      telegram.incoming({ chat: privateChat(alice), from: alice, text: "answered by the third" });
      await telegram.waitForMessage(alice.id, (m) => m.visibleText === "echo: answered by the third", 15_000);
      expect(botTexts().filter((t) => t === "echo: answered by the third")).toHaveLength(1);
    } finally {
      second = third;
    }
  }, 45_000);

  test("a standby stopped with SIGTERM while it waits exits 0 and never becomes active", async () => {
    const third = await startGatewayProcess(env(), GATEWAY_START_TIMEOUT_MS, ["gateway.standby"]);
    expect(await third.kill("SIGTERM")).toBe(0);
    expect(third.events().some((e) => e.event === "gateway.started")).toBe(false);
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "still answered" });
    await telegram.waitForMessage(alice.id, (m) => m.visibleText === "echo: still answered", 15_000);
  }, 30_000);

  test("the active gateway stopped with SIGTERM (a deploy): it finishes its answer, and the standby takes over", async () => {
    const next = await startGatewayProcess(env(), GATEWAY_START_TIMEOUT_MS, ["gateway.standby"]);
    llm.addRules([
      {
        match: { lastUserContains: "slow before the deploy" },
        reply: { kind: "text", text: "finished before the deploy", chunks: 4, chunkDelayMs: 300 },
      },
    ]);
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "slow before the deploy" });
    await eventually(
      () => llm.requestsContaining("slow before the deploy").length === 1,
      10_000,
      "the model call",
    );
    expect(await second.kill("SIGTERM")).toBe(0);
    second = next;
    await telegram.waitForMessage(alice.id, (m) => m.visibleText === "finished before the deploy", 10_000);
    await eventually(
      () => next.events().find((e) => e.event === "gateway.started"),
      20_000,
      "the standby to take over",
    );
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "after the deploy" });
    await telegram.waitForMessage(alice.id, (m) => m.visibleText === "echo: after the deploy", 15_000);
    const texts = botTexts();
    expect(texts.filter((t) => t === "finished before the deploy")).toHaveLength(1);
    expect(texts.filter((t) => t === "echo: after the deploy")).toHaveLength(1);
    // The stopped gateway finished its run; the new one had nothing to resume.
    expect(llm.requestsContaining("slow before the deploy")).toHaveLength(1);
  }, 45_000);
});
