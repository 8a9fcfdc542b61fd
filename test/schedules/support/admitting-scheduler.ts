/**
 * One scheduler instance in its own process, wired like the gateway: the real SQLite stores, and a
 * dispatch that admits a run with the occurrence's idempotency key (admit-only runtime). Each
 * admission is appended to `<log file>` as a JSON line (synchronously, so a crash cannot lose it).
 * Runs until nothing is pending any more, at most `<maxMs>`.
 * With `crash-after-admission` the process SIGKILLs itself right after its first admission, before
 * the occurrence is settled. SWITCHBOARD_TEST_KILL_POINT=schedule.claimed crashes it after the claim.
 * With `take-over` it starts the way the gateway does, ending other owners' leases first.
 * Usage: bun admitting-scheduler.ts <db file> <log file> <owner> <leaseMs> <maxMs> [crash-after-admission|take-over]
 */
import { appendFileSync } from "node:fs";
import { createScheduleService } from "../../../schedules/service.ts";
import { toUsage } from "../../../src/models/usage.ts";
import { Runtime } from "../../../src/runtime/runtime.ts";
import { openSqliteStores } from "../../../src/store/sqlite/index.ts";
import { systemClock } from "../../../src/util/clock.ts";
import { createScriptedModel } from "../../support/llm/scripted-model.ts";

const [file, logFile, owner, leaseArg, maxArg, mode] = process.argv.slice(2);
const leaseMs = Number(leaseArg);
const maxMs = Number(maxArg);
if (!file || !logFile || !owner || !(leaseMs > 0) || !(maxMs > 0)) {
  throw new Error(
    "usage: admitting-scheduler.ts <db file> <log file> <owner> <leaseMs> <maxMs> [crash-after-admission|take-over]",
  );
}

const stores = openSqliteStores(file);
const runtime = new Runtime({
  store: stores.runtime,
  models: [{ label: "unused", model: createScriptedModel([]) }],
  readUsage: toUsage,
  executeRuns: false,
});
const service = createScheduleService({
  repository: stores.schedules,
  clock: systemClock,
  owner,
  leaseMs,
  dispatchDeadlineMs: Math.floor(leaseMs / 2),
  dispatch: async (request) => {
    const admission = await runtime.submit({
      conversationId: request.schedule.conversationId,
      idempotencyKey: request.idempotencyKey,
      parts: [{ type: "text", text: request.schedule.prompt }],
      context: { origin: "schedule" },
      policy: "queue",
    }).admission;
    appendFileSync(
      logFile,
      `${JSON.stringify({ owner, key: request.idempotencyKey, runId: admission.runId, outcome: admission.outcome, lateByMs: request.lateByMs })}\n`,
    );
    if (mode === "crash-after-admission") process.kill(process.pid, "SIGKILL");
    return { status: "ok", runId: admission.runId };
  },
  onEvent: (event) => {
    if (event.type === "dispatched") return;
    const detail = event.type === "store-error" ? String(event.error) : event;
    appendFileSync(logFile, `${JSON.stringify({ owner, event: event.type, detail })}\n`);
  },
});

await service.start({ takeOverLeases: mode === "take-over" });
const deadlineMs = Date.now() + maxMs;
while (Date.now() < deadlineMs && (await stores.schedules.nextDueAtMs()) !== null) await Bun.sleep(50);
await service.stop();
await runtime.close({ gracePeriodMs: 0 });
stores.close();
