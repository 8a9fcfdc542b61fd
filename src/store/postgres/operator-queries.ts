import type { SQL } from "bun";
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

/** Operator queries over switchboard's PostgreSQL database and its schedule repository. */
export function createPostgresOperatorQueries(stores: {
  sql: SQL;
  schedules: ScheduleRepository;
}): OperatorQueries {
  const { sql } = stores;
  return {
    async listRuns(filter) {
      const rows = (await sql.unsafe(
        `SELECT * FROM runs WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR conversation_id = $2)
         ORDER BY queue_seq DESC LIMIT $3`,
        [filter.state ?? null, filter.conversationId ?? null, filter.limit],
      )) as RunRow[];
      return rows.map(toRun);
    },

    async listConversations(limit) {
      const rows = (await sql.unsafe(conversationSummarySql("", `${MOST_RECENT_FIRST} LIMIT $1`), [
        limit,
      ])) as ConversationSummaryRow[];
      return rows.map(toConversationSummary);
    },

    async conversationSummary(conversationId) {
      const [row] = (await sql.unsafe(conversationSummarySql("WHERE c.id = $1", ""), [
        conversationId,
      ])) as ConversationSummaryRow[];
      return row ? toConversationSummary(row) : null;
    },

    listSchedules: (filter) =>
      listSchedulesAcross(stores.schedules, filter, async (states) => {
        const rows = (await sql.unsafe(
          "SELECT DISTINCT conversation_id FROM schedules WHERE state = ANY($1::text[]) ORDER BY conversation_id",
          [states],
        )) as Array<{ conversation_id: string }>;
        return rows.map((row) => row.conversation_id);
      }),
  };
}
