import type { Database } from "bun:sqlite";
import type { ConversationSettings, RunRecord } from "../../runtime/store.ts";
import type { MessagePart, TerminalRunState, Usage } from "../../runtime/types.ts";
import type { AdmissionSteps } from "../admission.ts";
import type { MutationSteps } from "../mutations.ts";
import { commitAnswer, finalizeStream, insertRecords } from "../outbox-writes.ts";
import { type MessageRow, type RunRow, toMessage, toRun } from "../rows.ts";
import type { EventBody } from "../rules.ts";
import { summaryConflict } from "../rules.ts";
import { endWithoutOwner, type RunWriteSteps } from "../run-writes.ts";
import { type StateRow, toStateRecord } from "../state-rows.ts";
import { runSync } from "../steps.ts";
import { sqliteChildSteps } from "./child-steps.ts";
import { sqliteOutboxSteps } from "./outbox.ts";
import { summaryOf } from "./prompt-reads.ts";

/** What the store lends its steps: its ledger, which keeps the events a transaction appends. */
export interface SqliteLedger {
  runRow(runId: string): RunRecord | null;
  activeRuns(conversationId: string): RunRecord[];
  /** Appends a durable event (creating the head, or throwing for a purged conversation); its seq. */
  appendEvent(body: EventBody, nowMs: number): number;
  /** Creates the conversation's head unless it has one; throws `conversation_purged` for a purged one. */
  ensureConversation(conversationId: string, nowMs: number): void;
  assertNotPurged(conversationId: string): void;
  version(conversationId: string): number;
  nextFinishSeq(): number;
  fenced: RunWriteSteps["fenced"];
  /** Admission's steps on the same connection (a child's task and its result are admissions). */
  admission(): AdmissionSteps;
}

const ANSWER_STREAMING = `INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms)
  VALUES (?, ?, ?, 'assistant', ?, 'streaming', ?)
  ON CONFLICT(id) DO UPDATE SET parts = excluded.parts`;

/**
 * The mutations' reads and writes on a SQLite connection, each inside the calling transaction.
 * The connection is the database's one writer, so the locking steps only read (or do nothing).
 */
export function sqliteStoreSteps(db: Database, ledger: SqliteLedger): MutationSteps {
  const outbox = sqliteOutboxSteps(db);
  const steps: MutationSteps = {
    ...sqliteChildSteps(db, ledger.admission),
    fenced: ledger.fenced,
    lockRun: (runId) => ledger.runRow(runId),
    activeRuns: (conversationId) => ledger.activeRuns(conversationId),
    lockActiveRuns: (conversationId) => ledger.activeRuns(conversationId),
    appendEvent: (body, nowMs) => ({ seq: ledger.appendEvent(body, nowMs) }),
    endRun: (run: RunRecord, state: TerminalRunState, nowMs: number, absorbedInto?: string) =>
      runSync(endWithoutOwner(run, state, nowMs, absorbedInto), steps),
    closeRun: (run, state, nowMs, absorbedInto) => {
      db.query(
        `UPDATE runs SET state = ?, finished_at_ms = ?, finish_seq = ?, owner = NULL, lease_expires_at_ms = NULL,
         absorbed_into = ? WHERE id = ?`,
      ).run(state, nowMs, ledger.nextFinishSeq(), absorbedInto, run.id);
    },
    settleAnswer: (run, status) => {
      const answer = db
        .query("UPDATE messages SET status = ? WHERE id = ? RETURNING parts")
        .get(status, run.assistantMessageId) as { parts: string } | null;
      return answer ? (JSON.parse(answer.parts) as MessagePart[]) : null;
    },
    finalizeStream: (key, markdown, nowMs) => {
      runSync(finalizeStream(key, markdown, nowMs), outbox);
    },

    // ---- a run's lease and its owner's writes ----
    takeRun: (run, taken, owner, leaseUntilMs, nowMs) =>
      toRun(
        db
          .query(
            `UPDATE runs SET state = ?, owner = ?, fencing_token = ?, lease_expires_at_ms = ?,
             started_at_ms = COALESCE(started_at_ms, ?) WHERE id = ? RETURNING *`,
          )
          .get(taken.state, owner, taken.fencingToken, leaseUntilMs, nowMs, run.id) as RunRow,
      ),
    releaseRun: (runId, state) => {
      db.query("UPDATE runs SET state = ?, owner = NULL, lease_expires_at_ms = NULL WHERE id = ?").run(
        state,
        runId,
      );
    },
    upsertStreamingAnswer: (run, parts, nowMs) => {
      db.query(ANSWER_STREAMING).run(
        run.assistantMessageId,
        run.conversationId,
        run.id,
        JSON.stringify(parts),
        nowMs,
      );
    },
    upsertStep: (runId, step) => {
      db.query(
        `INSERT OR REPLACE INTO steps (run_id, step, model, finish_reason, usage, started_at_ms, finished_at_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        runId,
        step.step,
        step.model,
        step.finishReason,
        JSON.stringify(step.usage),
        step.startedAtMs,
        step.finishedAtMs,
      );
    },
    stepUsages: (runId) =>
      (
        db.query("SELECT usage FROM steps WHERE run_id = ? ORDER BY step").all(runId) as Array<{
          usage: string;
        }>
      ).map((r) => JSON.parse(r.usage) as Usage),
    setRunUsage: (runId, steps, total) => {
      db.query("UPDATE runs SET steps = ?, usage = ?, cost_complete = ? WHERE id = ?").run(
        steps,
        JSON.stringify(total.usage),
        total.costComplete ? 1 : 0,
        runId,
      );
    },
    insertToolOutput: (run, spilled, nowMs) => {
      db.query(
        `INSERT INTO tool_outputs (ref, conversation_id, run_id, tool_call_id, tool_name, text, created_at_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(ref) DO NOTHING`,
      ).run(
        spilled.ref,
        run.conversationId,
        run.id,
        spilled.toolCallId,
        spilled.toolName,
        spilled.text,
        nowMs,
      );
    },
    insertOutbox: (inserts, nowMs) => runSync(insertRecords(inserts, nowMs), outbox),
    updateInputParts: (messageId, parts) => {
      db.query("UPDATE messages SET parts = ? WHERE id = ? AND role = 'user'").run(
        JSON.stringify(parts),
        messageId,
      );
    },

    // ---- the terminal commit and a stop request ----
    upsertAnswer: (run, parts, status, nowMs) =>
      toMessage(
        db
          .query(
            `INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms)
             VALUES (?, ?, ?, 'assistant', ?, ?, ?)
             ON CONFLICT(id) DO UPDATE SET parts = excluded.parts, status = excluded.status RETURNING *`,
          )
          .get(
            run.assistantMessageId,
            run.conversationId,
            run.id,
            JSON.stringify(parts),
            status,
            nowMs,
          ) as MessageRow,
      ),
    finishRun: (run, state, error, nowMs) =>
      toRun(
        db
          .query(
            `UPDATE runs SET state = ?, finished_at_ms = ?, finish_seq = ?, owner = NULL, lease_expires_at_ms = NULL,
             error = ? WHERE id = ? RETURNING *`,
          )
          .get(state, nowMs, ledger.nextFinishSeq(), error, run.id) as RunRow,
      ),
    insertApproval: (run, approval, nowMs) => {
      db.query(
        `INSERT INTO approvals (id, conversation_id, run_id, tool_call_id, tool_name, input, binding, state,
           created_at_ms, expires_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
      ).run(
        approval.id,
        run.conversationId,
        run.id,
        approval.toolCallId,
        approval.toolName,
        JSON.stringify(approval.input ?? null),
        approval.binding,
        nowMs,
        approval.expiresAtMs,
      );
    },
    writeDelivery: (delivery, nowMs) => {
      runSync(commitAnswer(delivery, nowMs), outbox);
    },
    markInterruptRequested: (runId, reason) => {
      db.query("UPDATE runs SET state = 'interrupt_requested', stop_reason = ? WHERE id = ?").run(
        reason,
        runId,
      );
    },
    recordStopReason: (runId, reason) => {
      db.query("UPDATE runs SET stop_reason = ? WHERE id = ?").run(reason, runId);
    },

    // ---- the ledger's mutations ----
    keyOf: (key) =>
      (
        db.query("SELECT conversation_id FROM conversation_keys WHERE key = ?").get(key) as {
          conversation_id: string;
        } | null
      )?.conversation_id ?? null,
    insertKey: (key, conversationId, nowMs) => {
      db.query(
        "INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms) VALUES (?, ?, 1, ?)",
      ).run(key, conversationId, nowMs);
      return true;
    },
    rebindKey: (key, conversationId, nowMs) => {
      db.query(
        `INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms) VALUES (?, ?, 1, ?)
         ON CONFLICT(key) DO UPDATE SET conversation_id = excluded.conversation_id,
           generation = generation + 1, updated_at_ms = excluded.updated_at_ms`,
      ).run(key, conversationId, nowMs);
    },
    insertHead: (conversationId, nowMs) => ledger.ensureConversation(conversationId, nowMs),
    enterConversation: () => ({ created: false }),
    lockHead: (conversationId) => {
      ledger.assertNotPurged(conversationId);
      return { version: ledger.version(conversationId), created: false };
    },
    deleteHead: (conversationId) => {
      db.query("DELETE FROM conversations WHERE id = ?").run(conversationId);
    },
    stateSlot: (conversationId, slot) => {
      const row = db
        .query("SELECT * FROM conversation_state WHERE conversation_id = ? AND slot = ?")
        .get(conversationId, slot) as StateRow | null;
      return row ? toStateRecord(row) : null;
    },
    upsertStateSlot: (request, version) => {
      db.query(
        `INSERT INTO conversation_state (conversation_id, slot, value, version, actor, updated_at_ms)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (conversation_id, slot) DO UPDATE SET value = excluded.value,
           version = excluded.version, actor = excluded.actor, updated_at_ms = excluded.updated_at_ms`,
      ).run(
        request.conversationId,
        request.slot,
        JSON.stringify(request.value),
        version,
        request.actor,
        request.nowMs,
      );
    },
    compareAndSetSummary: (request) => {
      const current = summaryOf(db, request.conversationId);
      if (summaryConflict(current, request)) return null;
      const version = (current?.version ?? 0) + 1;
      db.query(
        `INSERT INTO conversation_summaries (conversation_id, text, through_finish_seq, version, updated_at_ms)
         VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(conversation_id) DO UPDATE SET text = excluded.text,
           through_finish_seq = excluded.through_finish_seq, version = excluded.version,
           updated_at_ms = excluded.updated_at_ms`,
      ).run(request.conversationId, request.text, request.throughFinishSeq, version, request.nowMs);
      return version;
    },
    summaryVersion: (conversationId) => summaryOf(db, conversationId)?.version ?? 0,
    lockIngress: () => {},
    claimOf: (source, key) =>
      db
        .query("SELECT outcome, run_id, payload FROM ingress_receipts WHERE source = ? AND key = ?")
        .get(source, key) as {
        outcome: string;
        run_id: string | null;
        payload: string;
      } | null,
    insertClaim: (request) => {
      db.query(
        `INSERT INTO ingress_receipts (source, key, conversation_id, outcome, payload, created_at_ms)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ).run(
        request.source,
        request.key,
        request.conversationId ?? null,
        request.outcome,
        JSON.stringify(request.payload ?? null),
        request.nowMs,
      );
    },
    deleteRunSteps: (conversationId) => {
      db.query("DELETE FROM steps WHERE run_id IN (SELECT id FROM runs WHERE conversation_id = ?)").run(
        conversationId,
      );
    },
    deleteRows: (table, conversationId) => {
      db.query(`DELETE FROM ${table} WHERE conversation_id = ?`).run(conversationId);
    },
    purgeCompanion: (statement, conversationId) => {
      db.query(statement).run(conversationId);
    },
    settingsForUpdate: (conversationId) => {
      const row = db
        .query("SELECT settings FROM conversation_settings WHERE conversation_id = ?")
        .get(conversationId) as {
        settings: string;
      } | null;
      return row ? (JSON.parse(row.settings) as ConversationSettings) : {};
    },
    writeSettings: (conversationId, settings, nowMs) => {
      db.query(
        `INSERT INTO conversation_settings (conversation_id, settings, updated_at_ms) VALUES (?, ?, ?)
         ON CONFLICT(conversation_id) DO UPDATE SET settings = excluded.settings, updated_at_ms = excluded.updated_at_ms`,
      ).run(conversationId, JSON.stringify(settings), nowMs);
    },
    insertTombstone: (conversationId, nowMs, actor) => {
      db.query(
        "INSERT INTO conversation_tombstones (conversation_id, purged_at_ms, purged_by) VALUES (?, ?, ?)",
      ).run(conversationId, nowMs, actor);
    },
  };
  return steps;
}
