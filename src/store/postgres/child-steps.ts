import type { TransactionSQL } from "bun";
import type { ChildTarget } from "../../children/store.ts";
import type { AdmissionSteps } from "../admission.ts";
import * as childSql from "../child-sql.ts";
import type { ChildLink, ChildSteps } from "../children.ts";
import type { AsyncSteps } from "../steps.ts";

const p = (n: number) => `$${n}`;

/**
 * The children's steps in the PostgreSQL transaction `sql`. A parent conversation's head is
 * locked before any of its children's (see ChildSteps.lockParentOf), and every change to a link
 * holds its parent's head, so the links of one parent change one transaction at a time.
 */
export function postgresChildSteps(
  sql: TransactionSQL,
  admission: () => AsyncSteps<AdmissionSteps>,
): AsyncSteps<ChildSteps> {
  const links = async (where: string, ...params: unknown[]): Promise<ChildLink[]> =>
    ((await sql.unsafe(childSql.childSelectSql(where), params)) as childSql.ChildRow[]).map(
      childSql.toChildLink,
    );
  const lockHead = async (conversationId: string | null | undefined) => {
    if (conversationId) await sql`SELECT 1 FROM conversations WHERE id = ${conversationId} FOR UPDATE`;
  };
  const parentOf = async (target: ChildTarget): Promise<string | null> => {
    if ("parentConversationId" in target) return target.parentConversationId;
    if ("parentRunId" in target) {
      const [row] = await sql<Array<{ conversation_id: string }>>`
        SELECT conversation_id FROM runs WHERE id = ${target.parentRunId}`;
      return row?.conversation_id ?? null;
    }
    const [row] = await sql<Array<{ parent_conversation_id: string }>>`
      SELECT parent_conversation_id FROM child_agents WHERE handle = ${target.handle}`;
    return row?.parent_conversation_id ?? null;
  };
  return {
    admissionStep: (name, args) =>
      (admission()[name] as (...a: unknown[]) => Promise<unknown>)(...args) as Promise<unknown>,
    lockParentOf: async (runId) => {
      const [row] = await sql<Array<{ parent_conversation_id: string }>>`
        SELECT c.parent_conversation_id FROM child_agents c
        WHERE c.conversation_id = (SELECT conversation_id FROM runs WHERE id = ${runId})`;
      await lockHead(row?.parent_conversation_id);
    },
    lockChildrenOf: async (target) => {
      await lockHead(await parentOf(target));
    },
    childBySpawn: async (parentRunId, toolCallId) =>
      (await links(`c.parent_run_id = $1 AND c.tool_call_id = $2`, parentRunId, toolCallId))[0] ?? null,
    childByHandle: async (handle) => (await links("c.handle = $1", handle))[0] ?? null,
    childOfConversation: async (conversationId) =>
      (await links("c.conversation_id = $1", conversationId))[0] ?? null,
    runningChildren: async (target) => {
      const { where, param } = childSql.childTargetWhere(target, p);
      return await links(`${where} AND c.state = 'running'`, param);
    },
    insertChild: async (child) => {
      await sql.unsafe(
        childSql.INSERT_CHILD_SQL(p),
        childSql.childInsertValues(child, (wait) => wait),
      );
    },
    settleChild: async (handle, settled, nowMs) => {
      await sql.unsafe(childSql.SETTLE_CHILD_SQL(p), childSql.settleChildValues(handle, settled, nowMs));
    },
    isPurged: async (conversationId) =>
      (await sql`SELECT 1 FROM conversation_tombstones WHERE conversation_id = ${conversationId}`).length > 0,
    insertResultOutput: async (output, nowMs) => {
      await sql.unsafe(childSql.INSERT_RESULT_OUTPUT_SQL(p), childSql.resultOutputValues(output, nowMs));
    },
  };
}
