import { SwitchboardError } from "../src/errors.ts";
import type { Clock, Timer } from "../src/util/clock.ts";
import { newId } from "../src/util/ids.ts";
import { nextSlotAfter } from "./cadence.ts";
import { createOccurrenceRunner } from "./occurrence-runner.ts";
import {
  type CreateScheduleInput,
  checkPrompt,
  createScheduleInputSchema,
  DEFAULT_SCHEDULE_LIMITS,
  type EditScheduleInput,
  editScheduleInputSchema,
  planTiming,
  refuse,
  type ScheduleLimits,
  type ScheduleWhen,
  zodMessage,
} from "./plan.ts";
import {
  LIVE_SCHEDULE_STATES,
  type Occurrence,
  SCHEDULE_STATES,
  type Schedule,
  type ScheduleDispatch,
  type ScheduleEvent,
  type ScheduleRepository,
  type ScheduleTarget,
  type ScheduleTiming,
} from "./types.ts";

export type { CreateScheduleInput, EditScheduleInput, ScheduleLimits, ScheduleWhen } from "./plan.ts";

export interface ScheduleServiceOptions {
  repository: ScheduleRepository;
  /** Admits one occurrence as a run; see ScheduleDispatch. */
  dispatch: ScheduleDispatch;
  /** Time, and the one timer armed at the nearest due time. */
  clock: Clock;
  /** Names this instance in leases. Default: a fresh `sched_…` id. */
  owner?: string;
  limits?: Partial<ScheduleLimits>;
  /** How long a claim holds a slot before another instance may take it over. Default 60 000. */
  leaseMs?: number;
  /** Abort a dispatch after this long and retry it. Default 30 000; must be below leaseMs. */
  dispatchDeadlineMs?: number;
  /** Most occurrences dispatched in parallel by one tick. Default 32. */
  batchLimit?: number;
  /** A first attempt later than this counts as missed (missedPolicy applies). Default 60 000. */
  missedGraceMs?: number;
  /** Delay before a tick is retried after a storage failure. Default 5000. */
  storeRecoveryMs?: number;
  /** Observes dispatches, retries, skips and failures (logs, tests). Must not throw. */
  onEvent?: (event: ScheduleEvent) => void;
}

export interface ScheduleService {
  /** Arms the timer and handles anything already due. Idempotent. */
  /**
   * Arms the timer and handles what is due. With `takeOverLeases`, leases held by other owners end
   * first — only for a single-process deployment (the embedded SQLite default).
   */
  start(options?: { takeOverLeases?: boolean }): Promise<void>;
  /** Clears the timer, aborts dispatches in flight (they are retried later) and waits for the tick to end. */
  stop(): Promise<void>;
  /** Validates and stores a schedule. Throws SwitchboardError input_invalid with a hint on refusal. */
  create(input: CreateScheduleInput): Promise<Schedule>;
  get(id: string): Promise<Schedule | null>;
  /** A conversation's active and paused schedules (with `includeEnded`, all of them), oldest first. */
  list(conversationId: string, options?: { includeEnded?: boolean }): Promise<Schedule[]>;
  /** A chat's active and paused schedules across /new (see ScheduleTarget.chatKey), oldest first. */
  listForChat(
    chat: Pick<ScheduleTarget, "conversationId" | "chatKey">,
    options?: { includeEnded?: boolean },
  ): Promise<Schedule[]>;
  pause(id: string): Promise<Schedule>;
  /** A recurring schedule resumes at its next future slot; a one-off keeps its time (and fires late if it passed). */
  resume(id: string): Promise<Schedule>;
  cancel(id: string): Promise<Schedule>;
  /** Replaces timing and/or prompt; bumps the version so a slot of the old timing never fires. */
  edit(id: string, change: EditScheduleInput): Promise<Schedule>;
  /** Most recent occurrences of a schedule, newest first. */
  occurrences(id: string, limit?: number): Promise<Occurrence[]>;
  /** Handles up to batchLimit due schedules now, then re-arms. For tests, the CLI and benches. */
  tick(): Promise<void>;
}

export function createScheduleService(options: ScheduleServiceOptions): ScheduleService {
  const { repository, clock } = options;
  const limits: ScheduleLimits = { ...DEFAULT_SCHEDULE_LIMITS, ...options.limits };
  const leaseMs = options.leaseMs ?? 60_000;
  const dispatchDeadlineMs = options.dispatchDeadlineMs ?? 30_000;
  if (dispatchDeadlineMs >= leaseMs) {
    throw new SwitchboardError(
      "config_invalid",
      `dispatchDeadlineMs (${dispatchDeadlineMs}) must be shorter than leaseMs (${leaseMs}), or a slow dispatch could be taken over while it still runs.`,
    );
  }
  const batchLimit = options.batchLimit ?? 32;
  const storeRecoveryMs = options.storeRecoveryMs ?? 5000;
  const emit = (event: ScheduleEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // An observer's fault must not stop scheduling.
    }
  };
  const owner = options.owner ?? newId("sched", clock.now());
  const inFlight = new Set<AbortController>();
  const runDueSchedule = createOccurrenceRunner({
    repository,
    dispatch: options.dispatch,
    clock,
    owner,
    leaseMs,
    dispatchDeadlineMs,
    missedGraceMs: options.missedGraceMs ?? 60_000,
    emit,
    inFlight,
  });

  let started = false;
  let armed: Timer | null = null;
  let ticking: Promise<void> | null = null;
  let tickAgain = false;

  function setTimer(delayMs: number): void {
    armed?.cancel();
    armed = clock.setTimer(delayMs, function onScheduleTimer() {
      armed = null;
      void tick();
    });
  }

  /** Points the single timer at the nearest due time; an idle service keeps no timer at all. */
  async function arm(): Promise<void> {
    if (!started) return;
    try {
      const dueAtMs = await repository.nextDueAtMs();
      if (!started) return;
      if (dueAtMs === null) {
        armed?.cancel();
        armed = null;
      } else {
        setTimer(dueAtMs - clock.now());
      }
    } catch (error) {
      emit({ type: "store-error", error, retryInMs: storeRecoveryMs });
      if (started) setTimer(storeRecoveryMs);
    }
  }

  async function runBatch(): Promise<void> {
    let due: Schedule[];
    try {
      due = await repository.listDue(clock.now(), batchLimit);
    } catch (error) {
      emit({ type: "store-error", error, retryInMs: storeRecoveryMs });
      if (started) setTimer(storeRecoveryMs);
      return;
    }
    let failed = false;
    await Promise.all(
      due.map((schedule) =>
        runDueSchedule(schedule).catch((error: unknown) => {
          // The slot stays due (or leased) in the store; retrying at once could spin on a
          // persistent fault, so the next attempt waits for the recovery delay.
          failed = true;
          emit({ type: "store-error", error, retryInMs: storeRecoveryMs });
        }),
      ),
    );
    if (failed) {
      if (started) setTimer(storeRecoveryMs);
      return;
    }
    await arm();
  }

  function tick(): Promise<void> {
    if (ticking) {
      tickAgain = true;
      return ticking;
    }
    ticking = (async () => {
      try {
        do {
          tickAgain = false;
          await runBatch();
        } while (tickAgain && started);
      } finally {
        ticking = null;
      }
    })();
    return ticking;
  }

  async function load(id: string): Promise<Schedule> {
    const schedule = await repository.get(id);
    if (!schedule) {
      throw new SwitchboardError("not_found", `No schedule with id ${id}.`, {
        details: { hint: "List schedules with /schedules to see their ids." },
      });
    }
    return schedule;
  }

  async function afterWrite<T>(value: T): Promise<T> {
    if (!ticking) await arm();
    else tickAgain = true;
    return value;
  }

  function wrongState(schedule: Schedule, action: string): SwitchboardError {
    return new SwitchboardError(
      "state_conflict",
      `Schedule ${schedule.id} is ${schedule.state}; it cannot be ${action}.`,
      { details: { hint: "List schedules with /schedules.", state: schedule.state } },
    );
  }

  return {
    async start(startOptions = {}) {
      if (started) return;
      started = true;
      if (startOptions.takeOverLeases)
        await repository.expireLeases({ exceptOwner: owner, nowMs: clock.now() });
      await tick();
    },

    async stop() {
      started = false;
      armed?.cancel();
      armed = null;
      for (const controller of inFlight) {
        controller.abort(
          new SwitchboardError("runtime_closed", "The scheduler stopped during dispatch.", {
            retryable: true,
          }),
        );
      }
      await ticking;
    },

    async create(input) {
      const parsed = createScheduleInputSchema.safeParse(input);
      if (!parsed.success) {
        throw refuse(
          `Invalid schedule: ${zodMessage(parsed.error)}.`,
          "See CreateScheduleInput for the fields.",
        );
      }
      const request = parsed.data;
      if (request.id !== undefined) {
        const existing = await repository.get(request.id);
        if (existing) return existing;
      }
      checkPrompt(request.prompt, limits);
      const nowMs = clock.now();
      const { timing, nextAtMs } = planTiming(request.when, request.timezone, nowMs, limits);
      const schedule: Schedule = {
        id: request.id ?? newId("sch", nowMs),
        conversationId: request.conversationId,
        chatKey: request.chatKey,
        replyTarget: request.replyTarget,
        channel: request.channel,
        createdBy: request.createdBy,
        prompt: request.prompt,
        ...timing,
        missedPolicy: request.missedPolicy,
        maxAttempts: request.maxAttempts,
        state: "active",
        nextAtMs,
        attempts: 0,
        retryAtMs: null,
        lastError: null,
        lastFiredAtMs: null,
        version: 1,
        createdAtMs: nowMs,
        updatedAtMs: nowMs,
      };
      const result = await repository.insert(schedule, limits.maxSchedulesPerConversation);
      if (!result.inserted) {
        throw refuse(
          `This chat already has ${result.liveCount} schedules, the limit is ${limits.maxSchedulesPerConversation}.`,
          "Cancel one first (/schedules lists them, /cancel <id> removes one).",
          { liveCount: result.liveCount, limit: limits.maxSchedulesPerConversation },
        );
      }
      return afterWrite(schedule);
    },

    get: (id) => repository.get(id),

    list(conversationId, listOptions) {
      return repository.listByConversation(
        conversationId,
        listOptions?.includeEnded ? SCHEDULE_STATES : LIVE_SCHEDULE_STATES,
      );
    },

    listForChat(chat, listOptions) {
      const states = listOptions?.includeEnded ? SCHEDULE_STATES : LIVE_SCHEDULE_STATES;
      return chat.chatKey === null
        ? repository.listByConversation(chat.conversationId, states)
        : repository.listByChat(chat.chatKey, states);
    },

    async pause(id) {
      const current = await load(id);
      // Pausing twice (a double click, a retried request) changes nothing and is no error.
      if (current.state === "paused") return current;
      const paused = await repository.pause(id, clock.now());
      if (!paused) throw wrongState(await load(id), "paused");
      return afterWrite(paused);
    },

    async resume(id) {
      const current = await load(id);
      if (current.state !== "paused" || current.nextAtMs === null) throw wrongState(current, "resumed");
      const nowMs = clock.now();
      const nextAtMs =
        current.kind === "at"
          ? current.nextAtMs
          : (nextSlotAfter(current.spec, current.timezone, Math.max(nowMs, current.nextAtMs - 1)) ??
            current.nextAtMs);
      const resumed = await repository.resume(id, nextAtMs, nowMs);
      if (!resumed) throw wrongState(await load(id), "resumed");
      return afterWrite(resumed);
    },

    async cancel(id) {
      const cancelled = await repository.cancel(id, clock.now());
      if (!cancelled) throw wrongState(await load(id), "cancelled");
      return afterWrite(cancelled);
    },

    async edit(id, change) {
      const parsed = editScheduleInputSchema.safeParse(change);
      if (!parsed.success)
        throw refuse(`Invalid edit: ${zodMessage(parsed.error)}.`, "See EditScheduleInput.");
      const request = parsed.data;
      const current = await load(id);
      if (request.expectedVersion !== undefined && request.expectedVersion !== current.version) {
        throw new SwitchboardError(
          "version_conflict",
          `Schedule ${id} is at version ${current.version}, not ${request.expectedVersion}: it changed meanwhile.`,
          { details: { hint: "Read it again and repeat the edit." } },
        );
      }
      if (request.prompt !== undefined) checkPrompt(request.prompt, limits);
      const nowMs = clock.now();
      let planned: { timing: ScheduleTiming; nextAtMs: number } | null = null;
      if (request.when) {
        planned = planTiming(request.when, request.timezone ?? current.timezone ?? undefined, nowMs, limits);
      } else if (request.timezone !== undefined) {
        const when: ScheduleWhen =
          current.spec.type === "at"
            ? { kind: "at", atMs: current.spec.atMs }
            : current.spec.type === "cron"
              ? { kind: "cron", expression: current.spec.expression }
              : { kind: "interval", intervalMs: current.spec.intervalMs, firstAtMs: current.spec.anchorMs };
        planned = planTiming(when, request.timezone, nowMs, limits);
      }
      const edited = await repository.edit(
        id,
        current.version,
        {
          ...(planned ? { timing: planned.timing } : {}),
          ...(request.prompt !== undefined ? { prompt: request.prompt } : {}),
          ...(request.missedPolicy !== undefined ? { missedPolicy: request.missedPolicy } : {}),
          ...(request.maxAttempts !== undefined ? { maxAttempts: request.maxAttempts } : {}),
          nextAtMs: planned?.nextAtMs ?? current.nextAtMs ?? nowMs,
        },
        nowMs,
      );
      if (!edited) {
        const latest = await load(id);
        if (latest.version !== current.version) {
          throw new SwitchboardError(
            "version_conflict",
            `Schedule ${id} changed while it was being edited.`,
            {
              details: { hint: "Read it again and repeat the edit." },
            },
          );
        }
        throw wrongState(latest, "edited");
      }
      return afterWrite(edited);
    },

    occurrences: (id, limit = 20) => repository.listOccurrences(id, limit),

    tick,
  };
}
