import type { ChannelName } from "../../../channels/types.ts";
import { createScheduleService } from "../../../schedules/service.ts";
import type { Schedule } from "../../../schedules/types.ts";
import { openSqliteStores, type SqliteStores } from "../../../src/store/sqlite/index.ts";
import { FakeClock } from "../../support/fake-clock.ts";

export const T0 = Date.parse("2026-03-01T09:00:00Z");

export interface SeededRun {
  runId: string;
  conversationId: string;
  outboxId: string | null;
}

export interface Seed {
  stores: SqliteStores;
  clock: FakeClock;
  telegram: { conversationId: string; key: string };
  slack: { conversationId: string; key: string };
  delivered: SeededRun;
  ambiguous: SeededRun;
  failed: SeededRun;
  pending: SeededRun;
  queuedRunId: string;
  schedules: { daily: Schedule; paused: Schedule; cancelled: Schedule };
}

let counter = 0;

/** Admits one text input on `key`; returns the run and its conversation. */
async function admit(stores: SqliteStores, clock: FakeClock, key: string, text: string) {
  counter += 1;
  await clock.advance(1000);
  const result = await stores.runtime.admit({
    conversation: { key },
    idempotencyKey: `seed-${counter}`,
    fingerprint: `fp-${counter}-${text}`,
    parts: [{ type: "text", text }],
    context: { seeded: true },
    policy: "queue",
    coalescePending: false,
    proposedIds: { runId: `run_seed${counter}`, messageId: `msg_seed${counter}` },
    nowMs: clock.now(),
  });
  return { runId: result.runId, conversationId: result.conversationId };
}

/** Runs `runId` to completion with `answer`, enqueuing the answer in the terminal transaction. */
async function complete(
  stores: SqliteStores,
  clock: FakeClock,
  run: { runId: string; conversationId: string },
  channel: ChannelName,
  target: string,
  answer: string,
): Promise<SeededRun> {
  await clock.advance(1000);
  const acquired = await stores.runtime.acquireRun({
    runId: run.runId,
    owner: "seed-worker",
    nowMs: clock.now(),
    leaseMs: 60_000,
  });
  if (!acquired) throw new Error(`seed: could not acquire ${run.runId}`);
  await clock.advance(1000);
  await stores.runtime.commitTerminal({
    fence: acquired.fence,
    state: "completed",
    assistantParts: [{ type: "text", text: answer }],
    delivery: {
      runId: run.runId,
      conversationId: run.conversationId,
      channel,
      account: "bot-1",
      target,
      state: "completed",
      text: answer,
    },
    nowMs: clock.now(),
  });
  const record = await stores.outbox.show(`${run.runId}:0`);
  return { ...run, outboxId: record?.id ?? null };
}

/** Moves a pending record through one delivery attempt that ends as `outcome`. */
async function attempt(
  stores: SqliteStores,
  clock: FakeClock,
  id: string,
  outcome: "delivered" | "ambiguous" | "failed",
): Promise<void> {
  await clock.advance(500);
  if (!(await stores.outbox.markSending(id, clock.now()))) throw new Error(`seed: ${id} is not pending`);
  await clock.advance(500);
  const moved =
    outcome === "delivered"
      ? await stores.outbox.markDelivered(id, { messageIds: ["9001"] }, clock.now())
      : outcome === "ambiguous"
        ? await stores.outbox.markAmbiguous(id, "connection reset after the request was sent", clock.now())
        : await stores.outbox.markFailed(id, "400 Bad Request: chat not found", clock.now());
  if (!moved) throw new Error(`seed: ${id} did not become ${outcome}`);
}

export async function seedDatabase(path: string): Promise<Seed> {
  const stores = openSqliteStores(path, { busyTimeoutMs: 2000 });
  // Sleeps end at once: a purge polls until its runs stop, and no test advances time for it.
  const clock = new FakeClock(T0, { instantSleeps: true });
  const telegramKey = "tg:bot-1:dm:42";
  const slackKey = "slack:T1:C9";

  const first = await admit(stores, clock, telegramKey, "Summarise yesterday's standup");
  const delivered = await complete(stores, clock, first, "telegram", "42", "Here is **the summary**.");
  await attempt(stores, clock, delivered.outboxId!, "delivered");

  const second = await admit(stores, clock, telegramKey, "And the action items?");
  const ambiguous = await complete(stores, clock, second, "telegram", "42", "Action items: ship the CLI.");
  await attempt(stores, clock, ambiguous.outboxId!, "ambiguous");

  const third = await admit(stores, clock, slackKey, "Post the deploy notes");
  const failed = await complete(stores, clock, third, "slack", "C9", "Deploy notes: all green.");
  await attempt(stores, clock, failed.outboxId!, "failed");

  const fourth = await admit(stores, clock, slackKey, "Thanks!");
  const pending = await complete(stores, clock, fourth, "slack", "C9", "You're welcome.");

  const queued = await admit(stores, clock, telegramKey, "One more thing");

  const scheduleService = createScheduleService({
    repository: stores.schedules,
    clock,
    dispatch: async () => ({ status: "terminal", reason: "seed never fires" }),
  });
  const target = { replyTarget: "42", channel: "telegram" as const };
  const daily = await scheduleService.create({
    ...target,
    conversationId: first.conversationId,
    chatKey: "telegram:1:dm:42",
    createdBy: "user",
    prompt: "Summarise my inbox",
    when: { kind: "cron", expression: "0 8 * * *" },
    timezone: "Europe/Berlin",
  });
  const toPause = await scheduleService.create({
    replyTarget: "C9",
    channel: "slack",
    conversationId: third.conversationId,
    createdBy: "agent",
    prompt: "Remind the team about the retro",
    when: { kind: "after", delayMs: 3_600_000 },
  });
  const paused = await scheduleService.pause(toPause.id);
  const toCancel = await scheduleService.create({
    ...target,
    conversationId: first.conversationId,
    createdBy: "operator",
    prompt: "Weekly report",
    when: { kind: "interval", intervalMs: 7 * 86_400_000 },
    timezone: "UTC",
  });
  const cancelled = await scheduleService.cancel(toCancel.id);

  return {
    stores,
    clock,
    telegram: { conversationId: first.conversationId, key: telegramKey },
    slack: { conversationId: third.conversationId, key: slackKey },
    delivered,
    ambiguous,
    failed,
    pending,
    queuedRunId: queued.runId,
    schedules: { daily, paused, cancelled },
  };
}
