import type { Database } from "bun:sqlite";
import { z } from "zod";
import {
  type ClaimResult,
  MISSED_POLICIES,
  OCCURRENCE_STATES,
  type Occurrence,
  type OccurrenceClaim,
  type OccurrenceSettlement,
  SCHEDULE_CREATORS,
  SCHEDULE_STATES,
  type Schedule,
  type ScheduleAdvance,
  type ScheduleChange,
  type ScheduleRepository,
  type ScheduleState,
  type ScheduleTiming,
  type SettleResult,
} from "../../../schedules/types.ts";
import { SwitchboardError } from "../../errors.ts";
import type { OccurrenceRow, ScheduleRow } from "./schedules.sql.ts";

export { SCHEDULES_SCHEMA_SQL } from "./schedules.sql.ts";

const CHANNELS = ["telegram", "discord", "slack", "web"] as const;

const scheduleRowSchema = z.object({
  id: z.string(),
  conversation_id: z.string(),
  reply_target: z.string(),
  channel: z.enum(CHANNELS),
  created_by: z.enum(SCHEDULE_CREATORS),
  prompt: z.string(),
  kind: z.enum(["at", "every"]),
  at_ms: z.number().int().nullable(),
  cron: z.string().nullable(),
  interval_ms: z.number().int().positive().nullable(),
  anchor_ms: z.number().int().nullable(),
  timezone: z.string().nullable(),
  missed_policy: z.enum(MISSED_POLICIES),
  max_attempts: z.number().int().positive(),
  state: z.enum(SCHEDULE_STATES),
  next_at_ms: z.number().int().nullable(),
  due_at_ms: z.number().int().nullable(),
  attempts: z.number().int().nonnegative(),
  retry_at_ms: z.number().int().nullable(),
  last_error: z.string().nullable(),
  last_fired_at_ms: z.number().int().nullable(),
  version: z.number().int().positive(),
  created_at_ms: z.number().int(),
  updated_at_ms: z.number().int(),
});

const occurrenceRowSchema = z.object({
  schedule_id: z.string(),
  scheduled_for_ms: z.number().int(),
  schedule_version: z.number().int(),
  state: z.enum(OCCURRENCE_STATES),
  attempts: z.number().int().nonnegative(),
  late_by_ms: z.number().int().nullable(),
  run_id: z.string().nullable(),
  last_error: z.string().nullable(),
  lease_owner: z.string().nullable(),
  lease_expires_at_ms: z.number().int().nullable(),
  fencing_token: z.number().int().nonnegative(),
  created_at_ms: z.number().int(),
  updated_at_ms: z.number().int(),
});

function corrupt(what: string, id: string, problem: string): SwitchboardError {
  return new SwitchboardError(
    "schema_unsupported",
    `Stored ${what} ${id} is not readable by this switchboard (${problem}). ` +
      "It was written by a newer version or edited by hand: upgrade switchboard or restore a backup.",
  );
}

function toTiming(row: z.infer<typeof scheduleRowSchema>): ScheduleTiming {
  if (row.kind === "at" && row.at_ms !== null) {
    return { kind: "at", spec: { type: "at", atMs: row.at_ms }, timezone: row.timezone };
  }
  if (row.kind === "every" && row.timezone !== null) {
    if (row.cron !== null)
      return { kind: "every", spec: { type: "cron", expression: row.cron }, timezone: row.timezone };
    if (row.interval_ms !== null && row.anchor_ms !== null) {
      return {
        kind: "every",
        spec: { type: "interval", intervalMs: row.interval_ms, anchorMs: row.anchor_ms },
        timezone: row.timezone,
      };
    }
  }
  throw corrupt("schedule", row.id, `kind ${row.kind} without its timing columns`);
}

function toSchedule(raw: unknown): Schedule {
  const parsed = scheduleRowSchema.safeParse(raw);
  if (!parsed.success) {
    throw corrupt("schedule", String((raw as { id?: unknown })?.id), z.prettifyError(parsed.error));
  }
  const row = parsed.data;
  return {
    id: row.id,
    conversationId: row.conversation_id,
    replyTarget: row.reply_target,
    channel: row.channel,
    createdBy: row.created_by,
    prompt: row.prompt,
    ...toTiming(row),
    missedPolicy: row.missed_policy,
    maxAttempts: row.max_attempts,
    state: row.state,
    nextAtMs: row.next_at_ms,
    attempts: row.attempts,
    retryAtMs: row.retry_at_ms,
    lastError: row.last_error,
    lastFiredAtMs: row.last_fired_at_ms,
    version: row.version,
    createdAtMs: row.created_at_ms,
    updatedAtMs: row.updated_at_ms,
  };
}

function toOccurrence(raw: unknown): Occurrence {
  const parsed = occurrenceRowSchema.safeParse(raw);
  if (!parsed.success) {
    const key = raw as Partial<OccurrenceRow>;
    throw corrupt(
      "occurrence",
      `${key?.schedule_id}:${key?.scheduled_for_ms}`,
      z.prettifyError(parsed.error),
    );
  }
  const row = parsed.data;
  return {
    scheduleId: row.schedule_id,
    scheduledForMs: row.scheduled_for_ms,
    scheduleVersion: row.schedule_version,
    state: row.state,
    attempts: row.attempts,
    lateByMs: row.late_by_ms,
    runId: row.run_id,
    lastError: row.last_error,
    leaseOwner: row.lease_owner,
    leaseExpiresAtMs: row.lease_expires_at_ms,
    fencingToken: row.fencing_token,
    createdAtMs: row.created_at_ms,
    updatedAtMs: row.updated_at_ms,
  };
}

type TimingColumns = Pick<ScheduleRow, "kind" | "at_ms" | "cron" | "interval_ms" | "anchor_ms" | "timezone">;

function timingColumns(timing: ScheduleTiming): TimingColumns {
  const none = { at_ms: null, cron: null, interval_ms: null, anchor_ms: null };
  switch (timing.spec.type) {
    case "at":
      return { ...none, kind: "at", at_ms: timing.spec.atMs, timezone: timing.timezone };
    case "cron":
      return { ...none, kind: "every", cron: timing.spec.expression, timezone: timing.timezone };
    case "interval":
      return {
        ...none,
        kind: "every",
        interval_ms: timing.spec.intervalMs,
        anchor_ms: timing.spec.anchorMs,
        timezone: timing.timezone,
      };
  }
}

/** Where a row's state, slot and due time go for an advance; a paused schedule stays paused. */
function advanceColumns(
  advance: ScheduleAdvance,
  state: ScheduleState,
): Pick<ScheduleRow, "state" | "next_at_ms" | "due_at_ms"> {
  if (advance.state !== "active") return { state: advance.state, next_at_ms: null, due_at_ms: null };
  return { state, next_at_ms: advance.nextAtMs, due_at_ms: state === "active" ? advance.nextAtMs : null };
}

type SqlValue = string | number | null;

/**
 * The SQLite schedule repository over a connection the caller opened (WAL, busy_timeout) and
 * migrated with SCHEDULES_SCHEMA_SQL. Every mutation is one `BEGIN IMMEDIATE` transaction.
 */
export function createSqliteScheduleRepository(db: Database): ScheduleRepository {
  const scheduleById = (id: string): ScheduleRow | null =>
    db.query("SELECT * FROM schedules WHERE id = ?").get(id) as ScheduleRow | null;
  const occurrenceByKey = (scheduleId: string, scheduledForMs: number): OccurrenceRow | null =>
    db
      .query("SELECT * FROM schedule_occurrences WHERE schedule_id = ? AND scheduled_for_ms = ?")
      .get(scheduleId, scheduledForMs) as OccurrenceRow | null;

  /** Updates the named columns of one schedule and returns the new row. */
  const updateSchedule = (id: string, columns: Partial<ScheduleRow>): Schedule => {
    const names = Object.keys(columns);
    const row = db
      .query(`UPDATE schedules SET ${names.map((n) => `${n} = ?`).join(", ")} WHERE id = ? RETURNING *`)
      .get(...(Object.values(columns) as SqlValue[]), id);
    return toSchedule(row);
  };

  /** A slot left `retrying` by a schedule that moved on would otherwise look pending forever. */
  const abandonRetrying = (scheduleId: string, reason: string, nowMs: number): void => {
    db.query(
      `UPDATE schedule_occurrences SET state = 'skipped', last_error = ?, updated_at_ms = ?
       WHERE schedule_id = ? AND state = 'retrying'`,
    ).run(reason, nowMs, scheduleId);
  };

  const transaction = <T>(fn: () => T): T => db.transaction(fn).immediate();

  return {
    async insert(schedule, maxLive) {
      return transaction(() => {
        const { n } = db
          .query(
            "SELECT count(*) AS n FROM schedules WHERE conversation_id = ? AND state IN ('active', 'paused')",
          )
          .get(schedule.conversationId) as { n: number };
        if (n >= maxLive) return { inserted: false as const, liveCount: n };
        const row: ScheduleRow = {
          id: schedule.id,
          conversation_id: schedule.conversationId,
          reply_target: schedule.replyTarget,
          channel: schedule.channel,
          created_by: schedule.createdBy,
          prompt: schedule.prompt,
          ...timingColumns(schedule),
          missed_policy: schedule.missedPolicy,
          max_attempts: schedule.maxAttempts,
          state: schedule.state,
          next_at_ms: schedule.nextAtMs,
          due_at_ms: schedule.state === "active" ? (schedule.retryAtMs ?? schedule.nextAtMs) : null,
          attempts: schedule.attempts,
          retry_at_ms: schedule.retryAtMs,
          last_error: schedule.lastError,
          last_fired_at_ms: schedule.lastFiredAtMs,
          version: schedule.version,
          created_at_ms: schedule.createdAtMs,
          updated_at_ms: schedule.updatedAtMs,
        };
        const names = Object.keys(row);
        db.query(
          `INSERT INTO schedules (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
        ).run(...(Object.values(row) as SqlValue[]));
        return { inserted: true as const };
      });
    },

    async get(id) {
      const row = scheduleById(id);
      return row ? toSchedule(row) : null;
    },

    async listByConversation(conversationId, states) {
      if (states.length === 0) return [];
      const rows = db
        .query(
          `SELECT * FROM schedules WHERE conversation_id = ? AND state IN (${states.map(() => "?").join(", ")})
           ORDER BY created_at_ms, id`,
        )
        .all(conversationId, ...states);
      return rows.map(toSchedule);
    },

    async nextDueAtMs() {
      const row = db
        .query("SELECT min(due_at_ms) AS due FROM schedules WHERE due_at_ms IS NOT NULL")
        .get() as { due: number | null };
      return row.due;
    },

    async listDue(nowMs, limit) {
      const rows = db
        .query(
          "SELECT * FROM schedules WHERE due_at_ms IS NOT NULL AND due_at_ms <= ? ORDER BY due_at_ms LIMIT ?",
        )
        .all(nowMs, limit);
      return rows.map(toSchedule);
    },

    async pause(id, nowMs) {
      return transaction(() => {
        const row = scheduleById(id);
        if (row?.state !== "active") return null;
        return updateSchedule(id, { state: "paused", due_at_ms: null, updated_at_ms: nowMs });
      });
    },

    async resume(id, nextAtMs, nowMs) {
      return transaction(() => {
        const row = scheduleById(id);
        if (row?.state !== "paused") return null;
        if (row.next_at_ms === nextAtMs) {
          return updateSchedule(id, {
            state: "active",
            due_at_ms: row.retry_at_ms ?? nextAtMs,
            updated_at_ms: nowMs,
          });
        }
        abandonRetrying(id, "not retried: the schedule was paused and resumed at a later slot", nowMs);
        return updateSchedule(id, {
          state: "active",
          next_at_ms: nextAtMs,
          due_at_ms: nextAtMs,
          attempts: 0,
          retry_at_ms: null,
          updated_at_ms: nowMs,
        });
      });
    },

    async cancel(id, nowMs) {
      return transaction(() => {
        const row = scheduleById(id);
        if (row?.state !== "active" && row?.state !== "paused") return null;
        abandonRetrying(id, "not retried: the schedule was cancelled", nowMs);
        return updateSchedule(id, {
          state: "cancelled",
          next_at_ms: null,
          due_at_ms: null,
          retry_at_ms: null,
          updated_at_ms: nowMs,
        });
      });
    },

    async edit(id, expectedVersion, change: ScheduleChange, nowMs) {
      return transaction(() => {
        const row = scheduleById(id);
        if (!row || row.version !== expectedVersion || (row.state !== "active" && row.state !== "paused"))
          return null;
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
        if (!sameSlot) abandonRetrying(id, "not retried: the schedule was edited", nowMs);
        return updateSchedule(id, {
          ...(change.timing ? timingColumns(change.timing) : {}),
          ...(change.prompt !== undefined ? { prompt: change.prompt } : {}),
          ...(change.missedPolicy !== undefined ? { missed_policy: change.missedPolicy } : {}),
          ...(change.maxAttempts !== undefined ? { max_attempts: change.maxAttempts } : {}),
          ...slotColumns,
          version: row.version + 1,
          updated_at_ms: nowMs,
        });
      });
    },

    async expireLeases({ exceptOwner, nowMs }) {
      return transaction(() => {
        const taken = db
          .query(
            `UPDATE schedule_occurrences SET lease_expires_at_ms = ?1, updated_at_ms = ?1
             WHERE state = 'claimed' AND lease_expires_at_ms > ?1 AND lease_owner IS NOT ?2
             RETURNING schedule_id, scheduled_for_ms`,
          )
          .all(nowMs, exceptOwner) as Array<{ schedule_id: string; scheduled_for_ms: number }>;
        for (const occurrence of taken) {
          // Due now, if the schedule is still waiting on that very slot's lease.
          db.query(
            `UPDATE schedules SET due_at_ms = ?1 WHERE id = ?2 AND state = 'active' AND next_at_ms = ?3
             AND due_at_ms > ?1`,
          ).run(nowMs, occurrence.schedule_id, occurrence.scheduled_for_ms);
        }
        return taken.length;
      });
    },

    async claimOccurrence(request): Promise<ClaimResult> {
      const { scheduleId, scheduledForMs, owner, nowMs, leaseMs } = request;
      return transaction((): ClaimResult => {
        const row = scheduleById(scheduleId);
        if (
          row?.state !== "active" ||
          row.version !== request.expectedVersion ||
          row.next_at_ms !== scheduledForMs ||
          row.due_at_ms === null ||
          row.due_at_ms > nowMs
        ) {
          return { claimed: false, reason: "stale" };
        }
        const existing = occurrenceByKey(scheduleId, scheduledForMs);
        if (existing && existing.state !== "claimed" && existing.state !== "retrying") {
          return { claimed: false, reason: "settled" };
        }
        if (existing?.state === "claimed" && (existing.lease_expires_at_ms ?? 0) > nowMs) {
          updateSchedule(scheduleId, { due_at_ms: existing.lease_expires_at_ms });
          return { claimed: false, reason: "leased" };
        }
        const leaseExpiresAtMs = nowMs + leaseMs;
        const attempt = (existing?.attempts ?? 0) + 1;
        const fencingToken = (existing?.fencing_token ?? 0) + 1;
        db.query(
          `INSERT INTO schedule_occurrences (schedule_id, scheduled_for_ms, schedule_version, state, attempts,
             late_by_ms, lease_owner, lease_expires_at_ms, fencing_token, created_at_ms, updated_at_ms)
           VALUES (?, ?, ?, 'claimed', ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (schedule_id, scheduled_for_ms) DO UPDATE SET
             schedule_version = excluded.schedule_version, state = 'claimed', attempts = excluded.attempts,
             lease_owner = excluded.lease_owner, lease_expires_at_ms = excluded.lease_expires_at_ms,
             fencing_token = excluded.fencing_token, updated_at_ms = excluded.updated_at_ms`,
        ).run(
          scheduleId,
          scheduledForMs,
          row.version,
          attempt,
          Math.max(0, nowMs - scheduledForMs),
          owner,
          leaseExpiresAtMs,
          fencingToken,
          nowMs,
          nowMs,
        );
        const schedule = updateSchedule(scheduleId, { due_at_ms: leaseExpiresAtMs, attempts: attempt });
        const claim: OccurrenceClaim = {
          scheduleId,
          scheduleVersion: row.version,
          scheduledForMs,
          owner,
          fencingToken,
          attempt,
          leaseExpiresAtMs,
        };
        return { claimed: true, claim, schedule };
      });
    },

    async settleOccurrence(claim, settlement: OccurrenceSettlement, nowMs): Promise<SettleResult> {
      return transaction((): SettleResult => {
        const occurrence = occurrenceByKey(claim.scheduleId, claim.scheduledForMs);
        if (
          occurrence?.state !== "claimed" ||
          occurrence.fencing_token !== claim.fencingToken ||
          occurrence.lease_owner !== claim.owner
        ) {
          return { settled: false, reason: "fence_lost" };
        }
        const row = scheduleById(claim.scheduleId);
        const live = row !== null && (row.state === "active" || row.state === "paused");
        // The slot is still the schedule's to work on (an edit may have kept it).
        const sameSlot = live && row.next_at_ms === claim.scheduledForMs;
        const current = sameSlot && row.version === claim.scheduleVersion;

        const setOccurrence = (columns: Partial<OccurrenceRow>) => {
          const names = Object.keys(columns);
          db.query(
            `UPDATE schedule_occurrences SET ${names.map((n) => `${n} = ?`).join(", ")}, lease_expires_at_ms = NULL,
               updated_at_ms = ? WHERE schedule_id = ? AND scheduled_for_ms = ?`,
          ).run(...(Object.values(columns) as SqlValue[]), nowMs, claim.scheduleId, claim.scheduledForMs);
        };

        if (settlement.outcome === "retry") {
          if (!sameSlot) {
            const why = !row ? "deleted" : live ? "moved to another slot" : row.state;
            setOccurrence({
              state: "skipped",
              last_error: `${settlement.error} (not retried: the schedule was ${why})`,
            });
            return { settled: true, schedule: row ? toSchedule(row) : null };
          }
          setOccurrence({ state: "retrying", last_error: settlement.error });
          return {
            settled: true,
            schedule: updateSchedule(claim.scheduleId, {
              attempts: claim.attempt,
              retry_at_ms: settlement.retryAtMs,
              last_error: settlement.error,
              due_at_ms: row.state === "active" ? settlement.retryAtMs : null,
              updated_at_ms: nowMs,
            }),
          };
        }

        if (settlement.outcome === "dispatched") {
          setOccurrence({ state: "dispatched", run_id: settlement.runId, last_error: null });
        } else {
          setOccurrence({ state: "failed", last_error: settlement.error });
        }
        if (!row) return { settled: true, schedule: null };
        if (!current) {
          // Edited meanwhile: the advance was planned from the old timing. Leave the slot due so
          // the next tick finds it settled and advances it with the new timing.
          const fired = settlement.outcome === "dispatched" ? { last_fired_at_ms: nowMs } : {};
          const due = sameSlot && row.state === "active" ? { due_at_ms: nowMs } : {};
          return {
            settled: true,
            schedule: updateSchedule(row.id, { ...fired, ...due, updated_at_ms: nowMs }),
          };
        }
        const state = row.state as ScheduleState;
        const outcomeColumns: Partial<ScheduleRow> =
          settlement.outcome === "dispatched"
            ? { last_error: null, last_fired_at_ms: nowMs }
            : { last_error: settlement.error };
        return {
          settled: true,
          schedule: updateSchedule(row.id, {
            ...advanceColumns(settlement.advance, state),
            ...outcomeColumns,
            attempts: 0,
            retry_at_ms: null,
            updated_at_ms: nowMs,
          }),
        };
      });
    },

    async skipOccurrence(request) {
      const { scheduleId, scheduledForMs, nowMs } = request;
      return transaction(() => {
        const row = scheduleById(scheduleId);
        if (
          row?.state !== "active" ||
          row.version !== request.expectedVersion ||
          row.next_at_ms !== scheduledForMs
        ) {
          return null;
        }
        db.query(
          `INSERT INTO schedule_occurrences (schedule_id, scheduled_for_ms, schedule_version, state, attempts,
             last_error, created_at_ms, updated_at_ms)
           VALUES (?, ?, ?, 'skipped', 0, ?, ?, ?)
           ON CONFLICT (schedule_id, scheduled_for_ms) DO NOTHING`,
        ).run(scheduleId, scheduledForMs, row.version, request.reason, nowMs, nowMs);
        return updateSchedule(scheduleId, {
          ...advanceColumns(request.advance, "active"),
          attempts: 0,
          retry_at_ms: null,
          updated_at_ms: nowMs,
        });
      });
    },

    async getOccurrence(scheduleId, scheduledForMs) {
      const row = occurrenceByKey(scheduleId, scheduledForMs);
      return row ? toOccurrence(row) : null;
    },

    async listOccurrences(scheduleId, limit) {
      const rows = db
        .query(
          "SELECT * FROM schedule_occurrences WHERE schedule_id = ? ORDER BY scheduled_for_ms DESC LIMIT ?",
        )
        .all(scheduleId, limit);
      return rows.map(toOccurrence);
    },
  };
}
