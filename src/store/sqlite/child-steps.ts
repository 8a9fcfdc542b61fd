import type { Database, SQLQueryBindings } from "bun:sqlite";
import type { AdmissionSteps } from "../admission.ts";
import {
  type ChildRow,
  childInsertValues,
  childSelectSql,
  childTargetWhere,
  INSERT_CHILD_SQL,
  INSERT_RESULT_OUTPUT_SQL,
  resultOutputValues,
  SETTLE_CHILD_SQL,
  settleChildValues,
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
      db.query(INSERT_CHILD_SQL(p)).run(...childInsertValues(child, (wait) => (wait ? 1 : 0)));
    },
    settleChild: (handle, settled, nowMs) => {
      db.query(SETTLE_CHILD_SQL(p)).run(...settleChildValues(handle, settled, nowMs));
    },
    isPurged: (conversationId) =>
      db.query("SELECT 1 FROM conversation_tombstones WHERE conversation_id = ?").get(conversationId) !==
      null,
    insertResultOutput: (output, nowMs) => {
      db.query(INSERT_RESULT_OUTPUT_SQL(p)).run(...resultOutputValues(output, nowMs));
    },
  };
}
