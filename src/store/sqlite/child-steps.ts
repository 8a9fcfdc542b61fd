import type { Database, SQLQueryBindings } from "bun:sqlite";
import type { AdmissionSteps } from "../admission.ts";
import {
  type ChildRow,
  childSelectSql,
  childTargetWhere,
  INSERT_CHILD_SQL,
  INSERT_RESULT_OUTPUT_SQL,
  SETTLE_CHILD_SQL,
  toChildLink,
} from "../child-sql.ts";
import type { ChildLink, ChildSteps } from "../children.ts";

const p = (n: number) => `?${n}`;

/**
 * The children's steps on a SQLite connection, inside the calling transaction. The connection is
 * the database's one writer, so the locking steps do nothing.
 */
export function sqliteChildSteps(db: Database, admission: () => AdmissionSteps): ChildSteps {
  const links = (where: string, ...params: SQLQueryBindings[]): ChildLink[] =>
    (db.query(childSelectSql(where)).all(...params) as ChildRow[]).map(toChildLink);
  return {
    admissionStep: (name, args) => (admission()[name] as (...a: unknown[]) => unknown)(...args),
    lockParentOf: () => {},
    lockChildrenOf: () => {},
    childBySpawn: (parentRunId, toolCallId) =>
      links(`c.parent_run_id = ${p(1)} AND c.tool_call_id = ${p(2)}`, parentRunId, toolCallId)[0] ?? null,
    childByHandle: (handle) => links(`c.handle = ${p(1)}`, handle)[0] ?? null,
    childOfConversation: (conversationId) => links(`c.conversation_id = ${p(1)}`, conversationId)[0] ?? null,
    runningChildren: (target) => {
      const { where, param } = childTargetWhere(target, p);
      return links(`${where} AND c.state = 'running'`, param);
    },
    insertChild: (child) => {
      db.query(INSERT_CHILD_SQL(p)).run(
        child.handle,
        child.parentRunId,
        child.parentConversationId,
        child.toolCallId,
        child.agent,
        child.task,
        child.wait ? 1 : 0,
        child.depth,
        child.conversationId,
        child.runId,
        JSON.stringify(child.resultContext ?? null),
        child.nowMs,
      );
    },
    settleChild: (handle, settled, nowMs) => {
      db.query(SETTLE_CHILD_SQL(p)).run(
        handle,
        settled.state,
        settled.resultState,
        settled.resultRunId,
        nowMs,
      );
    },
    isPurged: (conversationId) =>
      db.query("SELECT 1 FROM conversation_tombstones WHERE conversation_id = ?").get(conversationId) !==
      null,
    insertResultOutput: (output, nowMs) => {
      db.query(INSERT_RESULT_OUTPUT_SQL(p)).run(
        output.ref,
        output.conversationId,
        output.runId,
        output.toolCallId,
        output.toolName,
        output.text,
        nowMs,
      );
    },
  };
}
