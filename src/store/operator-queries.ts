/**
 * The operator's queries (OperatorQueries), written once over the SQL of operator-sql.ts; an
 * engine supplies its placeholders and how it runs one statement.
 */
import type { ScheduleRepository } from "../../schedules/types.ts";
import type { OperatorQueries } from "../operator/queries.ts";
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
} from "./operator-sql.ts";
import { type OutboxRow, toOutboxRecord } from "./outbox-records.ts";
import { type MessageRow, type RunRow, toMessagePageItem, toRun } from "./rows.ts";

/** How an engine runs the operator's SQL. */
export interface OperatorSqlEngine {
  /** Placeholder `n` (from 1) of a parameter of `type`. */
  param: Param;
  /** The rows of one statement. */
  all(sql: string, params: readonly unknown[]): Promise<unknown[]>;
  /** A condition that `column` is one of `values`, and its parameters (numbered from 1). */
  anyOf(column: string, values: readonly string[]): { condition: string; params: unknown[] };
}

export function operatorQueries(engine: OperatorSqlEngine, schedules: ScheduleRepository): OperatorQueries {
  const { param } = engine;
  const RUN_PAGE = runPageSql(param);
  const CONVERSATION_PAGE = conversationPageSql(param);
  const MATCHING_CONVERSATION_PAGE = conversationPageSql(param, true);
  const OUTBOX_PAGE = outboxPageSql(param);
  const MESSAGE_PAGE = messagePageSql(param);
  const COMMAND_INPUTS = commandInputSql(param);
  const CONVERSATION_SUMMARY = conversationSummarySql(`WHERE c.id = ${param(1, "text")}`, "");
  const rows = async <T>(sql: string, params: readonly unknown[]): Promise<T[]> =>
    (await engine.all(sql, params)) as T[];

  return {
    listRuns: async (filter) =>
      (
        await rows<RunRow>(RUN_PAGE, [
          filter.state ?? null,
          filter.conversationId ?? null,
          filter.beforeQueueSeq ?? null,
          filter.limit,
        ])
      ).map(toRun),

    listConversations: async (page) => {
      const params = [page.before?.[0] ?? null, page.before?.[1] ?? null, page.limit];
      const found =
        page.matching === undefined
          ? await rows<ConversationSummaryRow>(CONVERSATION_PAGE, params)
          : await rows<ConversationSummaryRow>(MATCHING_CONVERSATION_PAGE, [
              ...params,
              containsPattern(page.matching),
            ]);
      return found.map(toConversationSummary);
    },

    conversationSummary: async (conversationId) => {
      const [row] = await rows<ConversationSummaryRow>(CONVERSATION_SUMMARY, [conversationId]);
      return row ? toConversationSummary(row) : null;
    },

    listOutbox: async (filter) =>
      (
        await rows<OutboxRow>(OUTBOX_PAGE, [
          filter.state ?? null,
          filter.conversationId ?? null,
          filter.before?.[0] ?? null,
          filter.before?.[1] ?? null,
          filter.before?.[2] ?? null,
          filter.limit,
        ])
      ).map(toOutboxRecord),

    listMessagesNewestFirst: async (conversationId, page) =>
      (
        await rows<MessageRow & { run_state: string }>(MESSAGE_PAGE, [
          conversationId,
          page.beforeOrder ?? null,
          page.limit,
        ])
      ).map(toMessagePageItem),

    listCommandInputs: async (conversationId, limit) =>
      (await rows<CommandInputRow>(COMMAND_INPUTS, [conversationId, limit])).map(toCommandInput),

    listSteps: async (runIds) => {
      if (runIds.length === 0) return [];
      const { condition, params } = engine.anyOf("run_id", runIds);
      return (
        await rows<StepRow>(`SELECT * FROM steps WHERE ${condition} ORDER BY run_id, step`, params)
      ).map(toStep);
    },

    stepUsageSince: async (sinceMs) =>
      (
        await rows<{ run_id: string; usage: string }>(
          `SELECT run_id, usage FROM steps WHERE finished_at_ms >= ${param(1, "bigint")}`,
          [sinceMs],
        )
      ).map((row) => ({ runId: row.run_id, usage: JSON.parse(row.usage) })),

    listSchedules: (filter) =>
      listSchedulesAcross(schedules, filter, async (states) => {
        const { condition, params } = engine.anyOf("state", states);
        return (
          await rows<{ conversation_id: string }>(
            `SELECT DISTINCT conversation_id FROM schedules WHERE ${condition} ORDER BY conversation_id`,
            params,
          )
        ).map((row) => row.conversation_id);
      }),
  };
}
