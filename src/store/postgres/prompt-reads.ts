import type { SQL } from "bun";
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
import { type Integer, type MessageRow, type RunRow, toMessage, toRun } from "../rows.ts";
import { compactionReach, joinableInputs, joinedInputIds, promptTurns } from "../rules.ts";

/**
 * The runtime store's prompt reads on PostgreSQL: the bounded material for a model call and for
 * compaction. The store runs each on one REPEATABLE READ snapshot.
 */

export async function messageById(sql: SQL, messageId: string): Promise<Message | null> {
  const [row] = await sql<MessageRow[]>`SELECT * FROM messages WHERE id = ${messageId}`;
  return row ? toMessage(row) : null;
}

export async function messagesByIds(sql: SQL, ids: readonly string[]): Promise<Message[]> {
  if (ids.length === 0) return [];
  const rows = await sql<MessageRow[]>`
    SELECT * FROM messages WHERE id = ANY(${sql.array([...ids], "TEXT")}) ORDER BY ord`;
  return rows.map(toMessage);
}

/**
 * Finished turns (superseded and absorbed excluded) after `afterFinishSeq`, oldest first: the
 * newest `limit` of them, or the oldest `limit` when `newest` is false.
 */
async function finishedTurns(
  sql: SQL,
  conversationId: string,
  options: { afterFinishSeq: number; limit: number; newest: boolean },
): Promise<PromptTurn[]> {
  const rows = await sql.unsafe<Array<Pick<RunRow, "id" | "state" | "finish_seq">>>(
    `SELECT id, state, finish_seq FROM runs WHERE conversation_id = $1 AND finish_seq > $2
     AND state NOT IN ('superseded', 'absorbed', 'cancelled')
     ORDER BY finish_seq ${options.newest ? "DESC" : "ASC"} LIMIT $3`,
    [conversationId, options.afterFinishSeq, options.limit],
  );
  if (options.newest) rows.reverse();
  if (rows.length === 0) return [];
  const runIds = rows.map((r) => r.id);
  const messageRows = await sql<MessageRow[]>`
    SELECT * FROM messages WHERE run_id = ANY(${sql.array(runIds, "TEXT")}) ORDER BY ord`;
  const messages = messageRows.map(toMessage);
  const joined = await messagesByIds(sql, joinedInputIds(messages.flatMap((m) => m.parts)));
  return promptTurns(
    rows.map((row) => ({ id: row.id, state: row.state, finishSeq: Number(row.finish_seq) })),
    messages,
    joined,
  );
}

export async function summaryOf(sql: SQL, conversationId: string): Promise<ConversationSummary | null> {
  const [row] = await sql<Array<{ text: string; through_finish_seq: Integer; version: Integer }>>`
    SELECT text, through_finish_seq, version FROM conversation_summaries WHERE conversation_id = ${conversationId}`;
  return row
    ? { text: row.text, throughFinishSeq: Number(row.through_finish_seq), version: Number(row.version) }
    : null;
}

/** See RuntimeStore.loadCompactionCandidates; run it on one snapshot. */
export async function compactionCandidates(
  sql: SQL,
  conversationId: string,
  options: CompactionRead,
): Promise<CompactionCandidates> {
  const summary = await summaryOf(sql, conversationId);
  const after = summary?.throughFinishSeq ?? 0;
  const [count] = await sql<Array<{ n: Integer }>>`
      SELECT count(*) AS n FROM runs WHERE conversation_id = ${conversationId} AND finish_seq > ${after}
      AND state NOT IN ('superseded', 'absorbed', 'cancelled')`;
  const { pending, read } = compactionReach(Number(count!.n), options);
  const turns =
    read === 0
      ? []
      : await finishedTurns(sql, conversationId, { afterFinishSeq: after, limit: read, newest: false });
  return { summary, turns, pending };
}

/** See RuntimeStore.loadPromptContext; run it on one snapshot. */
export async function promptContext(
  sql: SQL,
  runId: string,
  options: { maxTurns: number },
): Promise<PromptContext> {
  const [row] = await sql<RunRow[]>`SELECT * FROM runs WHERE id = ${runId}`;
  if (!row) throw new SwitchboardError("not_found", `Run ${runId} does not exist.`);
  const run = toRun(row);
  const inputs = await messagesByIds(sql, run.inputMessageIds);
  const assistant = await messageById(sql, run.assistantMessageId);
  const summary = await summaryOf(sql, run.conversationId);
  const history = await finishedTurns(sql, run.conversationId, {
    afterFinishSeq: summary?.throughFinishSeq ?? 0,
    limit: options.maxTurns,
    newest: true,
  });
  const joinableRuns = (
    await sql<RunRow[]>`
        SELECT * FROM runs WHERE conversation_id = ${run.conversationId} AND state = 'queued' AND policy = 'inject'
        AND priority = 'normal' AND steps = 0 AND queue_seq > ${run.queueSeq} ORDER BY queue_seq`
  ).map(toRun);
  const joinable = joinableInputs(
    joinableRuns,
    await messagesByIds(
      sql,
      joinableRuns.flatMap((r) => r.inputMessageIds),
    ),
  );
  const [lastStep] = await sql<StepRow[]>`
    SELECT * FROM steps WHERE run_id = ${run.id} ORDER BY step DESC LIMIT 1`;
  return {
    run,
    summary,
    history,
    inputs,
    assistant,
    lastStep: lastStep ? toStepRecord(lastStep) : null,
    joinable,
  };
}
