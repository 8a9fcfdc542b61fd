import type { SQL, TransactionSQL } from "bun";
import type { ClaimResult, Schedule, ScheduleRepository, SettleResult } from "../../../schedules/types.ts";
import type { Integer } from "../rows.ts";
import {
  type OccurrenceRow,
  parseOccurrenceRow,
  parseScheduleRow,
  type ScheduleRow,
  toOccurrence,
  toSchedule,
  toScheduleRow,
} from "../schedule-rows.ts";
import {
  cancelUpdate,
  decideClaim,
  decideSettle,
  decideSkip,
  editUpdate,
  pauseUpdate,
  RECLAIMED_COLUMNS,
  resumeUpdate,
  type ScheduleUpdate,
} from "../schedule-rules.ts";

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
  /** READ COMMITTED is explicit: a statement after a lock wait must see what the holder committed. */
  const write = async <T>(work: (tx: TransactionSQL) => Promise<T>): Promise<T> =>
    (await sql.begin("isolation level read committed", work)) as T;

  const lockSchedule = async (tx: TransactionSQL, id: string): Promise<ScheduleRow | null> => {
    const [raw] = await tx`SELECT * FROM schedules WHERE id = ${id} FOR UPDATE`;
    return raw ? parseScheduleRow(raw) : null;
  };

  const lockOccurrence = async (
    tx: TransactionSQL,
    scheduleId: string,
    scheduledForMs: number,
  ): Promise<OccurrenceRow | null> => {
    const [raw] = await tx`
      SELECT * FROM schedule_occurrences
      WHERE schedule_id = ${scheduleId} AND scheduled_for_ms = ${scheduledForMs} FOR UPDATE`;
    return raw ? parseOccurrenceRow(raw) : null;
  };

  /** Updates the named columns of one schedule and returns the new row. */
  const updateSchedule = async (
    tx: TransactionSQL,
    id: string,
    columns: Partial<ScheduleRow>,
  ): Promise<Schedule> => {
    const [raw] = await tx`UPDATE schedules SET ${tx(columns)} WHERE id = ${id} RETURNING *`;
    return toSchedule(raw);
  };

  /** A slot left `retrying` by a schedule that moved on would otherwise look pending forever. */
  const abandonRetrying = async (tx: TransactionSQL, scheduleId: string, reason: string, nowMs: number) => {
    await tx`
      UPDATE schedule_occurrences SET state = 'skipped', last_error = ${reason}, updated_at_ms = ${nowMs}
      WHERE schedule_id = ${scheduleId} AND state = 'retrying'`;
  };

  /** Applies the update `decide` returns for the schedule's locked row; null when it returns none. */
  const change = (
    id: string,
    nowMs: number,
    decide: (row: ScheduleRow | null) => ScheduleUpdate | null,
  ): Promise<Schedule | null> =>
    write(async (tx) => {
      const update = decide(await lockSchedule(tx, id));
      if (!update) return null;
      if (update.abandonRetrying) await abandonRetrying(tx, id, update.abandonRetrying, nowMs);
      return updateSchedule(tx, id, update.columns);
    });

  return {
    insert(schedule, maxLive) {
      return write(async (tx) => {
        const owner = schedule.chatKey ?? schedule.conversationId;
        await tx`
          SELECT pg_advisory_xact_lock(hashtext('switchboard:schedules'), hashtext(${owner}))`;
        const [live] =
          schedule.chatKey === null
            ? await tx<Array<{ n: Integer }>>`
                SELECT count(*) AS n FROM schedules
                WHERE conversation_id = ${owner} AND state IN ('active', 'paused')`
            : await tx<Array<{ n: Integer }>>`
                SELECT count(*) AS n FROM schedules
                WHERE chat_key = ${owner} AND state IN ('active', 'paused')`;
        const liveCount = Number(live!.n);
        if (liveCount >= maxLive) return { inserted: false as const, liveCount };
        await tx`INSERT INTO schedules ${tx(toScheduleRow(schedule))}`;
        return { inserted: true as const };
      });
    },

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

    pause: (id, nowMs) => change(id, nowMs, (row) => pauseUpdate(row, nowMs)),
    resume: (id, nextAtMs, nowMs) => change(id, nowMs, (row) => resumeUpdate(row, nextAtMs, nowMs)),
    cancel: (id, nowMs) => change(id, nowMs, (row) => cancelUpdate(row, nowMs)),
    edit: (id, expectedVersion, edit, nowMs) =>
      change(id, nowMs, (row) => editUpdate(row, expectedVersion, edit, nowMs)),

    expireLeases({ exceptOwner, nowMs }) {
      return write(async (tx) => {
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
      });
    },

    claimOccurrence(request) {
      const { scheduleId, scheduledForMs } = request;
      return write(async (tx): Promise<ClaimResult> => {
        const row = await lockSchedule(tx, scheduleId);
        const existing = row ? await lockOccurrence(tx, scheduleId, scheduledForMs) : null;
        const decision = decideClaim(row, existing, request);
        if (!decision.claimed) {
          if (decision.reason === "leased")
            await updateSchedule(tx, scheduleId, { due_at_ms: decision.dueAtMs });
          return { claimed: false, reason: decision.reason };
        }
        await tx`
          INSERT INTO schedule_occurrences ${tx(decision.occurrence)}
          ON CONFLICT (schedule_id, scheduled_for_ms) DO UPDATE SET ${tx.unsafe(RECLAIM_SET)}`;
        const schedule = await updateSchedule(tx, scheduleId, decision.schedule);
        return { claimed: true, claim: decision.claim, schedule };
      });
    },

    settleOccurrence(claim, settlement, nowMs) {
      const { scheduleId, scheduledForMs } = claim;
      return write(async (tx): Promise<SettleResult> => {
        const row = await lockSchedule(tx, scheduleId);
        const occurrence = await lockOccurrence(tx, scheduleId, scheduledForMs);
        const decision = decideSettle(row, occurrence, claim, settlement, nowMs);
        if (!decision.settled) return { settled: false, reason: "fence_lost" };
        await tx`
          UPDATE schedule_occurrences SET ${tx(decision.occurrence)}
          WHERE schedule_id = ${scheduleId} AND scheduled_for_ms = ${scheduledForMs}`;
        if (decision.schedule) {
          return { settled: true, schedule: await updateSchedule(tx, scheduleId, decision.schedule) };
        }
        return { settled: true, schedule: row ? toSchedule(row) : null };
      });
    },

    skipOccurrence(request) {
      return write(async (tx) => {
        const decision = decideSkip(await lockSchedule(tx, request.scheduleId), request);
        if (!decision) return null;
        await tx`
          INSERT INTO schedule_occurrences ${tx(decision.occurrence)}
          ON CONFLICT (schedule_id, scheduled_for_ms) DO NOTHING`;
        return updateSchedule(tx, request.scheduleId, decision.schedule);
      });
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
}
