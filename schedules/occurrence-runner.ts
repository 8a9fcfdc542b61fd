import { isSwitchboardError, SwitchboardError } from "../src/errors.ts";
import type { Clock } from "../src/util/clock.ts";
import { killPoint } from "../src/util/kill-point.ts";
import { decideRetry } from "./backoff.ts";
import { nextSlotAfter } from "./cadence.ts";
import {
  dispatchResultSchema,
  type OccurrenceClaim,
  type OccurrenceSettlement,
  type Schedule,
  type ScheduleAdvance,
  type ScheduleDispatch,
  type ScheduleEvent,
  type ScheduleRepository,
} from "./types.ts";

/** Failure reasons are stored and shown; keep them bounded. */
export const MAX_ERROR_CHARS = 1000;

export function truncateError(text: string): string {
  return text.length <= MAX_ERROR_CHARS ? text : `${text.slice(0, MAX_ERROR_CHARS - 1)}…`;
}

/** How one dispatch attempt ended, before it is turned into a settlement. */
type AttemptOutcome =
  | { kind: "ok"; runId: string }
  | { kind: "retry"; reason: string; retryAfterMs?: number }
  | { kind: "terminal"; reason: string };

export interface OccurrenceRunnerOptions {
  repository: ScheduleRepository;
  dispatch: ScheduleDispatch;
  clock: Clock;
  owner: string;
  leaseMs: number;
  dispatchDeadlineMs: number;
  missedGraceMs: number;
  emit: (event: ScheduleEvent) => void;
  /** Controllers of dispatches in flight, so stop() can abort them. */
  inFlight: Set<AbortController>;
}

/** The slot after the current one is done with at `nowMs`: the first slot of the cadence after now. */
export function advanceAfter(schedule: Schedule, slotMs: number, nowMs: number): ScheduleAdvance {
  if (schedule.kind === "at") return { state: "completed" };
  const nextAtMs = nextSlotAfter(schedule.spec, schedule.timezone, Math.max(slotMs, nowMs));
  return nextAtMs === null ? { state: "completed" } : { state: "active", nextAtMs };
}

/** Handles one due schedule: the missed-slot policy, claim, dispatch under a deadline, settle. */
export function createOccurrenceRunner(options: OccurrenceRunnerOptions) {
  const { repository, clock, emit } = options;

  async function skip(schedule: Schedule, slotMs: number, reason: string): Promise<void> {
    const nowMs = clock.now();
    const skipped = await repository.skipOccurrence({
      scheduleId: schedule.id,
      expectedVersion: schedule.version,
      scheduledForMs: slotMs,
      reason,
      advance: advanceAfter(schedule, slotMs, nowMs),
      nowMs,
    });
    if (skipped)
      emit({ type: "occurrence-skipped", scheduleId: schedule.id, scheduledForMs: slotMs, reason });
  }

  async function attempt(schedule: Schedule, claim: OccurrenceClaim): Promise<AttemptOutcome> {
    const controller = new AbortController();
    options.inFlight.add(controller);
    const deadline = clock.setTimer(options.dispatchDeadlineMs, () =>
      controller.abort(
        new SwitchboardError(
          "platform_timeout",
          `Dispatch of schedule ${schedule.id} did not finish within its ${options.dispatchDeadlineMs} ms deadline.`,
          { retryable: true },
        ),
      ),
    );
    const aborted = new Promise<AttemptOutcome>((resolve) => {
      const onAbort = () => resolve({ kind: "retry", reason: reasonOf(controller.signal.reason) });
      if (controller.signal.aborted) onAbort();
      else controller.signal.addEventListener("abort", onAbort, { once: true });
    });
    const nowMs = clock.now();
    const occurrenceKey = `${schedule.id}:${claim.scheduledForMs}`;
    const call = (async (): Promise<AttemptOutcome> => {
      try {
        const returned = await options.dispatch({
          schedule,
          occurrenceKey,
          idempotencyKey: `schedule:${occurrenceKey}`,
          scheduledForMs: claim.scheduledForMs,
          lateByMs: Math.max(0, nowMs - claim.scheduledForMs),
          signal: controller.signal,
        });
        const parsed = dispatchResultSchema.safeParse(returned);
        if (!parsed.success) {
          return {
            kind: "retry",
            reason: `dispatch returned ${JSON.stringify(returned)?.slice(0, 200)}; expected { status: "ok", runId } or { status: "retry" | "terminal", reason }`,
          };
        }
        const result = parsed.data;
        if (result.status === "ok") return { kind: "ok", runId: result.runId };
        return { kind: result.status, reason: result.reason };
      } catch (error) {
        const retryAfterMs = isSwitchboardError(error) ? error.retryAfterMs : undefined;
        return retryAfterMs === undefined
          ? { kind: "retry", reason: reasonOf(error) }
          : { kind: "retry", reason: reasonOf(error), retryAfterMs };
      }
    })();
    try {
      return await Promise.race([call, aborted]);
    } finally {
      deadline.cancel();
      options.inFlight.delete(controller);
    }
  }

  function toSettlement(
    schedule: Schedule,
    claim: OccurrenceClaim,
    outcome: AttemptOutcome,
    nowMs: number,
  ): OccurrenceSettlement {
    const slotMs = claim.scheduledForMs;
    switch (outcome.kind) {
      case "ok":
        return {
          outcome: "dispatched",
          runId: outcome.runId,
          advance: advanceAfter(schedule, slotMs, nowMs),
        };
      case "terminal":
        return {
          outcome: "failed",
          error: truncateError(`dispatch refused the schedule for good: ${outcome.reason}`),
          advance: { state: "failed" },
        };
      case "retry": {
        const decision = decideRetry(claim.attempt, schedule.maxAttempts, outcome.retryAfterMs);
        if (decision.retry) {
          return {
            outcome: "retry",
            error: truncateError(outcome.reason),
            retryAtMs: nowMs + decision.delayMs,
          };
        }
        return {
          outcome: "failed",
          error: truncateError(`gave up after ${claim.attempt} attempts: ${outcome.reason}`),
          advance: schedule.kind === "at" ? { state: "failed" } : advanceAfter(schedule, slotMs, nowMs),
        };
      }
    }
  }

  return async function runDueSchedule(listed: Schedule): Promise<void> {
    const slotMs = listed.nextAtMs;
    if (slotMs === null) return;
    const lateByMs = clock.now() - slotMs;
    if (listed.attempts === 0 && lateByMs > options.missedGraceMs && listed.missedPolicy === "skip") {
      await skip(
        listed,
        slotMs,
        `missed by ${lateByMs} ms while no scheduler was running (missedPolicy skip)`,
      );
      return;
    }
    const claimedAtMs = clock.now();
    const claimed = await repository.claimOccurrence({
      scheduleId: listed.id,
      expectedVersion: listed.version,
      scheduledForMs: slotMs,
      owner: options.owner,
      nowMs: claimedAtMs,
      leaseMs: options.leaseMs,
    });
    if (!claimed.claimed) {
      if (claimed.reason === "settled") await skip(listed, slotMs, "slot already has a final outcome");
      return;
    }
    const { claim, schedule } = claimed;
    killPoint("schedule.claimed");
    const outcome = await attempt(schedule, claim);
    const nowMs = clock.now();
    const settlement = toSettlement(schedule, claim, outcome, nowMs);
    const result = await repository.settleOccurrence(claim, settlement, nowMs);
    if (!result.settled) {
      emit({
        type: "settle-refused",
        scheduleId: claim.scheduleId,
        scheduledForMs: claim.scheduledForMs,
        fencingToken: claim.fencingToken,
      });
      return;
    }
    const base = { scheduleId: schedule.id, scheduledForMs: slotMs, attempt: claim.attempt };
    switch (settlement.outcome) {
      case "dispatched":
        emit({
          type: "dispatched",
          ...base,
          runId: settlement.runId,
          lateByMs: Math.max(0, claimedAtMs - slotMs),
        });
        break;
      case "retry":
        emit({ type: "retry-scheduled", ...base, retryAtMs: settlement.retryAtMs, error: settlement.error });
        break;
      case "failed":
        emit({
          type: "occurrence-failed",
          ...base,
          error: settlement.error,
          scheduleState: result.schedule?.state ?? "failed",
          nextAtMs: result.schedule?.nextAtMs ?? null,
        });
        break;
    }
  };
}

function reasonOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === "string" ? error : `non-error thrown: ${String(error)}`;
}
