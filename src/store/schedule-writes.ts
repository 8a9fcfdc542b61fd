/**
 * The schedule repository's mutations, each written once for both engines (see steps.ts): a
 * generator yields the steps it needs ({@link ScheduleSteps}) and applies the decisions of
 * schedule-rules.ts between them; SQLite runs it in a `BEGIN IMMEDIATE` transaction, PostgreSQL in
 * a READ COMMITTED one that locks the schedule's row before it reads or writes its occurrences.
 */
import type {
  ClaimResult,
  OccurrenceClaim,
  OccurrenceSettlement,
  Schedule,
  ScheduleRepository,
  SettleResult,
} from "../../schedules/types.ts";
import { type OccurrenceRow, type ScheduleRow, toSchedule, toScheduleRow } from "./schedule-rows.ts";
import {
  type ClaimedOccurrence,
  type ClaimRequest,
  cancelUpdate,
  decideClaim,
  decideSettle,
  decideSkip,
  editUpdate,
  pauseUpdate,
  resumeUpdate,
  type ScheduleUpdate,
  type SkippedOccurrence,
  type SkipRequest,
} from "./schedule-rules.ts";
import { type Answer, type StepCall, stepsOf } from "./steps.ts";

/** The schedules' reads and writes, each inside the mutation's transaction. */
export interface ScheduleSteps {
  /** The schedule's row, locked until the transaction ends (PostgreSQL); null when there is none. */
  lockSchedule(id: string): ScheduleRow | null;
  /** The slot's occurrence row, locked the same way; null when the slot was never claimed or skipped. */
  lockOccurrence(scheduleId: string, scheduledForMs: number): OccurrenceRow | null;
  /** Updates the named columns of one schedule; the schedule as it now is. */
  updateSchedule(id: string, columns: Partial<ScheduleRow>): Schedule;
  /** Skips the schedule's `retrying` slot, which would otherwise look pending forever. */
  abandonRetrying(scheduleId: string, reason: string, nowMs: number): void;
  /**
   * How many active or paused schedules the schedule's chat (its conversation, without a chat key)
   * holds. PostgreSQL counts them under an advisory lock on that chat, so two inserts cannot both
   * pass the limit.
   */
  liveCount(schedule: Schedule): number;
  insertSchedule(row: ScheduleRow): void;
  /** Inserts a claimed slot, or overwrites the `RECLAIMED_COLUMNS` of the one there. */
  upsertClaimed(occurrence: ClaimedOccurrence): void;
  /** Inserts a skipped slot unless the slot has a row already. */
  insertSkipped(occurrence: SkippedOccurrence): void;
  updateOccurrence(scheduleId: string, scheduledForMs: number, columns: Partial<OccurrenceRow>): void;
  /** Ends every live lease not held by `exceptOwner` (see ScheduleRepository.expireLeases). */
  expireLeases(exceptOwner: string, nowMs: number): number;
}

/** A schedule mutation's procedure, as an engine runs it. */
export type ScheduleWrite<R> = Generator<StepCall<ScheduleSteps>, R, unknown>;

const step = stepsOf<ScheduleSteps>();
type A<K extends keyof ScheduleSteps> = Answer<ScheduleSteps, K>;

function* insert(
  schedule: Schedule,
  maxLive: number,
): ScheduleWrite<{ inserted: true } | { inserted: false; liveCount: number }> {
  const liveCount = (yield step("liveCount", schedule)) as A<"liveCount">;
  if (liveCount >= maxLive) return { inserted: false, liveCount };
  yield step("insertSchedule", toScheduleRow(schedule));
  return { inserted: true };
}

/** Applies the update `decide` returns for the schedule's locked row; null when it returns none. */
function* change(
  id: string,
  nowMs: number,
  decide: (row: ScheduleRow | null) => ScheduleUpdate | null,
): ScheduleWrite<Schedule | null> {
  const update = decide((yield step("lockSchedule", id)) as A<"lockSchedule">);
  if (!update) return null;
  if (update.abandonRetrying) yield step("abandonRetrying", id, update.abandonRetrying, nowMs);
  return (yield step("updateSchedule", id, update.columns)) as A<"updateSchedule">;
}

function* claim(request: ClaimRequest): ScheduleWrite<ClaimResult> {
  const { scheduleId, scheduledForMs } = request;
  const row = (yield step("lockSchedule", scheduleId)) as A<"lockSchedule">;
  const existing = row
    ? ((yield step("lockOccurrence", scheduleId, scheduledForMs)) as A<"lockOccurrence">)
    : null;
  const decision = decideClaim(row, existing, request);
  if (!decision.claimed) {
    if (decision.reason === "leased")
      yield step("updateSchedule", scheduleId, { due_at_ms: decision.dueAtMs });
    return { claimed: false, reason: decision.reason };
  }
  yield step("upsertClaimed", decision.occurrence);
  const schedule = (yield step("updateSchedule", scheduleId, decision.schedule)) as A<"updateSchedule">;
  return { claimed: true, claim: decision.claim, schedule };
}

function* settle(
  claimed: OccurrenceClaim,
  settlement: OccurrenceSettlement,
  nowMs: number,
): ScheduleWrite<SettleResult> {
  const { scheduleId, scheduledForMs } = claimed;
  const row = (yield step("lockSchedule", scheduleId)) as A<"lockSchedule">;
  const occurrence = (yield step("lockOccurrence", scheduleId, scheduledForMs)) as A<"lockOccurrence">;
  const decision = decideSettle(row, occurrence, claimed, settlement, nowMs);
  if (!decision.settled) return { settled: false, reason: "fence_lost" };
  yield step("updateOccurrence", scheduleId, scheduledForMs, decision.occurrence);
  if (decision.schedule) {
    const schedule = (yield step("updateSchedule", scheduleId, decision.schedule)) as A<"updateSchedule">;
    return { settled: true, schedule };
  }
  return { settled: true, schedule: row ? toSchedule(row) : null };
}

function* skip(request: SkipRequest): ScheduleWrite<Schedule | null> {
  const decision = decideSkip((yield step("lockSchedule", request.scheduleId)) as A<"lockSchedule">, request);
  if (!decision) return null;
  yield step("insertSkipped", decision.occurrence);
  return (yield step("updateSchedule", request.scheduleId, decision.schedule)) as A<"updateSchedule">;
}

function* expireLeases(exceptOwner: string, nowMs: number): ScheduleWrite<number> {
  return (yield step("expireLeases", exceptOwner, nowMs)) as A<"expireLeases">;
}

/** The methods that only read, each one statement of the engine's own. */
export type ScheduleReads = Pick<
  ScheduleRepository,
  | "get"
  | "listByConversation"
  | "listByChat"
  | "nextDueAtMs"
  | "listDue"
  | "getOccurrence"
  | "listOccurrences"
>;

/**
 * A schedule repository: the engine's reads, and each mutation's procedure run by `transact` in
 * one write transaction of the engine.
 */
export function scheduleRepository(
  reads: ScheduleReads,
  transact: <R>(procedure: ScheduleWrite<R>) => Promise<R>,
): ScheduleRepository {
  return {
    ...reads,
    insert: (schedule, maxLive) => transact(insert(schedule, maxLive)),
    pause: (id, nowMs) => transact(change(id, nowMs, (row) => pauseUpdate(row, nowMs))),
    resume: (id, nextAtMs, nowMs) => transact(change(id, nowMs, (row) => resumeUpdate(row, nextAtMs, nowMs))),
    cancel: (id, nowMs) => transact(change(id, nowMs, (row) => cancelUpdate(row, nowMs))),
    edit: (id, expectedVersion, edit, nowMs) =>
      transact(change(id, nowMs, (row) => editUpdate(row, expectedVersion, edit, nowMs))),
    claimOccurrence: (request) => transact(claim(request)),
    settleOccurrence: (claimed, settlement, nowMs) => transact(settle(claimed, settlement, nowMs)),
    skipOccurrence: (request) => transact(skip(request)),
    expireLeases: ({ exceptOwner, nowMs }) => transact(expireLeases(exceptOwner, nowMs)),
  };
}
