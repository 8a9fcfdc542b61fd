import type { SQL, TransactionSQL } from "bun";
import type { ScheduleRepository } from "../../../schedules/types.ts";
import type { Integer } from "../rows.ts";
import { parseOccurrenceRow, parseScheduleRow, toOccurrence, toSchedule } from "../schedule-rows.ts";
import { RECLAIMED_COLUMNS } from "../schedule-rules.ts";
import {
  type ScheduleReads,
  type ScheduleSteps,
  type ScheduleWrite,
  scheduleRepository,
} from "../schedule-writes.ts";
import { type AsyncSteps, runAsync } from "../steps.ts";

const RECLAIM_SET = RECLAIMED_COLUMNS.map((c) => `${c} = excluded.${c}`).join(", ");

/**
 * The schedule repository on PostgreSQL, for several scheduler processes on one database migrated
 * by ./schema.ts. The decisions are the shared ones in ../schedule-rules.ts.
 *
 * Every mutation is one READ COMMITTED transaction that locks the schedule's row (FOR UPDATE)
 * before it reads or writes the schedule's occurrences. Claims, settles, skips and edits of one
 * schedule therefore take turns across processes, and each one decides on what the previous one
 * committed: of two claims of one due slot, the second finds it no longer due, and a fencing
 * token is never drawn twice. An insert takes an advisory lock on its conversation before it
 * counts the live schedules there, so two inserts cannot both pass the limit. Reads are single
 * statements.
 */
export function createPostgresScheduleRepository(sql: SQL): ScheduleRepository {
  /** The steps in transaction `tx`: the schedule's row is locked before its occurrences. */
  const steps = (tx: TransactionSQL): AsyncSteps<ScheduleSteps> => ({
    lockSchedule: async (id) => {
      const [raw] = await tx`SELECT * FROM schedules WHERE id = ${id} FOR UPDATE`;
      return raw ? parseScheduleRow(raw) : null;
    },
    lockOccurrence: async (scheduleId, scheduledForMs) => {
      const [raw] = await tx`
        SELECT * FROM schedule_occurrences
        WHERE schedule_id = ${scheduleId} AND scheduled_for_ms = ${scheduledForMs} FOR UPDATE`;
      return raw ? parseOccurrenceRow(raw) : null;
    },
    updateSchedule: async (id, columns) => {
      const [raw] = await tx`UPDATE schedules SET ${tx(columns)} WHERE id = ${id} RETURNING *`;
      return toSchedule(raw);
    },
    abandonRetrying: async (scheduleId, reason, nowMs) => {
      await tx`
        UPDATE schedule_occurrences SET state = 'skipped', last_error = ${reason}, updated_at_ms = ${nowMs}
        WHERE schedule_id = ${scheduleId} AND state = 'retrying'`;
    },
    liveCount: async (schedule) => {
      const owner = schedule.chatKey ?? schedule.conversationId;
      await tx`SELECT pg_advisory_xact_lock(hashtext('switchboard:schedules'), hashtext(${owner}))`;
      const [live] =
        schedule.chatKey === null
          ? await tx<Array<{ n: Integer }>>`
              SELECT count(*) AS n FROM schedules
              WHERE conversation_id = ${owner} AND state IN ('active', 'paused')`
          : await tx<Array<{ n: Integer }>>`
              SELECT count(*) AS n FROM schedules
              WHERE chat_key = ${owner} AND state IN ('active', 'paused')`;
      return Number(live!.n);
    },
    insertSchedule: async (row) => {
      await tx`INSERT INTO schedules ${tx(row)}`;
    },
    upsertClaimed: async (occurrence) => {
      await tx`
        INSERT INTO schedule_occurrences ${tx(occurrence)}
        ON CONFLICT (schedule_id, scheduled_for_ms) DO UPDATE SET ${tx.unsafe(RECLAIM_SET)}`;
    },
    insertSkipped: async (occurrence) => {
      await tx`
        INSERT INTO schedule_occurrences ${tx(occurrence)}
        ON CONFLICT (schedule_id, scheduled_for_ms) DO NOTHING`;
    },
    updateOccurrence: async (scheduleId, scheduledForMs, columns) => {
      await tx`
        UPDATE schedule_occurrences SET ${tx(columns)}
        WHERE schedule_id = ${scheduleId} AND scheduled_for_ms = ${scheduledForMs}`;
    },
    expireLeases: async (exceptOwner, nowMs) => {
      // The schedules first, in id order, as every other writer locks a schedule before its
      // occurrences; only their occurrences are touched.
      const locked = await tx<Array<{ id: string }>>`
        SELECT id FROM schedules WHERE id IN (
          SELECT schedule_id FROM schedule_occurrences
          WHERE state = 'claimed' AND lease_expires_at_ms > ${nowMs}
            AND lease_owner IS DISTINCT FROM ${exceptOwner})
        ORDER BY id FOR UPDATE`;
      if (locked.length === 0) return 0;
      const scheduleIds = sql.array(
        locked.map((r) => r.id),
        "TEXT",
      );
      const taken = await tx<Array<{ schedule_id: string; scheduled_for_ms: Integer }>>`
        UPDATE schedule_occurrences SET lease_expires_at_ms = ${nowMs}, updated_at_ms = ${nowMs}
        WHERE schedule_id = ANY(${scheduleIds}) AND state = 'claimed' AND lease_expires_at_ms > ${nowMs}
          AND lease_owner IS DISTINCT FROM ${exceptOwner}
        RETURNING schedule_id, scheduled_for_ms`;
      const takenIds = sql.array(
        taken.map((o) => o.schedule_id),
        "TEXT",
      );
      const takenSlots = sql.array(
        taken.map((o) => Number(o.scheduled_for_ms)),
        "BIGINT",
      );
      // Due now, if the schedule is still waiting on that very slot's lease.
      await tx`
        UPDATE schedules SET due_at_ms = ${nowMs}
        FROM unnest(${takenIds}::text[], ${takenSlots}::bigint[]) AS taken (schedule_id, scheduled_for_ms)
        WHERE schedules.id = taken.schedule_id AND schedules.state = 'active'
          AND schedules.next_at_ms = taken.scheduled_for_ms AND schedules.due_at_ms > ${nowMs}`;
      return taken.length;
    },
  });

  const reads: ScheduleReads = {
    async get(id) {
      const [raw] = await sql`SELECT * FROM schedules WHERE id = ${id}`;
      return raw ? toSchedule(raw) : null;
    },

    async listByConversation(conversationId, states) {
      if (states.length === 0) return [];
      // Byte order for ids, as SQLite compares them, whatever the database's collation.
      const rows = await sql`
        SELECT * FROM schedules
        WHERE conversation_id = ${conversationId} AND state = ANY(${sql.array([...states], "TEXT")})
        ORDER BY created_at_ms, id COLLATE "C"`;
      return rows.map(toSchedule);
    },

    async listByChat(chatKey, states) {
      if (states.length === 0) return [];
      const rows = await sql`
        SELECT * FROM schedules
        WHERE chat_key = ${chatKey} AND state = ANY(${sql.array([...states], "TEXT")})
        ORDER BY created_at_ms, id COLLATE "C"`;
      return rows.map(toSchedule);
    },

    async nextDueAtMs() {
      const [row] = await sql<Array<{ due: Integer | null }>>`
        SELECT min(due_at_ms) AS due FROM schedules WHERE due_at_ms IS NOT NULL`;
      return row?.due == null ? null : Number(row.due);
    },

    async listDue(nowMs, limit) {
      const rows = await sql`
        SELECT * FROM schedules WHERE due_at_ms IS NOT NULL AND due_at_ms <= ${nowMs}
        ORDER BY due_at_ms LIMIT ${limit}`;
      return rows.map(toSchedule);
    },

    async getOccurrence(scheduleId, scheduledForMs) {
      const [raw] = await sql`
        SELECT * FROM schedule_occurrences
        WHERE schedule_id = ${scheduleId} AND scheduled_for_ms = ${scheduledForMs}`;
      return raw ? toOccurrence(raw) : null;
    },

    async listOccurrences(scheduleId, limit) {
      const rows = await sql`
        SELECT * FROM schedule_occurrences WHERE schedule_id = ${scheduleId}
        ORDER BY scheduled_for_ms DESC LIMIT ${limit}`;
      return rows.map(toOccurrence);
    },
  };

  /** READ COMMITTED is explicit: a statement after a lock wait must see what the holder committed. */
  const transact = async <R>(procedure: ScheduleWrite<R>): Promise<R> =>
    (await sql.begin("isolation level read committed", (tx) => runAsync(procedure, steps(tx)))) as R;
  return scheduleRepository(reads, transact);
}
