import type { Database } from "bun:sqlite";
import type { ScheduleRepository } from "../../../schedules/types.ts";
import type { OperatorQueries } from "../../operator/queries.ts";
import {
  type CommandInputRow,
  type ConversationSummaryRow,
  commandInputSql,
  containsPattern,
  conversationPageSql,
  conversationSummarySql,
  listSchedulesAcross,
  messagePageSql,
  outboxPageSql,
  type Param,
  runPageSql,
  type StepRow,
  toCommandInput,
  toConversationSummary,
  toStep,
} from "../operator-sql.ts";
import { type OutboxRow, toOutboxRecord } from "../outbox-records.ts";
import { type MessageRow, type RunRow, toMessagePageItem, toRun } from "../rows.ts";
import { placeholders } from "./database.ts";

const param: Param = (n) => `?${n}`;
const RUN_PAGE = runPageSql(param);
const CONVERSATION_PAGE = conversationPageSql(param);
const MATCHING_CONVERSATION_PAGE = conversationPageSql(param, true);
const OUTBOX_PAGE = outboxPageSql(param);
const MESSAGE_PAGE = messagePageSql(param);
const COMMAND_INPUTS = commandInputSql(param);

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
            .query(RUN_PAGE)
            .all(
              filter.state ?? null,
              filter.conversationId ?? null,
              filter.beforeQueueSeq ?? null,
              filter.limit,
            ) as RunRow[]
        ).map(toRun),
      ),

    listConversations: (page) =>
      read(() => {
        const params = [page.before?.[0] ?? null, page.before?.[1] ?? null, page.limit];
        const rows =
          page.matching === undefined
            ? db.query(CONVERSATION_PAGE).all(...params)
            : db.query(MATCHING_CONVERSATION_PAGE).all(...params, containsPattern(page.matching));
        return (rows as ConversationSummaryRow[]).map(toConversationSummary);
      }),

    conversationSummary: (conversationId) =>
      read(() => {
        const row = db.query(conversationSummarySql("WHERE c.id = ?1", "")).get(conversationId);
        return row ? toConversationSummary(row as ConversationSummaryRow) : null;
      }),

    listOutbox: (filter) =>
      read(() =>
        (
          db
            .query(OUTBOX_PAGE)
            .all(
              filter.state ?? null,
              filter.conversationId ?? null,
              filter.before?.[0] ?? null,
              filter.before?.[1] ?? null,
              filter.before?.[2] ?? null,
              filter.limit,
            ) as OutboxRow[]
        ).map(toOutboxRecord),
      ),

    listMessagesNewestFirst: (conversationId, page) =>
      read(() =>
        (
          db.query(MESSAGE_PAGE).all(conversationId, page.beforeOrder ?? null, page.limit) as Array<
            MessageRow & { run_state: string }
          >
        ).map(toMessagePageItem),
      ),

    listCommandInputs: (conversationId, limit) =>
      read(() =>
        (db.query(COMMAND_INPUTS).all(conversationId, limit) as CommandInputRow[]).map(toCommandInput),
      ),

    listSteps: (runIds) =>
      read(() =>
        runIds.length === 0
          ? []
          : (
              db
                .query(
                  `SELECT * FROM steps WHERE run_id IN (${placeholders(runIds.length)}) ORDER BY run_id, step`,
                )
                .all(...runIds) as StepRow[]
            ).map(toStep),
      ),

    stepUsageSince: (sinceMs) =>
      read(() =>
        (
          db.query("SELECT run_id, usage FROM steps WHERE finished_at_ms >= ?1").all(sinceMs) as Array<{
            run_id: string;
            usage: string;
          }>
        ).map((row) => ({ runId: row.run_id, usage: JSON.parse(row.usage) })),
      ),

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
