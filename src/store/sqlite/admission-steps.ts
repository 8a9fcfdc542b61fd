import type { Database } from "bun:sqlite";
import type { ConversationSettings } from "../../runtime/store.ts";
import { newId } from "../../util/ids.ts";
import type { AdmissionSteps, LedgerSteps } from "../admission.ts";
import { withAlwaysAllowed } from "../rules.ts";

/**
 * Admission's reads and writes on a SQLite connection, each inside the admitting transaction
 * (see admission.ts for the algorithm); `ledger` supplies those the store shares with its other
 * mutations.
 */
export function sqliteAdmissionSteps(db: Database, ledger: LedgerSteps): AdmissionSteps {
  return {
    ...ledger,
    receipt: (ingress) =>
      db
        .query(
          "SELECT conversation_id, run_id, input_message_id, outcome FROM ingress_receipts WHERE source = ? AND key = ?",
        )
        .get(ingress.source, ingress.key) as ReturnType<AdmissionSteps["receipt"]>,
    // The connection is the database's one writer; the head is created by the first event.
    enterConversation: () => {},
    priorInput: (conversationId, idempotencyKey) =>
      db
        .query(
          "SELECT fingerprint, run_id, id FROM messages WHERE conversation_id = ? AND idempotency_key = ?",
        )
        .get(conversationId, idempotencyKey) as ReturnType<AdmissionSteps["priorInput"]>,
    markStopRequested: (runId, reason) => {
      db.query("UPDATE runs SET state = 'interrupt_requested', stop_reason = ? WHERE id = ?").run(
        reason,
        runId,
      );
    },
    joinRun: (run, inputMessageId) => {
      db.query("UPDATE runs SET input_message_ids = ? WHERE id = ?").run(
        JSON.stringify([...run.inputMessageIds, inputMessageId]),
        run.id,
      );
    },
    insertRun: ({ id, conversationId, priority, request }) => {
      // queue_seq is the rowid: SQLite assigns max + 1, the run's place in durable order.
      db.query(
        `INSERT INTO runs (id, conversation_id, state, priority, policy, input_message_ids,
           assistant_message_id, context, created_at_ms) VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?)`,
      ).run(
        id,
        conversationId,
        priority,
        request.policy,
        JSON.stringify([request.proposedIds.messageId]),
        newId("msg", request.nowMs),
        JSON.stringify(request.context ?? null),
        request.nowMs,
      );
    },
    insertInput: ({ id, conversationId, runId, request }) => {
      db.query(
        `INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms, idempotency_key, fingerprint)
           VALUES (?, ?, ?, 'user', ?, 'complete', ?, ?, ?)`,
      ).run(
        id,
        conversationId,
        runId,
        JSON.stringify(request.parts),
        request.nowMs,
        request.idempotencyKey,
        request.fingerprint,
      );
    },
    approvalState: (approvalId) =>
      db.query("SELECT state, conversation_id FROM approvals WHERE id = ?").get(approvalId) as ReturnType<
        AdmissionSteps["approvalState"]
      >,
    decideApproval: (decision, successorRunId, nowMs) => {
      db.query(
        `UPDATE approvals SET state = ?, decided_by = ?, successor_run_id = ?, decided_at_ms = ?
         WHERE id = ? AND state = 'pending'`,
      ).run(decision.state, decision.decidedBy, successorRunId, nowMs, decision.approvalId);
    },
    allowTool: (conversationId, tool, nowMs) => {
      const row = db
        .query("SELECT settings FROM conversation_settings WHERE conversation_id = ?")
        .get(conversationId) as { settings: string } | null;
      const merged = withAlwaysAllowed(row ? (JSON.parse(row.settings) as ConversationSettings) : {}, tool);
      db.query(
        `INSERT INTO conversation_settings (conversation_id, settings, updated_at_ms) VALUES (?, ?, ?)
         ON CONFLICT(conversation_id) DO UPDATE SET settings = excluded.settings, updated_at_ms = excluded.updated_at_ms`,
      ).run(conversationId, JSON.stringify(merged), nowMs);
    },
    cancelApprovals: (conversationId, nowMs) =>
      (
        db
          .query(
            `UPDATE approvals SET state = 'cancelled', decided_by = 'a newer message', decided_at_ms = ?
             WHERE conversation_id = ? AND state = 'pending' RETURNING id`,
          )
          .all(nowMs, conversationId) as Array<{ id: string }>
      ).map((r) => r.id),
    recordReceipt: ({ ingress, conversationId, runId, inputMessageId, nowMs }) => {
      db.query(
        `INSERT INTO ingress_receipts (source, key, conversation_id, run_id, input_message_id, outcome, payload, created_at_ms)
           VALUES (?, ?, ?, ?, ?, 'admitted', ?, ?)
           ON CONFLICT(source, key) DO UPDATE SET conversation_id = excluded.conversation_id, run_id = excluded.run_id,
             input_message_id = excluded.input_message_id, outcome = excluded.outcome`,
      ).run(
        ingress.source,
        ingress.key,
        conversationId,
        runId,
        inputMessageId,
        JSON.stringify(ingress.payload ?? null),
        nowMs,
      );
    },
  };
}
