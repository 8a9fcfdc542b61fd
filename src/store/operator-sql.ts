/**
 * Operator views that span conversations, in SQL both engines run as written; each backend only
 * supplies its placeholders (`?1` on SQLite, `$1` on PostgreSQL).
 */
import {
  LIVE_SCHEDULE_STATES,
  SCHEDULE_STATES,
  type Schedule,
  type ScheduleRepository,
  type ScheduleState,
} from "../../schedules/types.ts";
import type { CommandInput, ConversationSummary } from "../operator/types.ts";
import { ACTIVE_RUN_STATES, type StepRecord, type Usage } from "../runtime/types.ts";
import type { Integer } from "./rows.ts";

export const ACTIVE_STATES_SQL = `(${ACTIVE_RUN_STATES.map((s) => `'${s}'`).join(", ")})`;

export interface ConversationSummaryRow {
  id: string;
  version: Integer;
  created_at_ms: Integer;
  key: string | null;
  last_activity_at_ms: Integer | null;
  runs: Integer;
  active_runs: Integer;
}

/**
 * Summaries of the conversations `where` selects, ordered and limited by `orderAndLimit`. The
 * conversation's last event is its last activity (every admission, step and terminal commit
 * appends one). `pageOfActivity` filters, orders and limits that activity (see
 * `conversationPageSql`). Runs are counted in one pass over the selected conversations only.
 */
export function conversationSummarySql(where: string, pageOfActivity: string): string {
  return `
    WITH activity AS (
      SELECT c.id, c.version, c.created_at_ms,
        (SELECT e.at_ms FROM events e WHERE e.conversation_id = c.id AND e.seq = c.last_seq) AS last_activity_at_ms
      FROM conversations c ${where}
    ),
    recent AS (SELECT * FROM activity ${pageOfActivity}),
    run_counts AS (
      SELECT conversation_id, count(*) AS runs,
        count(*) FILTER (WHERE state IN ${ACTIVE_STATES_SQL}) AS active_runs
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

/**
 * A numbered query parameter as each engine spells it: `?1` on SQLite; `$1::bigint` on PostgreSQL,
 * whose planner needs the type of a parameter that may be NULL.
 */
export type Param = (n: number, type: "text" | "bigint") => string;

/**
 * A page of conversations, most recently active first (never-active ones by creation time), after
 * the key (`p(1)` activity ms, `p(2)` id) of the previous page's last one; `p(3)` the limit. When
 * `matching`, only conversations with a conversation_lookup term LIKE `p(4)` (a `containsPattern`):
 * the filter selects from every conversation before the page is ordered, so age does not matter.
 */
export function conversationPageSql(p: Param, matching = false): string {
  return conversationSummarySql(
    matching
      ? `WHERE c.id IN (SELECT conversation_id FROM conversation_lookup WHERE term LIKE ${p(4, "text")} ESCAPE '\\')`
      : "",
    `WHERE (${p(1, "bigint")} IS NULL OR (COALESCE(last_activity_at_ms, created_at_ms), id) < (${p(1, "bigint")}, ${p(2, "text")}))
     ORDER BY COALESCE(last_activity_at_ms, created_at_ms) DESC, id DESC LIMIT ${p(3, "bigint")}`,
  );
}

/**
 * The LIKE pattern (ESCAPE '\') that finds `text` anywhere in a lower-cased term: lower-cased
 * itself, with `%`, `_` and the escape character taken literally.
 */
export function containsPattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Runs newest first: `p(1)` state, `p(2)` conversation, `p(3)` before this queue_seq, `p(4)` limit; NULL: any. */
export function runPageSql(p: Param): string {
  return `SELECT * FROM runs
    WHERE (${p(1, "text")} IS NULL OR state = ${p(1, "text")}) AND (${p(2, "text")} IS NULL OR conversation_id = ${p(2, "text")})
      AND (${p(3, "bigint")} IS NULL OR queue_seq < ${p(3, "bigint")})
    ORDER BY queue_seq DESC LIMIT ${p(4, "bigint")}`;
}

/**
 * Outbox records newest first by (created_at_ms, ordinal, id): `p(1)` state, `p(2)` conversation,
 * `p(3..5)` the previous page's last key, `p(6)` limit; NULL: any.
 */
export function outboxPageSql(p: Param): string {
  return `SELECT * FROM outbox
    WHERE (${p(1, "text")} IS NULL OR state = ${p(1, "text")}) AND (${p(2, "text")} IS NULL OR conversation_id = ${p(2, "text")})
      AND (${p(3, "bigint")} IS NULL OR (created_at_ms, ordinal, id) < (${p(3, "bigint")}, ${p(4, "bigint")}, ${p(5, "text")}))
    ORDER BY created_at_ms DESC, ordinal DESC, id DESC LIMIT ${p(6, "bigint")}`;
}

/** A conversation's command receipts newest first: `p(1)` conversation, `p(2)` limit. */
export function commandInputSql(p: Param): string {
  return `SELECT outcome, payload, created_at_ms FROM ingress_receipts
    WHERE conversation_id = ${p(1, "text")} AND outcome LIKE 'command:%'
    ORDER BY created_at_ms DESC, key DESC LIMIT ${p(2, "bigint")}`;
}

export interface CommandInputRow {
  outcome: string;
  payload: string;
  created_at_ms: Integer;
}

export function toCommandInput(row: CommandInputRow): CommandInput {
  let text = "";
  try {
    const payload = JSON.parse(row.payload) as { text?: unknown };
    if (typeof payload.text === "string") text = payload.text;
  } catch {
    // A receipt whose payload is not JSON shows the command's name only.
  }
  return { command: row.outcome.slice("command:".length), text, atMs: Number(row.created_at_ms) };
}

export interface StepRow {
  run_id: string;
  step: Integer;
  model: string;
  finish_reason: string;
  usage: string;
  started_at_ms: Integer;
  finished_at_ms: Integer;
}

export function toStep(row: StepRow): StepRecord & { runId: string } {
  return { runId: row.run_id, ...toStepRecord(row) };
}

export function toStepRecord(row: StepRow): StepRecord {
  return {
    step: Number(row.step),
    model: row.model,
    finishReason: row.finish_reason,
    usage: JSON.parse(row.usage) as Usage,
    startedAtMs: Number(row.started_at_ms),
    finishedAtMs: Number(row.finished_at_ms),
  };
}

/** A conversation's messages newest first with their run's state: `p(1)` conversation, `p(2)` before this order, `p(3)` limit. */
export function messagePageSql(p: Param): string {
  return `SELECT m.*, r.state AS run_state FROM messages m JOIN runs r ON r.id = m.run_id
    WHERE m.conversation_id = ${p(1, "text")} AND (${p(2, "bigint")} IS NULL OR m.ord < ${p(2, "bigint")})
    ORDER BY m.ord DESC LIMIT ${p(3, "bigint")}`;
}

export function toConversationSummary(row: ConversationSummaryRow): ConversationSummary {
  return {
    id: row.id,
    key: row.key,
    version: Number(row.version),
    createdAtMs: Number(row.created_at_ms),
    lastActivityAtMs: row.last_activity_at_ms === null ? null : Number(row.last_activity_at_ms),
    runs: Number(row.runs),
    activeRuns: Number(row.active_runs),
  };
}

/**
 * Schedules of every conversation (or one), oldest first. The repository owns the row → Schedule
 * mapping (and its validation), so this asks it per conversation `conversationsWith` names.
 */
export async function listSchedulesAcross(
  schedules: ScheduleRepository,
  filter: { conversationId?: string; includeEnded: boolean },
  conversationsWith: (states: readonly ScheduleState[]) => Promise<string[]>,
): Promise<Schedule[]> {
  const states = filter.includeEnded ? SCHEDULE_STATES : LIVE_SCHEDULE_STATES;
  const conversationIds =
    filter.conversationId !== undefined ? [filter.conversationId] : await conversationsWith(states);
  const lists = await Promise.all(conversationIds.map((id) => schedules.listByConversation(id, states)));
  return lists.flat().sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
}
