import type {
  OccurrenceClaim,
  OccurrenceSettlement,
  ScheduleAdvance,
  ScheduleChange,
  ScheduleRepository,
  ScheduleState,
} from "../../schedules/types.ts";
import { type OccurrenceRow, type ScheduleRow, timingColumns } from "./schedule-rows.ts";

/**
 * Decisions every schedule repository backend takes the same way. Each one reads the rows a
 * backend loaded inside its transaction (locked, on PostgreSQL) and returns the columns to write;
 * the backend only reads and writes.
 */

type LiveRow = ScheduleRow & { state: "active" | "paused" };

/** Active or paused: a schedule that can still fire. */
export function isLive(row: ScheduleRow | null): row is LiveRow {
  return row?.state === "active" || row?.state === "paused";
}

/** A change of one schedule row. */
export interface ScheduleUpdate {
  columns: Partial<ScheduleRow>;
  /** Set when the schedule leaves its slot: its `retrying` occurrences become `skipped` with this reason. */
  abandonRetrying?: string;
}

/** Where a row's state, slot and due time go for an advance; a paused schedule stays paused. */
function advanceColumns(
  advance: ScheduleAdvance,
  state: ScheduleState,
): Pick<ScheduleRow, "state" | "next_at_ms" | "due_at_ms"> {
  if (advance.state !== "active") return { state: advance.state, next_at_ms: null, due_at_ms: null };
  return { state, next_at_ms: advance.nextAtMs, due_at_ms: state === "active" ? advance.nextAtMs : null };
}

/** active → paused; null when the schedule is absent or not active. */
export function pauseUpdate(row: ScheduleRow | null, nowMs: number): ScheduleUpdate | null {
  if (row?.state !== "active") return null;
  return { columns: { state: "paused", due_at_ms: null, updated_at_ms: nowMs } };
}

/** paused → active at `nextAtMs`; the same slot keeps its retry state. Null when not paused. */
export function resumeUpdate(
  row: ScheduleRow | null,
  nextAtMs: number,
  nowMs: number,
): ScheduleUpdate | null {
  if (row?.state !== "paused") return null;
  if (row.next_at_ms === nextAtMs) {
    return { columns: { state: "active", due_at_ms: row.retry_at_ms ?? nextAtMs, updated_at_ms: nowMs } };
  }
  return {
    columns: {
      state: "active",
      next_at_ms: nextAtMs,
      due_at_ms: nextAtMs,
      attempts: 0,
      retry_at_ms: null,
      updated_at_ms: nowMs,
    },
    abandonRetrying: "not retried: the schedule was paused and resumed at a later slot",
  };
}

/** active/paused → cancelled; null when absent or already ended. */
export function cancelUpdate(row: ScheduleRow | null, nowMs: number): ScheduleUpdate | null {
  if (!isLive(row)) return null;
  return {
    columns: {
      state: "cancelled",
      next_at_ms: null,
      due_at_ms: null,
      retry_at_ms: null,
      updated_at_ms: nowMs,
    },
    abandonRetrying: "not retried: the schedule was cancelled",
  };
}

/** `change` under a version bump, if the row is live at `expectedVersion`; null otherwise. */
export function editUpdate(
  row: ScheduleRow | null,
  expectedVersion: number,
  change: ScheduleChange,
  nowMs: number,
): ScheduleUpdate | null {
  if (!isLive(row) || row.version !== expectedVersion) return null;
  const sameSlot = row.next_at_ms === change.nextAtMs;
  // A slot both timings share keeps its retry state; the old timing's other slots never fire.
  const slotColumns: Partial<ScheduleRow> = sameSlot
    ? { due_at_ms: row.state === "active" ? (row.retry_at_ms ?? change.nextAtMs) : null }
    : {
        next_at_ms: change.nextAtMs,
        due_at_ms: row.state === "active" ? change.nextAtMs : null,
        attempts: 0,
        retry_at_ms: null,
        last_error: null,
      };
  return {
    columns: {
      ...(change.timing ? timingColumns(change.timing) : {}),
      ...(change.prompt !== undefined ? { prompt: change.prompt } : {}),
      ...(change.missedPolicy !== undefined ? { missed_policy: change.missedPolicy } : {}),
      ...(change.maxAttempts !== undefined ? { max_attempts: change.maxAttempts } : {}),
      ...slotColumns,
      version: row.version + 1,
      updated_at_ms: nowMs,
    },
    ...(sameSlot ? {} : { abandonRetrying: "not retried: the schedule was edited" }),
  };
}

export type ClaimRequest = Parameters<ScheduleRepository["claimOccurrence"]>[0];

/** The columns a claim writes into its occurrence row, whether it inserts or re-claims it. */
export type ClaimedOccurrence = Pick<
  OccurrenceRow,
  | "schedule_id"
  | "scheduled_for_ms"
  | "schedule_version"
  | "state"
  | "attempts"
  | "late_by_ms"
  | "lease_owner"
  | "lease_expires_at_ms"
  | "fencing_token"
  | "created_at_ms"
  | "updated_at_ms"
>;

/**
 * What a re-claim of an existing occurrence overwrites. The rest stays: the first attempt's
 * lateness and creation time, and the last attempt's error.
 */
export const RECLAIMED_COLUMNS = [
  "schedule_version",
  "state",
  "attempts",
  "lease_owner",
  "lease_expires_at_ms",
  "fencing_token",
  "updated_at_ms",
] as const satisfies ReadonlyArray<keyof ClaimedOccurrence>;

export type ClaimDecision =
  | { claimed: false; reason: "stale" | "settled" }
  /** A live lease holds the slot: the schedule is due again when it expires. */
  | { claimed: false; reason: "leased"; dueAtMs: number }
  | {
      claimed: true;
      claim: OccurrenceClaim;
      /** Upserted: inserted, or `RECLAIMED_COLUMNS` overwritten. */
      occurrence: ClaimedOccurrence;
      schedule: Partial<ScheduleRow>;
    };

/** Whether `request` may claim its slot, given the schedule row and the slot's occurrence row. */
export function decideClaim(
  row: ScheduleRow | null,
  existing: OccurrenceRow | null,
  request: ClaimRequest,
): ClaimDecision {
  const { scheduleId, scheduledForMs, owner, nowMs, leaseMs } = request;
  if (
    row?.state !== "active" ||
    row.version !== request.expectedVersion ||
    row.next_at_ms !== scheduledForMs ||
    row.due_at_ms === null ||
    row.due_at_ms > nowMs
  ) {
    return { claimed: false, reason: "stale" };
  }
  if (existing && existing.state !== "claimed" && existing.state !== "retrying") {
    return { claimed: false, reason: "settled" };
  }
  if (
    existing?.state === "claimed" &&
    existing.lease_expires_at_ms !== null &&
    existing.lease_expires_at_ms > nowMs
  ) {
    return { claimed: false, reason: "leased", dueAtMs: existing.lease_expires_at_ms };
  }
  const claim: OccurrenceClaim = {
    scheduleId,
    scheduleVersion: row.version,
    scheduledForMs,
    owner,
    fencingToken: (existing?.fencing_token ?? 0) + 1,
    attempt: (existing?.attempts ?? 0) + 1,
    leaseExpiresAtMs: nowMs + leaseMs,
  };
  return {
    claimed: true,
    claim,
    occurrence: {
      schedule_id: scheduleId,
      scheduled_for_ms: scheduledForMs,
      schedule_version: row.version,
      state: "claimed",
      attempts: claim.attempt,
      late_by_ms: Math.max(0, nowMs - scheduledForMs),
      lease_owner: owner,
      lease_expires_at_ms: claim.leaseExpiresAtMs,
      fencing_token: claim.fencingToken,
      created_at_ms: nowMs,
      updated_at_ms: nowMs,
    },
    schedule: { due_at_ms: claim.leaseExpiresAtMs, attempts: claim.attempt },
  };
}

export type SettleDecision =
  /** The claim's fencing token no longer holds. */
  | { settled: false }
  /** `schedule` null: the schedule row stays as it is. */
  | { settled: true; occurrence: Partial<OccurrenceRow>; schedule: Partial<ScheduleRow> | null };

/** The outcome of `claim` as columns of its occurrence and its schedule, if its fence still holds. */
export function decideSettle(
  row: ScheduleRow | null,
  occurrence: OccurrenceRow | null,
  claim: OccurrenceClaim,
  settlement: OccurrenceSettlement,
  nowMs: number,
): SettleDecision {
  if (
    occurrence?.state !== "claimed" ||
    occurrence.fencing_token !== claim.fencingToken ||
    occurrence.lease_owner !== claim.owner
  ) {
    return { settled: false };
  }
  const settle = (
    columns: Partial<OccurrenceRow>,
    schedule: Partial<ScheduleRow> | null,
  ): SettleDecision => ({
    settled: true,
    occurrence: { ...columns, lease_expires_at_ms: null, updated_at_ms: nowMs },
    schedule,
  });
  const live = isLive(row);
  // The schedule, if it still works on this slot (an edit may have kept it).
  const slotRow = live && row.next_at_ms === claim.scheduledForMs ? row : null;

  if (settlement.outcome === "retry") {
    if (!slotRow) {
      const why = !row ? "deleted" : live ? "moved to another slot" : row.state;
      return settle(
        { state: "skipped", last_error: `${settlement.error} (not retried: the schedule was ${why})` },
        null,
      );
    }
    return settle(
      { state: "retrying", last_error: settlement.error },
      {
        attempts: claim.attempt,
        retry_at_ms: settlement.retryAtMs,
        last_error: settlement.error,
        due_at_ms: slotRow.state === "active" ? settlement.retryAtMs : null,
        updated_at_ms: nowMs,
      },
    );
  }

  const occurrenceColumns: Partial<OccurrenceRow> =
    settlement.outcome === "dispatched"
      ? { state: "dispatched", run_id: settlement.runId, last_error: null }
      : { state: "failed", last_error: settlement.error };
  if (!row) return settle(occurrenceColumns, null);
  if (slotRow?.version !== claim.scheduleVersion) {
    // Edited meanwhile: the advance was planned from the old timing. Leave the slot due so the
    // next tick finds it settled and advances it with the new timing.
    return settle(occurrenceColumns, {
      ...(settlement.outcome === "dispatched" ? { last_fired_at_ms: nowMs } : {}),
      ...(slotRow?.state === "active" ? { due_at_ms: nowMs } : {}),
      updated_at_ms: nowMs,
    });
  }
  return settle(occurrenceColumns, {
    ...advanceColumns(settlement.advance, slotRow.state),
    ...(settlement.outcome === "dispatched"
      ? { last_error: null, last_fired_at_ms: nowMs }
      : { last_error: settlement.error }),
    attempts: 0,
    retry_at_ms: null,
    updated_at_ms: nowMs,
  });
}

export type SkipRequest = Parameters<ScheduleRepository["skipOccurrence"]>[0];

/** The columns a skip inserts; an occurrence the slot already has stays as it is. */
export type SkippedOccurrence = Pick<
  OccurrenceRow,
  | "schedule_id"
  | "scheduled_for_ms"
  | "schedule_version"
  | "state"
  | "attempts"
  | "last_error"
  | "created_at_ms"
  | "updated_at_ms"
>;

/** A skip of the slot, if the row is still active at the expected version on that slot; else null. */
export function decideSkip(
  row: ScheduleRow | null,
  request: SkipRequest,
): { occurrence: SkippedOccurrence; schedule: Partial<ScheduleRow> } | null {
  const { scheduledForMs, nowMs } = request;
  if (
    row?.state !== "active" ||
    row.version !== request.expectedVersion ||
    row.next_at_ms !== scheduledForMs
  ) {
    return null;
  }
  return {
    occurrence: {
      schedule_id: row.id,
      scheduled_for_ms: scheduledForMs,
      schedule_version: row.version,
      state: "skipped",
      attempts: 0,
      last_error: request.reason,
      created_at_ms: nowMs,
      updated_at_ms: nowMs,
    },
    schedule: {
      ...advanceColumns(request.advance, "active"),
      attempts: 0,
      retry_at_ms: null,
      updated_at_ms: nowMs,
    },
  };
}
