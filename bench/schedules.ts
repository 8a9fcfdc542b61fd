/**
 * The schedule service at scale, on the gateway's real SQLite stores, with a dispatch that admits
 * a run the way the gateway does (runtime.submit with the occurrence's idempotency key; runs are
 * admitted, not executed):
 * - memory: RSS and heap before and after 10,000 active schedules are created and the service runs;
 * - idle: CPU time, store calls and timer fires over `--idle-seconds` with nothing due (target:
 *   near zero), against the same window with the service stopped (the process's own baseline);
 * - lateness: `--due` one-off schedules due within one second (spread evenly), then as many due at
 *   one instant; how late each dispatch started (`lateByMs`) and when its run was admitted,
 *   p50/p99/max (target p99 < 1 s).
 *   npx bun bench/schedules.ts [--schedules 10000] [--idle-seconds 60] [--due 1000]
 */
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { createScheduleService } from "../schedules/service.ts";
import type { ScheduleRepository } from "../schedules/types.ts";
import { toUsage } from "../src/models/usage.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { type Clock, systemClock } from "../src/util/clock.ts";
import { createScriptedModel } from "../test/support/llm/scripted-model.ts";
import { tempDir } from "../test/support/runtime.ts";
import { argInt } from "./util.ts";

const scheduleCount = argInt("--schedules", 10_000);
const idleSeconds = argInt("--idle-seconds", 60);
const dueCount = argInt("--due", 1_000);
/** The per-conversation limit is 20 live schedules; 10 per conversation leaves room for the due ones. */
const SCHEDULES_PER_CONVERSATION = 10;
/** Lead time before the burst, so creating the due schedules never eats into it. */
const BURST_LEAD_MS = 5_000;

const IDLE_SETTLE_MS = 5_000;
const MB = 1024 * 1024;
const dir = tempDir("switchboard-bench-schedules-");
const stores = openSqliteStores(join(dir.path, "schedules.sqlite"));
const runtime = new Runtime({
  store: stores.runtime,
  models: [{ label: "unused", model: createScriptedModel([]) }],
  readUsage: toUsage,
  executeRuns: false,
});

/** Counts every repository call, so "idle reads nothing" is measured rather than assumed. */
function countingRepository(inner: ScheduleRepository): {
  repository: ScheduleRepository;
  calls: () => number;
} {
  let calls = 0;
  const repository = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls += 1;
        return value.apply(target, args);
      };
    },
  });
  return { repository, calls: () => calls };
}

/** The system clock, counting how often a one-shot timer fired. */
function countingClock(): Clock & { fires: () => number } {
  let fires = 0;
  return {
    ...systemClock,
    setTimer: (delayMs, callback, options) =>
      systemClock.setTimer(
        delayMs,
        () => {
          fires += 1;
          callback();
        },
        options,
      ),
    fires: () => fires,
  };
}

interface Fired {
  lateByMs: number;
  admittedLateMs: number;
  admittedAtMs: number;
}
const fired = new Map<string, Fired>();
const counted = countingRepository(stores.schedules);
const clock = countingClock();
const service = createScheduleService({
  repository: counted.repository,
  clock,
  limits: { maxSchedulesPerConversation: SCHEDULES_PER_CONVERSATION * 2 },
  dispatch: async (request) => {
    const admission = await runtime.submit({
      conversationId: request.schedule.conversationId,
      idempotencyKey: request.idempotencyKey,
      parts: [{ type: "text", text: `[Scheduled prompt ${request.schedule.id}] ${request.schedule.prompt}` }],
      context: { origin: "schedule" },
      policy: "queue",
    }).admission;
    const admittedAtMs = systemClock.now();
    fired.set(request.idempotencyKey, {
      lateByMs: request.lateByMs,
      admittedLateMs: admittedAtMs - request.scheduledForMs,
      admittedAtMs,
    });
    return { status: "ok", runId: admission.runId };
  },
});

const rssMb = () => process.memoryUsage().rss / MB;
const heapMb = () => process.memoryUsage().heapUsed / MB;
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

// 1. Memory with 10,000 active schedules: a third daily cron, a third hourly interval, a third
// one-offs a week away; none is due during the run.
Bun.gc(true);
const rssBeforeMb = rssMb();
const heapBeforeMb = heapMb();
await service.start();
const createStartMs = performance.now();
const nowMs = systemClock.now();
for (let i = 0; i < scheduleCount; i++) {
  const target = {
    conversationId: `conv_bench_${Math.floor(i / SCHEDULES_PER_CONVERSATION)}`,
    replyTarget: `chat-${i}`,
    channel: "telegram" as const,
    createdBy: "user" as const,
    prompt: `summarise item ${i}`,
  };
  const minuteOfHour = (new Date(nowMs).getUTCMinutes() + 30) % 60; // half an hour from now or later
  if (i % 3 === 0) {
    await service.create({
      ...target,
      when: { kind: "cron", expression: `${minuteOfHour} ${i % 24} * * *` },
      timezone: "UTC",
    });
  } else if (i % 3 === 1) {
    await service.create({
      ...target,
      when: { kind: "interval", intervalMs: 3_600_000, firstAtMs: nowMs + 1_800_000 + i },
      timezone: "UTC",
    });
  } else {
    await service.create({ ...target, when: { kind: "at", atMs: nowMs + 7 * 86_400_000 + i } });
  }
}
const createSeconds = (performance.now() - createStartMs) / 1000;
Bun.gc(true);
const rssAfterMb = rssMb();
const heapAfterMb = heapMb();
const nextDueMs = await stores.schedules.nextDueAtMs();

// 2. Idle: nothing is due within the window. The same window with the service stopped is the
// baseline: what the Bun process spends by itself (GC, its own timers) with this heap.
if (nextDueMs !== null && nextDueMs < systemClock.now() + IDLE_SETTLE_MS + 2 * idleSeconds * 1000 + 60_000) {
  throw new Error(`a schedule is due during the idle windows (${new Date(nextDueMs).toISOString()})`);
}
async function idleWindow(): Promise<{
  cpuMs: number;
  wallMs: number;
  storeCalls: number;
  timerFires: number;
}> {
  const callsBefore = counted.calls();
  const firesBefore = clock.fires();
  const cpuBefore = process.cpuUsage();
  const startMs = performance.now();
  await Bun.sleep(idleSeconds * 1000);
  const cpu = process.cpuUsage(cpuBefore);
  return {
    cpuMs: (cpu.user + cpu.system) / 1000,
    wallMs: performance.now() - startMs,
    storeCalls: counted.calls() - callsBefore,
    timerFires: clock.fires() - firesBefore,
  };
}
// Let the collector and JIT finish with the creation phase first, or the first window pays for it.
await Bun.sleep(IDLE_SETTLE_MS);
const idle = await idleWindow();
await service.stop();
const baseline = await idleWindow();
await service.start();

// 3. Lateness: one-offs due within one second (spread evenly over it), then all at one instant.
async function burst(
  spreadMs: number,
): Promise<{ lateBy: number[]; admittedLate: number[]; spanMs: number }> {
  const burstAtMs = systemClock.now() + BURST_LEAD_MS;
  const keys: string[] = [];
  for (let i = 0; i < dueCount; i++) {
    const atMs = burstAtMs + Math.floor((i * spreadMs) / dueCount);
    const schedule = await service.create({
      conversationId: `conv_bench_${i % Math.ceil(scheduleCount / SCHEDULES_PER_CONVERSATION)}`,
      replyTarget: `chat-due-${i}`,
      channel: "telegram",
      createdBy: "user",
      prompt: `due ${spreadMs} ${i}`,
      when: { kind: "at", atMs },
    });
    keys.push(`schedule:${schedule.id}:${atMs}`);
  }
  if (systemClock.now() >= burstAtMs) {
    throw new Error(`creating ${dueCount} schedules took longer than the ${BURST_LEAD_MS} ms lead`);
  }
  const deadlineMs = burstAtMs + 60_000;
  while (keys.some((key) => !fired.has(key)) && systemClock.now() < deadlineMs) await Bun.sleep(20);
  const results = keys.flatMap((key) => fired.get(key) ?? []);
  if (results.length !== dueCount) {
    throw new Error(`only ${results.length} of ${dueCount} due schedules fired within 60 s`);
  }
  return {
    lateBy: results.map((r) => r.lateByMs).sort((a, b) => a - b),
    admittedLate: results.map((r) => r.admittedLateMs).sort((a, b) => a - b),
    spanMs: Math.max(...results.map((r) => r.admittedAtMs)) - burstAtMs,
  };
}
const spread = await burst(1000);
const instant = await burst(0);
const admissions = (
  stores.db.query("SELECT count(*) AS n FROM messages WHERE idempotency_key LIKE 'schedule:%'").get() as {
    n: number;
  }
).n;
// Admit-only: a run that left `queued` means this bench measured model execution too.
const executed = (
  stores.db.query("SELECT count(*) AS n FROM runs WHERE state != 'queued'").get() as { n: number }
).n;

await service.stop();
await runtime.close({ gracePeriodMs: 0 });
stores.close();
dir.cleanup();

const ms = (value: number) => `${Math.round(value).toString().padStart(6)} ms`;
const percentOfCore = (window: { cpuMs: number; wallMs: number }) =>
  `${((window.cpuMs / window.wallMs) * 100).toFixed(3)}% of one core`;
const row = (label: string, value: string) => console.log(`  ${label.padEnd(44)} ${value}`);
const latenessRow = (label: string, sorted: number[]) =>
  row(
    label,
    `p50 ${ms(percentile(sorted, 50))}   p99 ${ms(percentile(sorted, 99))}   max ${ms(sorted.at(-1) ?? 0)}`,
  );
console.log(
  `\nschedules (${scheduleCount} active, real SQLite stores, admission-only dispatch; load average ${loadavg()[0]?.toFixed(1)} on ${availableParallelism()} cores)`,
);
row(`create ${scheduleCount} via service.create`, `${(scheduleCount / createSeconds).toFixed(0)} /s`);
row(
  "RSS before / after",
  `${rssBeforeMb.toFixed(1)} MB / ${rssAfterMb.toFixed(1)} MB   (+${(rssAfterMb - rssBeforeMb).toFixed(1)} MB)`,
);
row(
  "JS heap before / after",
  `${heapBeforeMb.toFixed(1)} MB / ${heapAfterMb.toFixed(1)} MB   (+${(heapAfterMb - heapBeforeMb).toFixed(1)} MB)`,
);
row(
  `idle ${idleSeconds} s, service running: CPU`,
  `${idle.cpuMs.toFixed(1)} ms (${percentOfCore(idle)})   target near 0`,
);
row(
  `idle ${idleSeconds} s, service stopped: CPU`,
  `${baseline.cpuMs.toFixed(1)} ms (${percentOfCore(baseline)})   the process by itself`,
);
row(
  `idle ${idleSeconds} s: store calls / timer fires`,
  `${idle.storeCalls} / ${idle.timerFires}   target 0 / 0`,
);
latenessRow(`${dueCount} due within one second: lateByMs`, spread.lateBy);
latenessRow(`${dueCount} due within one second: admitted late`, spread.admittedLate);
row(`${dueCount} due within one second: all admitted`, `${ms(spread.spanMs)} after the first slot`);
latenessRow(`${dueCount} due at one instant: lateByMs`, instant.lateBy);
latenessRow(`${dueCount} due at one instant: admitted late`, instant.admittedLate);
row(`${dueCount} due at one instant: all admitted`, `${ms(instant.spanMs)} after the slot`);
row(`runs admitted for ${2 * dueCount} occurrences / executed`, `${admissions} / ${executed}`);
if (admissions !== 2 * dueCount || executed !== 0) process.exit(1);
