import type { Database } from "bun:sqlite";
import type { ScheduleRepository } from "../../../schedules/types.ts";
import type { OperatorQueries } from "../../operator/queries.ts";
import {
  type ConversationSummaryRow,
  conversationSummarySql,
  listSchedulesAcross,
  MOST_RECENT_FIRST,
  toConversationSummary,
} from "../operator-sql.ts";
import { type RunRow, toRun } from "../rows.ts";
import { placeholders } from "./database.ts";

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
            .query(conversationSummarySql("", `${MOST_RECENT_FIRST} LIMIT ?1`))
            .all(limit) as ConversationSummaryRow[]
        ).map(toConversationSummary),
      ),

    conversationSummary: (conversationId) =>
      read(() => {
        const row = db.query(conversationSummarySql("WHERE c.id = ?1", "")).get(conversationId);
        return row ? toConversationSummary(row as ConversationSummaryRow) : null;
      }),

    listSchedules: (filter) =>
      listSchedulesAcross(stores.schedules, filter, (states) =>
        read(() =>
          (
            db
              .query(
                `SELECT DISTINCT conversation_id FROM schedules
                 WHERE state IN (${placeholders(states.length)}) ORDER BY conversation_id`,
              )
              .all(...states) as Array<{ conversation_id: string }>
          ).map((row) => row.conversation_id),
        ),
      ),
  };
}
