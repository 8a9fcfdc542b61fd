import type { Database } from "bun:sqlite";
import type { ConversationSummary } from "../../runtime/store.ts";
import type { Message, RunState } from "../../runtime/types.ts";
import { type StepRow, toStepRecord } from "../operator-sql.ts";
import type { PromptReadSteps } from "../prompt-reads.ts";
import { type MessageRow, type RunRow, toMessage, toRun } from "../rows.ts";
import { placeholders } from "./database.ts";

/**
 * The runtime store's prompt reads on SQLite (../prompt-reads.ts): each runs inside the caller's
 * read transaction (one WAL snapshot).
 */

export function messagesByIds(db: Database, ids: readonly string[]): Message[] {
  if (ids.length === 0) return [];
  const marks = placeholders(ids.length);
  return (
    db.query(`SELECT * FROM messages WHERE id IN (${marks}) ORDER BY ord`).all(...ids) as MessageRow[]
  ).map(toMessage);
}

export function summaryOf(db: Database, conversationId: string): ConversationSummary | null {
  const row = db
    .query("SELECT text, through_finish_seq, version FROM conversation_summaries WHERE conversation_id = ?")
    .get(conversationId) as { text: string; through_finish_seq: number; version: number } | null;
  return row ? { text: row.text, throughFinishSeq: row.through_finish_seq, version: row.version } : null;
}

/** The prompt reads' steps on a SQLite connection. */
export function sqlitePromptReads(db: Database): PromptReadSteps {
  return {
    run: (runId) => {
      const row = db.query("SELECT * FROM runs WHERE id = ?").get(runId) as RunRow | null;
      return row ? toRun(row) : null;
    },
    message: (id) => {
      const row = db.query("SELECT * FROM messages WHERE id = ?").get(id) as MessageRow | null;
      return row ? toMessage(row) : null;
    },
    messagesByIds: (ids) => messagesByIds(db, ids),
    messagesOfRuns: (runIds) =>
      (
        db
          .query(`SELECT * FROM messages WHERE run_id IN (${placeholders(runIds.length)}) ORDER BY ord`)
          .all(...runIds) as MessageRow[]
      ).map(toMessage),
    finishedRuns: (conversationId, afterFinishSeq, limit, newest) =>
      (
        db
          .query(
            `SELECT id, state, finish_seq FROM runs WHERE conversation_id = ? AND finish_seq > ?
             AND state NOT IN ('superseded', 'absorbed', 'cancelled')
             ORDER BY finish_seq ${newest ? "DESC" : "ASC"} LIMIT ?`,
          )
          .all(conversationId, afterFinishSeq, limit) as Array<{
          id: string;
          state: RunState;
          finish_seq: number;
        }>
      ).map((row) => ({ id: row.id, state: row.state, finishSeq: row.finish_seq })),
    finishedCount: (conversationId, afterFinishSeq) =>
      (
        db
          .query(
            `SELECT count(*) AS n FROM runs WHERE conversation_id = ? AND finish_seq > ?
             AND state NOT IN ('superseded', 'absorbed', 'cancelled')`,
          )
          .get(conversationId, afterFinishSeq) as { n: number }
      ).n,
    summary: (conversationId) => summaryOf(db, conversationId),
    joinableRuns: (conversationId, queueSeq) =>
      (
        db
          .query(
            `SELECT * FROM runs WHERE conversation_id = ? AND state = 'queued' AND policy = 'inject'
             AND priority = 'normal' AND steps = 0 AND queue_seq > ? ORDER BY queue_seq`,
          )
          .all(conversationId, queueSeq) as RunRow[]
      ).map(toRun),
    lastStep: (runId) => {
      const row = db
        .query("SELECT * FROM steps WHERE run_id = ? ORDER BY step DESC LIMIT 1")
        .get(runId) as StepRow | null;
      return row ? toStepRecord(row) : null;
    },
  };
}
