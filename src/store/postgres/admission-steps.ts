import type { TransactionSQL } from "bun";
import type { ConversationSettings } from "../../runtime/store.ts";
import { newId } from "../../util/ids.ts";
import type { AdmissionSteps, LedgerSteps } from "../admission.ts";
import { withAlwaysAllowed } from "../rules.ts";
import type { AsyncSteps } from "../steps.ts";

/** What the store lends admission on PostgreSQL: its ledger and its locks, in the transaction. */
export type PostgresLedger = AsyncSteps<LedgerSteps & Pick<AdmissionSteps, "enterConversation">> & {
  /** Serializes the transactions that record one ingress identity; released at COMMIT. */
  lockIngress(ingress: { source: string; key: string }): Promise<void>;
};

/**
 * Admission's reads and writes in the PostgreSQL transaction `sql` (see admission.ts for the
 * algorithm). A receipt is read under its identity's lock, so of two admissions carrying one
 * identity the second sees the first's receipt.
 */
export function postgresAdmissionSteps(
  sql: TransactionSQL,
  ledger: PostgresLedger,
): AsyncSteps<AdmissionSteps> {
  const { lockIngress: _, ...steps } = ledger;
  return {
    ...steps,
    receipt: async (ingress) => {
      await ledger.lockIngress(ingress);
      const [seen] = await sql<ReturnType<AdmissionSteps["receipt"]>[]>`
        SELECT conversation_id, run_id, input_message_id, outcome FROM ingress_receipts
        WHERE source = ${ingress.source} AND key = ${ingress.key}`;
      return seen ?? null;
    },
    priorInput: async (conversationId, idempotencyKey) => {
      const [prior] = await sql<Array<{ fingerprint: string; run_id: string; id: string }>>`
        SELECT fingerprint, run_id, id FROM messages
        WHERE conversation_id = ${conversationId} AND idempotency_key = ${idempotencyKey}`;
      return prior ?? null;
    },
    markStopRequested: async (runId, reason) => {
      await sql`UPDATE runs SET state = 'interrupt_requested', stop_reason = ${reason} WHERE id = ${runId}`;
    },
    joinRun: async (run, inputMessageId) => {
      await sql`
        UPDATE runs SET input_message_ids = ${JSON.stringify([...run.inputMessageIds, inputMessageId])}
        WHERE id = ${run.id}`;
    },
    insertRun: async ({ id, conversationId, priority, request }) => {
      await sql`
        INSERT INTO runs (id, conversation_id, state, priority, policy, input_message_ids,
          assistant_message_id, context, created_at_ms)
        VALUES (${id}, ${conversationId}, 'queued', ${priority}, ${request.policy},
          ${JSON.stringify([request.proposedIds.messageId])}, ${newId("msg", request.nowMs)},
          ${JSON.stringify(request.context ?? null)}, ${request.nowMs})`;
    },
    insertInput: async ({ id, conversationId, runId, request }) => {
      await sql`
        INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms, idempotency_key, fingerprint)
        VALUES (${id}, ${conversationId}, ${runId}, 'user', ${JSON.stringify(request.parts)}, 'complete',
          ${request.nowMs}, ${request.idempotencyKey}, ${request.fingerprint})`;
    },
    approvalState: async (approvalId) => {
      const [row] = await sql<Array<{ state: string; conversation_id: string }>>`
        SELECT state, conversation_id FROM approvals WHERE id = ${approvalId} FOR UPDATE`;
      return row ?? null;
    },
    decideApproval: async (decision, successorRunId, nowMs) => {
      await sql`
        UPDATE approvals SET state = ${decision.state}, decided_by = ${decision.decidedBy},
          successor_run_id = ${successorRunId}, decided_at_ms = ${nowMs}
        WHERE id = ${decision.approvalId} AND state = 'pending'`;
    },
    allowTool: async (conversationId, tool, nowMs) => {
      await sql`
        INSERT INTO conversation_settings (conversation_id, settings, updated_at_ms)
        VALUES (${conversationId}, '{}', ${nowMs}) ON CONFLICT (conversation_id) DO NOTHING`;
      const [row] = await sql<Array<{ settings: string }>>`
        SELECT settings FROM conversation_settings WHERE conversation_id = ${conversationId} FOR UPDATE`;
      const merged = withAlwaysAllowed(JSON.parse(row!.settings) as ConversationSettings, tool);
      await sql`
        UPDATE conversation_settings SET settings = ${JSON.stringify(merged)}, updated_at_ms = ${nowMs}
        WHERE conversation_id = ${conversationId}`;
    },
    cancelApprovals: async (conversationId, nowMs) => {
      const rows = await sql<Array<{ id: string }>>`
        UPDATE approvals SET state = 'cancelled', decided_by = 'a newer message', decided_at_ms = ${nowMs}
        WHERE conversation_id = ${conversationId} AND state = 'pending' RETURNING id`;
      return rows.map((r) => r.id).sort();
    },
    recordReceipt: async ({ ingress, conversationId, runId, inputMessageId, nowMs }) => {
      await sql`
        INSERT INTO ingress_receipts (source, key, conversation_id, run_id, input_message_id, outcome, payload, created_at_ms)
        VALUES (${ingress.source}, ${ingress.key}, ${conversationId}, ${runId}, ${inputMessageId}, 'admitted',
          ${JSON.stringify(ingress.payload ?? null)}, ${nowMs})
        ON CONFLICT (source, key) DO UPDATE SET conversation_id = excluded.conversation_id, run_id = excluded.run_id,
          input_message_id = excluded.input_message_id, outcome = excluded.outcome`;
    },
  };
}
