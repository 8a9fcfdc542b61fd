import type { Database } from "bun:sqlite";
import { SwitchboardError } from "../../errors.ts";
import type {
  CompactionCandidates,
  CompactionRead,
  ConversationSummary,
  PromptContext,
  PromptTurn,
} from "../../runtime/store.ts";
import type { Message } from "../../runtime/types.ts";
import { type StepRow, toStepRecord } from "../operator-sql.ts";
import { type MessageRow, type RunRow, toMessage, toRun } from "../rows.ts";
import { compactionReach, joinableInputs, joinedInputIds, promptTurns } from "../rules.ts";
import { placeholders } from "./database.ts";

/**
 * The runtime store's prompt reads on SQLite: the bounded material for a model call and for
 * compaction. Each runs inside the caller's read transaction (one WAL snapshot).
 */

export function messagesByIds(db: Database, ids: readonly string[]): Message[] {
  if (ids.length === 0) return [];
  const marks = placeholders(ids.length);
  return (
    db.query(`SELECT * FROM messages WHERE id IN (${marks}) ORDER BY ord`).all(...ids) as MessageRow[]
  ).map(toMessage);
}

/**
 * Finished turns (superseded and absorbed excluded) after `afterFinishSeq`, oldest first: the
 * newest `limit` of them, or the oldest `limit` when `newest` is false.
 */
function finishedTurns(
  db: Database,
  conversationId: string,
  options: { afterFinishSeq: number; limit: number; newest: boolean },
): PromptTurn[] {
  const rows = db
    .query(
      `SELECT id, state, finish_seq FROM runs WHERE conversation_id = ? AND finish_seq > ?
       AND state NOT IN ('superseded', 'absorbed', 'cancelled')
       ORDER BY finish_seq ${options.newest ? "DESC" : "ASC"} LIMIT ?`,
    )
    .all(conversationId, options.afterFinishSeq, options.limit) as Array<
    Pick<RunRow, "id" | "state"> & { finish_seq: number }
  >;
  if (options.newest) rows.reverse();
  if (rows.length === 0) return [];
  const marks = placeholders(rows.length);
  const messages = (
    db
      .query(`SELECT * FROM messages WHERE run_id IN (${marks}) ORDER BY ord`)
      .all(...rows.map((r) => r.id)) as MessageRow[]
  ).map(toMessage);
  return promptTurns(
    rows.map((row) => ({ id: row.id, state: row.state, finishSeq: row.finish_seq })),
    messages,
    messagesByIds(db, joinedInputIds(messages.flatMap((m) => m.parts))),
  );
}

export function summaryOf(db: Database, conversationId: string): ConversationSummary | null {
  const row = db
    .query("SELECT text, through_finish_seq, version FROM conversation_summaries WHERE conversation_id = ?")
    .get(conversationId) as { text: string; through_finish_seq: number; version: number } | null;
  return row ? { text: row.text, throughFinishSeq: row.through_finish_seq, version: row.version } : null;
}

/** See RuntimeStore.loadCompactionCandidates; call inside a read transaction. */
export function compactionCandidates(
  db: Database,
  conversationId: string,
  options: CompactionRead,
): CompactionCandidates {
  const summary = summaryOf(db, conversationId);
  const after = summary?.throughFinishSeq ?? 0;
  const count = db
    .query(
      `SELECT count(*) AS n FROM runs WHERE conversation_id = ? AND finish_seq > ?
       AND state NOT IN ('superseded', 'absorbed', 'cancelled')`,
    )
    .get(conversationId, after) as { n: number };
  const { pending, read } = compactionReach(count.n, options);
  const turns =
    read === 0
      ? []
      : finishedTurns(db, conversationId, { afterFinishSeq: after, limit: read, newest: false });
  return { summary, turns, pending };
}

/** See RuntimeStore.loadPromptContext; call inside a read transaction. */
export function promptContext(db: Database, runId: string, options: { maxTurns: number }): PromptContext {
  const row = db.query("SELECT * FROM runs WHERE id = ?").get(runId) as RunRow | null;
  if (!row) throw new SwitchboardError("not_found", `Run ${runId} does not exist.`);
  const run = toRun(row);
  const inputs = messagesByIds(db, run.inputMessageIds);
  const assistantRow = db
    .query("SELECT * FROM messages WHERE id = ?")
    .get(run.assistantMessageId) as MessageRow | null;

  const summary = summaryOf(db, run.conversationId);
  const history = finishedTurns(db, run.conversationId, {
    afterFinishSeq: summary?.throughFinishSeq ?? 0,
    limit: options.maxTurns,
    newest: true,
  });

  const joinableRuns = (
    db
      .query(
        `SELECT * FROM runs WHERE conversation_id = ? AND state = 'queued' AND policy = 'inject'
         AND priority = 'normal' AND steps = 0 AND queue_seq > ? ORDER BY queue_seq`,
      )
      .all(run.conversationId, run.queueSeq) as RunRow[]
  ).map(toRun);
  const joinable = joinableInputs(
    joinableRuns,
    messagesByIds(
      db,
      joinableRuns.flatMap((r) => r.inputMessageIds),
    ),
  );

  const lastStep = db
    .query("SELECT * FROM steps WHERE run_id = ? ORDER BY step DESC LIMIT 1")
    .get(run.id) as StepRow | null;

  return {
    run,
    summary,
    history,
    inputs,
    assistant: assistantRow ? toMessage(assistantRow) : null,
    lastStep: lastStep ? toStepRecord(lastStep) : null,
    joinable,
  };
}
