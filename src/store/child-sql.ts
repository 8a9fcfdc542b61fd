/**
 * Child agents' table and queries, written once: both engines run this SQL, each with its own
 * numbered parameters (`?1` on SQLite, `$1` on PostgreSQL) and its own flag values.
 */
import type { ChildState, ChildTarget } from "../children/store.ts";
import type { RunState } from "../runtime/types.ts";
import type { ChildInsert, ChildLink, ChildSettled, ResultOutput } from "./children.ts";
import type { Integer } from "./rows.ts";
import type { Dialect } from "./tables.sql.ts";

/**
 * One row per spawn (SQLite's migration 24, PostgreSQL's 21): keyed by its handle, which is derived
 * from (parent run, tool call), and unique on that pair too, so a replayed spawn finds its child.
 * `result_context` is the parent run's context, which the result's input is admitted with.
 */
export const childAgentsSchemaSql = ({ big, flag }: Dialect): string => `
CREATE TABLE child_agents (
  handle TEXT PRIMARY KEY,
  parent_run_id TEXT NOT NULL,
  parent_conversation_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  agent TEXT NOT NULL,
  task TEXT NOT NULL,
  wait ${flag("wait")},
  depth INTEGER NOT NULL,
  conversation_id TEXT NOT NULL UNIQUE,
  run_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running', 'delivered', 'cancelled')),
  result_context TEXT NOT NULL,
  result_state TEXT,
  result_run_id TEXT,
  created_at_ms ${big} NOT NULL,
  finished_at_ms ${big},
  UNIQUE (parent_run_id, tool_call_id)
);
CREATE INDEX child_agents_by_parent ON child_agents (parent_conversation_id, state);
CREATE INDEX child_agents_by_parent_run ON child_agents (parent_run_id);
`;

export interface ChildRow {
  handle: string;
  parent_run_id: string;
  parent_conversation_id: string;
  tool_call_id: string;
  agent: string;
  task: string;
  wait: number | boolean;
  depth: Integer;
  conversation_id: string;
  run_id: string;
  state: string;
  result_context: string;
  result_state: string | null;
  result_run_id: string | null;
  created_at_ms: Integer;
  finished_at_ms: Integer | null;
  latest_run_id: string | null;
  latest_state: string | null;
  latest_steps: Integer | null;
  latest_started_at_ms: Integer | null;
  latest_finished_at_ms: Integer | null;
}

/** Links with their conversation's latest run, `where` and `tail` (order, limit) applied. */
export function childSelectSql(where: string, tail = "ORDER BY c.created_at_ms, c.handle"): string {
  return `SELECT c.*, r.id AS latest_run_id, r.state AS latest_state, r.steps AS latest_steps,
      r.started_at_ms AS latest_started_at_ms, r.finished_at_ms AS latest_finished_at_ms
    FROM child_agents c
    LEFT JOIN runs r ON r.id = (
      SELECT id FROM runs WHERE conversation_id = c.conversation_id ORDER BY queue_seq DESC LIMIT 1)
    WHERE ${where} ${tail}`;
}

/** The condition selecting `target`'s links, with its one parameter (`p(1)`). */
export function childTargetWhere(
  target: ChildTarget,
  p: (n: number) => string,
): { where: string; param: string } {
  if ("handle" in target) return { where: `c.handle = ${p(1)}`, param: target.handle };
  if ("parentRunId" in target) return { where: `c.parent_run_id = ${p(1)}`, param: target.parentRunId };
  return { where: `c.parent_conversation_id = ${p(1)}`, param: target.parentConversationId };
}

export const INSERT_CHILD_SQL = (p: (n: number) => string): string =>
  `INSERT INTO child_agents (handle, parent_run_id, parent_conversation_id, tool_call_id, agent, task, wait,
     depth, conversation_id, run_id, state, result_context, created_at_ms)
   VALUES (${[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(p).join(", ")}, 'running', ${p(11)}, ${p(12)})`;

/** INSERT_CHILD_SQL's values; `wait` as the engine stores a flag. */
export const childInsertValues = (child: ChildInsert, flag: (wait: boolean) => boolean | number) => [
  child.handle,
  child.parentRunId,
  child.parentConversationId,
  child.toolCallId,
  child.agent,
  child.task,
  flag(child.wait),
  child.depth,
  child.conversationId,
  child.runId,
  JSON.stringify(child.resultContext ?? null),
  child.nowMs,
];

export const SETTLE_CHILD_SQL = (p: (n: number) => string): string =>
  `UPDATE child_agents SET state = ${p(2)}, result_state = ${p(3)}, result_run_id = ${p(4)}, finished_at_ms = ${p(5)}
   WHERE handle = ${p(1)} AND state = 'running'`;

export const settleChildValues = (handle: string, settled: ChildSettled, nowMs: number) => [
  handle,
  settled.state,
  settled.resultState,
  settled.resultRunId,
  nowMs,
];

export const INSERT_RESULT_OUTPUT_SQL = (p: (n: number) => string): string =>
  `INSERT INTO tool_outputs (ref, conversation_id, run_id, tool_call_id, tool_name, text, created_at_ms)
   VALUES (${[1, 2, 3, 4, 5, 6, 7].map(p).join(", ")})`;

export const resultOutputValues = (output: ResultOutput, nowMs: number) => [
  output.ref,
  output.conversationId,
  output.runId,
  output.toolCallId,
  output.toolName,
  output.text,
  nowMs,
];

export function toChildLink(row: ChildRow): ChildLink {
  const n = (value: Integer | null) => (value === null ? null : Number(value));
  return {
    handle: row.handle,
    agent: row.agent,
    task: row.task,
    wait: row.wait === true || row.wait === 1,
    depth: Number(row.depth),
    parentRunId: row.parent_run_id,
    parentConversationId: row.parent_conversation_id,
    toolCallId: row.tool_call_id,
    conversationId: row.conversation_id,
    runId: row.run_id,
    state: row.state as ChildState,
    run: {
      id: row.latest_run_id ?? row.run_id,
      state: (row.latest_state ?? "cancelled") as RunState,
      steps: n(row.latest_steps) ?? 0,
      startedAtMs: n(row.latest_started_at_ms),
      finishedAtMs: n(row.latest_finished_at_ms),
    },
    resultState: row.result_state,
    resultRunId: row.result_run_id,
    createdAtMs: Number(row.created_at_ms),
    finishedAtMs: n(row.finished_at_ms),
    resultContext: JSON.parse(row.result_context) as unknown,
  };
}
