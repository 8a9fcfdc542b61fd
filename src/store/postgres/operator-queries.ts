import type { SQL } from "bun";
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

const param: Param = (n, type) => `$${n}::${type}`;
const RUN_PAGE = runPageSql(param);
const CONVERSATION_PAGE = conversationPageSql(param);
const MATCHING_CONVERSATION_PAGE = conversationPageSql(param, true);
const OUTBOX_PAGE = outboxPageSql(param);
const MESSAGE_PAGE = messagePageSql(param);
const COMMAND_INPUTS = commandInputSql(param);

/** Operator queries over switchboard's PostgreSQL database and its schedule repository. */
export function createPostgresOperatorQueries(stores: {
  sql: SQL;
  schedules: ScheduleRepository;
}): OperatorQueries {
  const { sql } = stores;
  return {
    async listRuns(filter) {
      const rows = (await sql.unsafe(RUN_PAGE, [
        filter.state ?? null,
        filter.conversationId ?? null,
        filter.beforeQueueSeq ?? null,
        filter.limit,
      ])) as RunRow[];
      return rows.map(toRun);
    },

    async listConversations(page) {
      const params = [page.before?.[0] ?? null, page.before?.[1] ?? null, page.limit];
      const rows = (
        page.matching === undefined
          ? await sql.unsafe(CONVERSATION_PAGE, params)
          : await sql.unsafe(MATCHING_CONVERSATION_PAGE, [...params, containsPattern(page.matching)])
      ) as ConversationSummaryRow[];
      return rows.map(toConversationSummary);
    },

    async conversationSummary(conversationId) {
      const [row] = (await sql.unsafe(conversationSummarySql("WHERE c.id = $1", ""), [
        conversationId,
      ])) as ConversationSummaryRow[];
      return row ? toConversationSummary(row) : null;
    },

    async listOutbox(filter) {
      const rows = (await sql.unsafe(OUTBOX_PAGE, [
        filter.state ?? null,
        filter.conversationId ?? null,
        filter.before?.[0] ?? null,
        filter.before?.[1] ?? null,
        filter.before?.[2] ?? null,
        filter.limit,
      ])) as OutboxRow[];
      return rows.map(toOutboxRecord);
    },

    async listMessagesNewestFirst(conversationId, page) {
      const rows = (await sql.unsafe(MESSAGE_PAGE, [
        conversationId,
        page.beforeOrder ?? null,
        page.limit,
      ])) as Array<MessageRow & { run_state: string }>;
      return rows.map(toMessagePageItem);
    },

    async listCommandInputs(conversationId, limit) {
      const rows = (await sql.unsafe(COMMAND_INPUTS, [conversationId, limit])) as CommandInputRow[];
      return rows.map(toCommandInput);
    },

    async listSteps(runIds) {
      if (runIds.length === 0) return [];
      const rows = (await sql.unsafe(
        "SELECT * FROM steps WHERE run_id = ANY($1::text[]) ORDER BY run_id, step",
        [runIds],
      )) as StepRow[];
      return rows.map(toStep);
    },

    async stepUsageSince(sinceMs) {
      const rows = (await sql.unsafe("SELECT run_id, usage FROM steps WHERE finished_at_ms >= $1::bigint", [
        sinceMs,
      ])) as Array<{ run_id: string; usage: string }>;
      return rows.map((row) => ({ runId: row.run_id, usage: JSON.parse(row.usage) }));
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
