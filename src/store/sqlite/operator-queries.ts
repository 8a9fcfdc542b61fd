/**
 * The SQL behind operator views (CLI and HTTP API) that span conversations, on SQLite.
 */
import type { Database } from "bun:sqlite";
import { LIVE_SCHEDULE_STATES, SCHEDULE_STATES, type ScheduleRepository } from "../../../schedules/types.ts";
import type { OperatorQueries } from "../../gateway/operator/queries.ts";
import type { ConversationSummary } from "../../gateway/operator-types.ts";
import { ACTIVE_RUN_STATES } from "../../runtime/types.ts";
import { type RunRow, toRun } from "../rows.ts";

export const ACTIVE_STATES_SQL = `(${ACTIVE_RUN_STATES.map((s) => `'${s}'`).join(", ")})`;

interface ConversationRow {
  id: string;
  version: number;
  created_at_ms: number;
  key: string | null;
  last_activity_at_ms: number | null;
  runs: number;
  active_runs: number;
}

/**
 * Summaries of the conversations `recent` selects. The conversation's last event is its last
 * activity (every admission, step and terminal commit appends one). Runs are counted in one pass
 * over the selected conversations only.
 */
function conversationSummarySql(recent: string): string {
  return `
    WITH recent AS (
      SELECT c.id, c.version, c.created_at_ms,
        (SELECT e.at_ms FROM events e WHERE e.conversation_id = c.id AND e.seq = c.last_seq) AS last_activity_at_ms
      FROM conversations c ${recent}
    ),
    run_counts AS (
      SELECT conversation_id, count(*) AS runs, COALESCE(sum(state IN ${ACTIVE_STATES_SQL}), 0) AS active_runs
      FROM runs WHERE conversation_id IN (SELECT id FROM recent) GROUP BY conversation_id
    ),
    keys AS (
      SELECT conversation_id, max(key) AS key FROM conversation_keys
      WHERE conversation_id IN (SELECT id FROM recent) GROUP BY conversation_id
    )
    SELECT recent.*, keys.key, COALESCE(run_counts.runs, 0) AS runs, COALESCE(run_counts.active_runs, 0) AS active_runs
    FROM recent
    LEFT JOIN run_counts ON run_counts.conversation_id = recent.id
    LEFT JOIN keys ON keys.conversation_id = recent.id
    ORDER BY COALESCE(recent.last_activity_at_ms, recent.created_at_ms) DESC, recent.id DESC`;
}

function toSummary(row: ConversationRow): ConversationSummary {
  return {
    id: row.id,
    key: row.key,
    version: row.version,
    createdAtMs: row.created_at_ms,
    lastActivityAtMs: row.last_activity_at_ms,
    runs: row.runs,
    activeRuns: row.active_runs,
  };
}

/** Operator queries over switchboard's SQLite database and its schedule repository. */
export function createSqliteOperatorQueries(stores: {
  db: Database;
  schedules: ScheduleRepository;
}): OperatorQueries {
  const { db } = stores;
  const read = <T>(work: () => T): Promise<T> => {
    try {
      return Promise.resolve(db.transaction(work).deferred());
    } catch (error) {
      return Promise.reject(error);
    }
  };

  return {
    listRuns: (filter) =>
      read(() =>
        (
          db
            .query(
              `SELECT * FROM runs WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR conversation_id = ?2)
               ORDER BY queue_seq DESC LIMIT ?3`,
            )
            .all(filter.state ?? null, filter.conversationId ?? null, filter.limit) as RunRow[]
        ).map(toRun),
      ),

    listConversations: (limit) =>
      read(() =>
        (
          db
            .query(
              conversationSummarySql(
                "ORDER BY COALESCE(last_activity_at_ms, c.created_at_ms) DESC, c.id DESC LIMIT ?1",
              ),
            )
            .all(limit) as ConversationRow[]
        ).map(toSummary),
      ),

    conversationSummary: (conversationId) =>
      read(() => {
        const row = db.query(conversationSummarySql("WHERE c.id = ?1")).get(conversationId);
        return row ? toSummary(row as ConversationRow) : null;
      }),

    async listSchedules(filter) {
      const states = filter.includeEnded ? SCHEDULE_STATES : LIVE_SCHEDULE_STATES;
      const conversationIds =
        filter.conversationId !== undefined
          ? [filter.conversationId]
          : await read(() =>
              (
                db
                  .query(
                    `SELECT DISTINCT conversation_id FROM schedules
                     WHERE state IN (${states.map(() => "?").join(", ")}) ORDER BY conversation_id`,
                  )
                  .all(...states) as Array<{ conversation_id: string }>
              ).map((row) => row.conversation_id),
            );
      // The repository owns the row → Schedule mapping (and its validation); reuse it per conversation.
      const lists = await Promise.all(
        conversationIds.map((id) => stores.schedules.listByConversation(id, states)),
      );
      return lists.flat().sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
    },
  };
}
