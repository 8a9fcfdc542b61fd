/**
 * Schedules end to end: `/in` and the agent's `schedule_after` tool in a Telegram DM (grammY
 * against the Telegram emulator), the model behind the fake OpenAI-compatible server, SQLite on a
 * temp file. The gateway is composed in this process on a fake clock, which the tests advance to
 * a schedule's slot instead of waiting for it; a process remains where it is the point: the
 * operator CLI committing to the database from outside, and a SIGKILL while a scheduled run is in
 * flight.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { runCli } from "./support/cli.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import {
  eventually,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";
import { MARKER_PROMPT, passScheduleSlot } from "./support/schedule-marker.ts";
import { waitUntilSettled } from "./support/settled.ts";

const fixture = useE2eFixture("switchboard-e2e-schedules-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const carol = user(2001, "Carol");
const dave = user(2002, "Dave");
const erin = user(2003, "Erin");
const frank = user(2004, "Frank");

function env(dbName: string): Record<string, string> {
  return telegramGatewayEnv(fixture, {
    dbFile: dbName,
    surfaces: { "telegram:dm": { inputPolicy: "queue", delivery: "terminal" } },
    allowed: [carol.id, dave.id, erin.id, frank.id],
    extra: { SWITCHBOARD_LOG_LEVEL: "debug" },
  });
}

/**
 * Waits until the schedule `id` has completed and the gateway on `dbName` has nothing left to do:
 * a completed one-off is never listed as due again, so any second firing or second answer would
 * already show.
 */
async function waitUntilScheduleDone(dbName: string, id: string): Promise<void> {
  await eventually(
    () => schedulesIn(dbName).find((row) => row.id === id)?.state === "completed",
    10_000,
    `schedule ${id} to complete`,
  );
  await waitUntilSettled(join(dir.path, dbName));
}

const botReplies = (chatId: number) => telegram.messages(chatId).filter((m) => m.fromBot);

interface ScheduleRow {
  id: string;
  kind: string;
  conversation_id: string;
  state: string;
  at_ms: number | null;
  created_at_ms: number;
  created_by: string;
  prompt: string;
  next_at_ms: number | null;
}
interface OccurrenceRow {
  schedule_id: string;
  scheduled_for_ms: number;
  state: string;
  attempts: number;
  run_id: string | null;
  fencing_token: number;
}

/** Reads the gateway's database from outside, the way an operator would. */
function readDb<T>(dbName: string, read: (db: Database) => T): T {
  const db = new Database(join(dir.path, dbName), { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

const schedulesIn = (dbName: string) =>
  readDb(dbName, (db) => db.query("SELECT * FROM schedules ORDER BY created_at_ms").all() as ScheduleRow[]);
const occurrencesIn = (dbName: string, scheduleId: string) =>
  readDb(
    dbName,
    (db) =>
      db
        .query("SELECT * FROM schedule_occurrences WHERE schedule_id = ? ORDER BY scheduled_for_ms")
        .all(scheduleId) as OccurrenceRow[],
  );

const runById = (dbName: string, runId: string) =>
  readDb(
    dbName,
    (db) =>
      db.query("SELECT id, state FROM runs WHERE id = ?").get(runId) as { id: string; state: string } | null,
  );
const admissionsFor = (dbName: string, idempotencyKey: string) =>
  readDb(dbName, (db) =>
    db.query("SELECT run_id FROM messages WHERE idempotency_key = ?").all(idempotencyKey),
  );
/** Every run a schedule started in the conversation (their context says origin "schedule"). */
const scheduledRuns = (dbName: string, conversationId: string) =>
  readDb(dbName, (db) =>
    db
      .query(
        "SELECT id, state FROM runs WHERE conversation_id = ? AND json_extract(context, '$.origin') = 'schedule' ORDER BY queue_seq",
      )
      .all(conversationId),
  );

describe("schedules through the gateway", () => {
  const dbName = "schedules.sqlite";
  // Starts at the real time, so that the rows read like any other; moves only when a test says so.
  const clock = new FakeClock(Date.now());
  let gateway: InProcessGateway;
  beforeAll(async () => {
    gateway = await startInProcessGateway(env(dbName), { clock, limits: FAST_PACING });
  }, GATEWAY_START_TIMEOUT_MS);
  afterAll(async () => {
    await gateway.stop();
  }, GATEWAY_STOP_TIMEOUT_MS);

  /**
   * Moves the clock to just before the slot of `scheduleId` and checks that nothing fired (the
   * scheduler claims an occurrence synchronously on SQLite, so a timer armed too early shows),
   * then to the slot itself.
   */
  async function advanceThroughSlot(scheduleId: string, prompt: string): Promise<void> {
    const slotMs = schedulesIn(dbName).find((row) => row.id === scheduleId)!.at_ms!;
    await clock.advanceTo(slotMs - 1);
    expect(occurrencesIn(dbName, scheduleId)).toEqual([]);
    expect(llm.requestsContaining(prompt)).toHaveLength(0);
    await clock.advanceTo(slotMs);
  }

  test("/in 2s: a confirmation, then at the slot two seconds later exactly one answer to the scheduled prompt", async () => {
    telegram.incoming({ chat: privateChat(carol), from: carol, text: "/in 2s stretch" });
    const confirmation = await telegram.waitForMessage(
      carol.id,
      (m) => m.fromBot && m.visibleText.startsWith("Scheduled sch_"),
      10_000,
    );
    const [schedule] = schedulesIn(dbName);
    expect(schedule).toMatchObject({ created_by: "user", prompt: "stretch", kind: "at" });
    const slotMs = schedule!.at_ms!;
    expect(slotMs - schedule!.created_at_ms).toBe(2_000);
    expect(confirmation.visibleText).toContain(schedule!.id);
    expect(llm.requestsContaining("stretch")).toHaveLength(0); // a command never reaches the model

    // The model is asked once the slot comes, not before.
    await advanceThroughSlot(schedule!.id, "stretch");
    await telegram.waitForMessage(
      carol.id,
      (m) => m.fromBot && m.visibleText.startsWith("echo:") && m.visibleText.includes("stretch"),
      10_000,
    );
    const [request] = llm.requestsContaining("stretch");
    expect(request!.lastUserText).toContain(`[Scheduled prompt ${schedule!.id}] stretch`);

    await waitUntilScheduleDone(dbName, schedule!.id);
    expect(llm.requestsContaining("stretch")).toHaveLength(1);
    expect(botReplies(carol.id).filter((m) => m.visibleText.startsWith("echo:"))).toHaveLength(1);
    expect(schedulesIn(dbName)[0]).toMatchObject({ state: "completed", next_at_ms: null });
    expect(occurrencesIn(dbName, schedule!.id)).toMatchObject([
      { scheduled_for_ms: slotMs, state: "dispatched", attempts: 1, fencing_token: 1 },
    ]);
  }, 30_000);

  test("schedules belong to the chat: after /new they are listed and cancellable, and fire into the new conversation", async () => {
    /** Sends `text` and returns the first bot message after it that `expected` accepts. */
    const say = async (text: string, expected: (reply: string) => boolean) => {
      const before = botReplies(frank.id).length;
      telegram.incoming({ chat: privateChat(frank), from: frank, text });
      const reply = await eventually(
        () =>
          botReplies(frank.id)
            .slice(before)
            .find((m) => expected(m.visibleText)),
        10_000,
        `the reply to ${text}`,
      );
      return reply.visibleText;
    };
    await say("/in 4s stand up", (t) => t.startsWith("Scheduled sch_"));
    const later = await say("/in 1h repot the fern", (t) => t.startsWith("Scheduled sch_"));
    const laterId = later.match(/sch_\w+/)![0];
    const firstConversation = schedulesIn(dbName).find((row) => row.prompt === "stand up")!.conversation_id;
    expect(await say("/new", (t) => t.startsWith("Started a new conversation"))).toContain(
      "your schedules carry on",
    );

    const listed = await say("/schedules", (t) => t.includes(laterId));
    expect(listed).toContain("stand up");
    expect(listed).toContain("repot the fern");
    expect(await say(`/cancel ${laterId}`, (t) => t.startsWith("Cancelled"))).toBe(`Cancelled ${laterId}.`);

    const standUp = schedulesIn(dbName).find((row) => row.prompt === "stand up")!;
    await advanceThroughSlot(standUp.id, "stand up");
    await telegram.waitForMessage(
      frank.id,
      (m) => m.fromBot && m.visibleText.startsWith("echo:") && m.visibleText.includes("stand up"),
      15_000,
    );
    const fired = schedulesIn(dbName).find((row) => row.prompt === "stand up")!;
    const [run] = readDb(dbName, (db) =>
      db
        .query(
          "SELECT conversation_id FROM runs WHERE json_extract(context, '$.origin') = 'schedule' AND id IN (SELECT run_id FROM schedule_occurrences WHERE schedule_id = ?)",
        )
        .all(fired.id),
    ) as Array<{ conversation_id: string }>;
    expect(run!.conversation_id).not.toBe(firstConversation);
    const current = readDb(dbName, (db) =>
      db
        .query(
          "SELECT conversation_id FROM conversation_keys WHERE key = (SELECT chat_key FROM schedules WHERE id = ?)",
        )
        .get(fired.id),
    ) as { conversation_id: string };
    expect(run!.conversation_id).toBe(current.conversation_id);
    expect(schedulesIn(dbName).find((row) => row.id === laterId)?.state).toBe("cancelled");
  }, 40_000);

  test("the agent's schedule_after tool: a schedule exists, fires once, and its answer reaches the chat", async () => {
    llm.addRules([
      {
        match: { lastUserContains: "hydration reminder in two seconds", lastRole: "user" },
        reply: {
          kind: "tool-call",
          toolName: "schedule_after",
          input: { seconds: 2, prompt: "drink water" },
        },
        times: 1,
      },
      {
        match: { lastUserContains: "hydration reminder in two seconds", lastRole: "tool" },
        reply: { kind: "text", text: "Reminder set for two seconds from now." },
        times: 1,
      },
    ]);
    telegram.incoming({
      chat: privateChat(dave),
      from: dave,
      text: "please set a hydration reminder in two seconds",
    });
    const acknowledgement = await telegram.waitForMessage(
      dave.id,
      (m) => m.fromBot && m.visibleText.includes("Reminder set"),
      10_000,
    );
    const offered = llm.requestsContaining("hydration reminder");
    expect(offered[0]?.toolNames).toContain("schedule_after");
    const toolResult = offered[1]?.messages.findLast((m) => m.role === "tool");
    expect(JSON.stringify(toolResult?.content)).toContain('\\"ok\\":true');

    const created = schedulesIn(dbName).filter((row) => row.prompt === "drink water");
    expect(created).toMatchObject([
      { created_by: "agent", state: expect.stringMatching(/active|completed/) },
    ]);
    const schedule = created[0]!;
    expect(schedule.at_ms! - schedule.created_at_ms).toBe(2_000);
    expect(acknowledgement.visibleText).toContain("Reminder set");

    await advanceThroughSlot(schedule.id, "drink water");
    await telegram.waitForMessage(
      dave.id,
      (m) => m.fromBot && m.visibleText.startsWith("echo:") && m.visibleText.includes("drink water"),
      10_000,
    );
    expect(llm.requestsContaining("drink water")).toMatchObject([
      { lastUserText: `[Scheduled prompt ${schedule.id}] drink water` },
    ]);

    await waitUntilScheduleDone(dbName, schedule.id);
    expect(llm.requestsContaining("drink water")).toHaveLength(1);
    expect(botReplies(dave.id).filter((m) => m.visibleText.includes("drink water"))).toHaveLength(1);
    expect(schedulesIn(dbName).find((row) => row.id === schedule.id)?.state).toBe("completed");
    expect(occurrencesIn(dbName, schedule.id)).toMatchObject([{ state: "dispatched", attempts: 1 }]);
  }, 30_000);
});

describe("schedules and the operator CLI", () => {
  // The CLI is another process on the same file, on the real clock: so is this gateway.
  const dbName = "schedules-cli.sqlite";
  let gateway: GatewayProcess;
  beforeAll(async () => {
    gateway = await startGatewayProcess(env(dbName));
  }, GATEWAY_START_TIMEOUT_MS);
  afterAll(async () => {
    await gateway.kill("SIGTERM");
  }, GATEWAY_STOP_TIMEOUT_MS);

  test("the operator CLI pauses and resumes a one-off on the database file; the running gateway fires it once, soon after the resume", async () => {
    const dbEnv = { SWITCHBOARD_DB: join(dir.path, dbName) };
    telegram.incoming({ chat: privateChat(erin), from: erin, text: "/in 3s water the plants" });
    await telegram.waitForMessage(
      erin.id,
      (m) => m.fromBot && m.visibleText.startsWith("Scheduled sch_"),
      10_000,
    );
    const schedule = schedulesIn(dbName).find((row) => row.prompt === "water the plants")!;
    const paused = await runCli(["schedules", "pause", schedule.id], dbEnv);
    expect(paused.exitCode).toBe(0);

    // The slot passes while paused: nothing fires.
    await passScheduleSlot(telegram, erin, schedule.at_ms!);
    const marker = schedulesIn(dbName).find((row) => row.prompt === MARKER_PROMPT)!;
    expect(occurrencesIn(dbName, marker.id)[0]!.scheduled_for_ms).toBeGreaterThan(schedule.at_ms!);
    expect(occurrencesIn(dbName, schedule.id)).toEqual([]);
    expect(llm.requestsContaining("water the plants")).toHaveLength(0);

    const resumedAtMs = Date.now();
    const resumed = await runCli(["schedules", "resume", schedule.id], dbEnv);
    expect(resumed.exitCode).toBe(0);
    const answer = await telegram.waitForMessage(
      erin.id,
      (m) => m.fromBot && m.visibleText.startsWith("echo:") && m.visibleText.includes("water the plants"),
      10_000,
    );
    // The gateway learns of another process's commit within a second, not at its next timer.
    expect(answer.sentAtMs - resumedAtMs).toBeLessThan(8_000);
    await waitUntilScheduleDone(dbName, schedule.id);
    expect(llm.requestsContaining("water the plants")).toHaveLength(1);
  }, 30_000);
});

describe("a gateway killed while a scheduled run is in flight", () => {
  const dbName = "sigkill.sqlite";

  test("after SIGKILL and a restart on the same database the occurrence is one run and one answer", async () => {
    // Only the first model call for the scheduled prompt hangs; the resumed run gets the echo.
    llm.addRules([{ match: { lastUserContains: "long job" }, reply: { kind: "hang" }, times: 1 }]);
    let gateway = await startGatewayProcess(env(dbName));
    try {
      telegram.incoming({ chat: privateChat(erin), from: erin, text: "/in 1s long job" });
      await telegram.waitForMessage(
        erin.id,
        (m) => m.fromBot && m.visibleText.startsWith("Scheduled sch_"),
        10_000,
      );
      await eventually(
        () => llm.requestsContaining("long job").length === 1,
        10_000,
        "the hanging model call",
      );
      const [schedule] = schedulesIn(dbName);
      const slotMs = schedule!.at_ms;
      const idempotencyKey = `schedule:${schedule!.id}:${slotMs}`;
      // The occurrence was claimed and admitted; its run is running when the process dies.
      const inFlight = await eventually(
        () => {
          const [occurrence] = occurrencesIn(dbName, schedule!.id);
          const run = occurrence?.run_id ? runById(dbName, occurrence.run_id) : null;
          return occurrence?.state === "dispatched" && run?.state === "running" ? { occurrence, run } : null;
        },
        5_000,
        "a dispatched occurrence with a running run",
      );
      expect(inFlight.occurrence.fencing_token).toBe(1);

      await gateway.kill("SIGKILL");
      gateway = await startGatewayProcess(env(dbName));

      const answer = await telegram.waitForMessage(
        erin.id,
        (m) => m.fromBot && m.visibleText.startsWith("echo:") && m.visibleText.includes("long job"),
        15_000,
      );
      expect(answer.visibleText).toContain(`[Scheduled prompt ${schedule!.id}] long job`);
      await waitUntilScheduleDone(dbName, schedule!.id);

      expect(botReplies(erin.id).filter((m) => m.visibleText.includes("long job"))).toHaveLength(1);
      // The hung call and the resumed one: the same run asked the model twice, no new run was made.
      expect(llm.requestsContaining("long job")).toHaveLength(2);
      expect(admissionsFor(dbName, idempotencyKey)).toEqual([{ run_id: inFlight.run.id }]);
      expect(scheduledRuns(dbName, schedule!.conversation_id)).toEqual([
        { id: inFlight.run.id, state: "completed" },
      ]);
      expect(occurrencesIn(dbName, schedule!.id)).toMatchObject([
        {
          scheduled_for_ms: slotMs,
          state: "dispatched",
          attempts: 1,
          fencing_token: 1,
          run_id: inFlight.run.id,
        },
      ]);
      expect(schedulesIn(dbName)[0]?.state).toBe("completed");
    } finally {
      await gateway.kill("SIGTERM");
    }
  }, 45_000);
});
