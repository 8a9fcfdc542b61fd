import type { Database } from "bun:sqlite";
import type { Schedule, ScheduleRepository } from "../../../schedules/types.ts";
import { type OccurrenceRow, type ScheduleRow, toOccurrence, toSchedule } from "../schedule-rows.ts";
import { RECLAIMED_COLUMNS } from "../schedule-rules.ts";
import { type ScheduleReads, type ScheduleSteps, scheduleRepository } from "../schedule-writes.ts";
import { runSync } from "../steps.ts";
import { placeholders } from "./database.ts";

export { SCHEDULES_SCHEMA_SQL } from "./schedules.sql.ts";

type SqlValue = string | number | null;

const RECLAIM_SET = RECLAIMED_COLUMNS.map((c) => `${c} = excluded.${c}`).join(", ");

/**
 * The SQLite schedule repository over a connection the caller opened (WAL, busy_timeout) and
 * migrated with SCHEDULES_SCHEMA_SQL. Every mutation is one `BEGIN IMMEDIATE` transaction; the
 * decisions are the shared ones in ../schedule-rules.ts.
 */
export function createSqliteScheduleRepository(db: Database): ScheduleRepository {
  const scheduleById = (id: string): ScheduleRow | null =>
    db.query("SELECT * FROM schedules WHERE id = ?").get(id) as ScheduleRow | null;
  const occurrenceByKey = (scheduleId: string, scheduledForMs: number): OccurrenceRow | null =>
    db
      .query("SELECT * FROM schedule_occurrences WHERE schedule_id = ? AND scheduled_for_ms = ?")
      .get(scheduleId, scheduledForMs) as OccurrenceRow | null;

  /** Inserts `row` into `table`; `conflict` is the statement's ON CONFLICT clause, if any. */
  const insertRow = (table: string, row: object, conflict = ""): void => {
    const names = Object.keys(row);
    db.query(
      `INSERT INTO ${table} (${names.join(", ")}) VALUES (${placeholders(names.length)}) ${conflict}`,
    ).run(...(Object.values(row) as SqlValue[]));
  };

  /** Updates the named columns of one schedule and returns the new row. */
  const updateSchedule = (id: string, columns: Partial<ScheduleRow>): Schedule => {
    const names = Object.keys(columns);
    const row = db
      .query(`UPDATE schedules SET ${names.map((n) => `${n} = ?`).join(", ")} WHERE id = ? RETURNING *`)
      .get(...(Object.values(columns) as SqlValue[]), id);
    return toSchedule(row);
  };

  const updateOccurrence = (scheduleId: string, scheduledForMs: number, columns: Partial<OccurrenceRow>) => {
    const names = Object.keys(columns);
    db.query(
      `UPDATE schedule_occurrences SET ${names.map((n) => `${n} = ?`).join(", ")}
       WHERE schedule_id = ? AND scheduled_for_ms = ?`,
    ).run(...(Object.values(columns) as SqlValue[]), scheduleId, scheduledForMs);
  };

  const steps: ScheduleSteps = {
    lockSchedule: scheduleById,
    lockOccurrence: occurrenceByKey,
    updateSchedule,
    abandonRetrying: (scheduleId, reason, nowMs) => {
      db.query(
        `UPDATE schedule_occurrences SET state = 'skipped', last_error = ?, updated_at_ms = ?
         WHERE schedule_id = ? AND state = 'retrying'`,
      ).run(reason, nowMs, scheduleId);
    },
    liveCount: (schedule) =>
      (
        db
          .query(
            `SELECT count(*) AS n FROM schedules WHERE ${schedule.chatKey === null ? "conversation_id" : "chat_key"} = ? AND state IN ('active', 'paused')`,
          )
          .get(schedule.chatKey ?? schedule.conversationId) as { n: number }
      ).n,
    insertSchedule: (row) => insertRow("schedules", row),
    upsertClaimed: (occurrence) =>
      insertRow(
        "schedule_occurrences",
        occurrence,
        `ON CONFLICT (schedule_id, scheduled_for_ms) DO UPDATE SET ${RECLAIM_SET}`,
      ),
    insertSkipped: (occurrence) =>
      insertRow("schedule_occurrences", occurrence, "ON CONFLICT (schedule_id, scheduled_for_ms) DO NOTHING"),
    updateOccurrence,
    expireLeases: (exceptOwner, nowMs) => {
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
    },
  };

  const reads: ScheduleReads = {
    async get(id) {
      const row = scheduleById(id);
      return row ? toSchedule(row) : null;
    },

    async listByConversation(conversationId, states) {
      if (states.length === 0) return [];
      const rows = db
        .query(
          `SELECT * FROM schedules WHERE conversation_id = ? AND state IN (${placeholders(states.length)})
           ORDER BY created_at_ms, id`,
        )
        .all(conversationId, ...states);
      return rows.map(toSchedule);
    },

    async listByChat(chatKey, states) {
      if (states.length === 0) return [];
      const rows = db
        .query(
          `SELECT * FROM schedules WHERE chat_key = ? AND state IN (${placeholders(states.length)})
           ORDER BY created_at_ms, id`,
        )
        .all(chatKey, ...states);
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

  return scheduleRepository(reads, async (procedure) =>
    db.transaction(() => runSync(procedure, steps)).immediate(),
  );
}
