import type { SQL } from "bun";
import type { ConversationSummary } from "../../runtime/store.ts";
import type { Message, RunState } from "../../runtime/types.ts";
import { type StepRow, toStepRecord } from "../operator-sql.ts";
import type { PromptReadSteps } from "../prompt-reads.ts";
import { type Integer, type MessageRow, type RunRow, toMessage, toRun } from "../rows.ts";
import type { AsyncSteps } from "../steps.ts";

/**
 * The runtime store's prompt reads on PostgreSQL (../prompt-reads.ts); the store runs each on one
 * REPEATABLE READ snapshot.
 */

export async function messageById(sql: SQL, messageId: string): Promise<Message | null> {
  const [row] = await sql<MessageRow[]>`SELECT * FROM messages WHERE id = ${messageId}`;
  return row ? toMessage(row) : null;
}

export async function summaryOf(sql: SQL, conversationId: string): Promise<ConversationSummary | null> {
  const [row] = await sql<Array<{ text: string; through_finish_seq: Integer; version: Integer }>>`
    SELECT text, through_finish_seq, version FROM conversation_summaries WHERE conversation_id = ${conversationId}`;
  return row
    ? { text: row.text, throughFinishSeq: Number(row.through_finish_seq), version: Number(row.version) }
    : null;
}

/** The prompt reads' steps on `sql`. */
export function postgresPromptReads(sql: SQL): AsyncSteps<PromptReadSteps> {
  return {
    run: async (runId) => {
      const [row] = await sql<RunRow[]>`SELECT * FROM runs WHERE id = ${runId}`;
      return row ? toRun(row) : null;
    },
    message: (id) => messageById(sql, id),
    messagesByIds: async (ids) => {
      if (ids.length === 0) return [];
      const rows = await sql<MessageRow[]>`
        SELECT * FROM messages WHERE id = ANY(${sql.array([...ids], "TEXT")}) ORDER BY ord`;
      return rows.map(toMessage);
    },
    messagesOfRuns: async (runIds) => {
      const rows = await sql<MessageRow[]>`
        SELECT * FROM messages WHERE run_id = ANY(${sql.array([...runIds], "TEXT")}) ORDER BY ord`;
      return rows.map(toMessage);
    },
    finishedRuns: async (conversationId, afterFinishSeq, limit, newest) => {
      const rows = await sql.unsafe<Array<{ id: string; state: RunState; finish_seq: Integer }>>(
        `SELECT id, state, finish_seq FROM runs WHERE conversation_id = $1 AND finish_seq > $2
         AND state NOT IN ('superseded', 'absorbed', 'cancelled')
         ORDER BY finish_seq ${newest ? "DESC" : "ASC"} LIMIT $3`,
        [conversationId, afterFinishSeq, limit],
      );
      return rows.map((row) => ({ id: row.id, state: row.state, finishSeq: Number(row.finish_seq) }));
    },
    finishedCount: async (conversationId, afterFinishSeq) => {
      const [count] = await sql<Array<{ n: Integer }>>`
        SELECT count(*) AS n FROM runs WHERE conversation_id = ${conversationId} AND finish_seq > ${afterFinishSeq}
        AND state NOT IN ('superseded', 'absorbed', 'cancelled')`;
      return Number(count!.n);
    },
    summary: (conversationId) => summaryOf(sql, conversationId),
    joinableRuns: async (conversationId, queueSeq) =>
      (
        await sql<RunRow[]>`
          SELECT * FROM runs WHERE conversation_id = ${conversationId} AND state = 'queued' AND policy = 'inject'
          AND priority = 'normal' AND steps = 0 AND queue_seq > ${queueSeq} ORDER BY queue_seq`
      ).map(toRun),
    lastStep: async (runId) => {
      const [row] = await sql<
        StepRow[]
      >`SELECT * FROM steps WHERE run_id = ${runId} ORDER BY step DESC LIMIT 1`;
      return row ? toStepRecord(row) : null;
    },
  };
}
