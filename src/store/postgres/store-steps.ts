import type { TransactionSQL } from "bun";
import type { ConversationSettings, RunRecord } from "../../runtime/store.ts";
import type { MessagePart, TerminalRunState, Usage } from "../../runtime/types.ts";
import type { AdmissionSteps } from "../admission.ts";
import type { MutationSteps } from "../mutations.ts";
import { commitAnswer, finalizeStream, insertRecords } from "../outbox-writes.ts";
import { type Integer, type MessageRow, type RunRow, toMessage, toRun } from "../rows.ts";
import type { EventBody } from "../rules.ts";
import { endWithoutOwner } from "../run-writes.ts";
import { type StateRow, toStateRecord } from "../state-rows.ts";
import { type AsyncSteps, runAsync } from "../steps.ts";
import { postgresChildSteps } from "./child-steps.ts";
import { postgresOutboxSteps } from "./outbox.ts";
import { summaryOf } from "./prompt-reads.ts";

type PostgresSteps = AsyncSteps<MutationSteps>;

/** What the store lends the steps of one transaction: its ledger and its locks. */
export interface PostgresLedger {
  /** Locks a run: its conversation's head first (the order every writer follows), then its row. */
  lockRun(runId: string): Promise<RunRecord | null>;
  fenced: PostgresSteps["fenced"];
  activeRuns(conversationId: string): Promise<RunRecord[]>;
  appendEvent(body: EventBody, nowMs: number): Promise<{ seq: number; version: number }>;
  lockHead: PostgresSteps["lockHead"];
  /** The version of the conversation's head, locked; null when it has none. */
  lockExistingHead(conversationId: string): Promise<number | null>;
  insertHead(conversationId: string, nowMs: number): Promise<void>;
  lockIngress(source: string, key: string): Promise<void>;
  /** Admission's steps in the same transaction (a child's task and its result are admissions). */
  admission(): AsyncSteps<AdmissionSteps>;
}

/**
 * The mutations' reads and writes in the PostgreSQL transaction `sql`. Row locks follow the
 * store's one order (an ingress identity, the conversation's head, its runs).
 */
export function postgresStoreSteps(sql: TransactionSQL, ledger: PostgresLedger): PostgresSteps {
  const outbox = postgresOutboxSteps(sql);
  const steps: PostgresSteps = {
    ...postgresChildSteps(sql, ledger.admission),
    fenced: ledger.fenced,
    lockRun: (runId) => ledger.lockRun(runId),
    activeRuns: (conversationId) => ledger.activeRuns(conversationId),
    lockActiveRuns: async (conversationId) => {
      if ((await ledger.lockExistingHead(conversationId)) === null) return null;
      // Locked, so that a lease renewed meanwhile is seen before the run is taken over.
      const rows = await sql<RunRow[]>`
        SELECT * FROM runs WHERE conversation_id = ${conversationId}
        AND state IN ('queued', 'running', 'interrupt_requested') ORDER BY queue_seq FOR UPDATE`;
      return rows.map(toRun);
    },
    appendEvent: (body, nowMs) => ledger.appendEvent(body, nowMs),
    endRun: (run: RunRecord, state: TerminalRunState, nowMs: number, absorbedInto?: string) =>
      runAsync(endWithoutOwner(run, state, nowMs, absorbedInto), steps),
    closeRun: async (run, state, nowMs, absorbedInto) => {
      await sql`
        UPDATE runs SET state = ${state}, finished_at_ms = ${nowMs}, finish_seq = nextval('run_finish_seqs'),
          owner = NULL, lease_expires_at_ms = NULL, absorbed_into = ${absorbedInto}
        WHERE id = ${run.id}`;
    },
    settleAnswer: async (run, status) => {
      const [answer] = await sql<Array<{ parts: string }>>`
        UPDATE messages SET status = ${status} WHERE id = ${run.assistantMessageId} RETURNING parts`;
      return answer ? (JSON.parse(answer.parts) as MessagePart[]) : null;
    },
    finalizeStream: async (key, markdown, nowMs) => {
      await runAsync(finalizeStream(key, markdown, nowMs), outbox);
    },

    // ---- a run's lease and its owner's writes ----
    takeRun: async (run, taken, owner, leaseUntilMs, nowMs) => {
      const [row] = await sql<RunRow[]>`
        UPDATE runs SET state = ${taken.state}, owner = ${owner}, fencing_token = ${taken.fencingToken},
          lease_expires_at_ms = ${leaseUntilMs}, started_at_ms = COALESCE(started_at_ms, ${nowMs})
        WHERE id = ${run.id} RETURNING *`;
      return toRun(row!);
    },
    releaseRun: async (runId, state) => {
      await sql`UPDATE runs SET state = ${state}, owner = NULL, lease_expires_at_ms = NULL WHERE id = ${runId}`;
    },
    upsertStreamingAnswer: async (run, parts, nowMs) => {
      await sql`
        INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms)
        VALUES (${run.assistantMessageId}, ${run.conversationId}, ${run.id}, 'assistant',
          ${JSON.stringify(parts)}, 'streaming', ${nowMs})
        ON CONFLICT (id) DO UPDATE SET parts = excluded.parts`;
    },
    upsertStep: async (runId, step) => {
      await sql`
        INSERT INTO steps (run_id, step, model, finish_reason, usage, started_at_ms, finished_at_ms)
        VALUES (${runId}, ${step.step}, ${step.model}, ${step.finishReason}, ${JSON.stringify(step.usage)},
          ${step.startedAtMs}, ${step.finishedAtMs})
        ON CONFLICT (run_id, step) DO UPDATE SET model = excluded.model, finish_reason = excluded.finish_reason,
          usage = excluded.usage, started_at_ms = excluded.started_at_ms, finished_at_ms = excluded.finished_at_ms`;
    },
    stepUsages: async (runId) => {
      const rows = await sql<
        Array<{ usage: string }>
      >`SELECT usage FROM steps WHERE run_id = ${runId} ORDER BY step`;
      return rows.map((r) => JSON.parse(r.usage) as Usage);
    },
    setRunUsage: async (runId, steps, total) => {
      await sql`
        UPDATE runs SET steps = ${steps}, usage = ${JSON.stringify(total.usage)}, cost_complete = ${total.costComplete}
        WHERE id = ${runId}`;
    },
    insertToolOutput: async (run, spilled, nowMs) => {
      await sql`
        INSERT INTO tool_outputs (ref, conversation_id, run_id, tool_call_id, tool_name, text, created_at_ms)
        VALUES (${spilled.ref}, ${run.conversationId}, ${run.id}, ${spilled.toolCallId},
          ${spilled.toolName}, ${spilled.text}, ${nowMs})
        ON CONFLICT (ref) DO NOTHING`;
    },
    insertOutbox: (inserts, nowMs) => runAsync(insertRecords(inserts, nowMs), outbox),
    updateInputParts: async (messageId, parts) => {
      await sql`UPDATE messages SET parts = ${JSON.stringify(parts)} WHERE id = ${messageId} AND role = 'user'`;
    },

    // ---- the terminal commit and a stop request ----
    upsertAnswer: async (run, parts, status, nowMs) => {
      const [row] = await sql<MessageRow[]>`
        INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms)
        VALUES (${run.assistantMessageId}, ${run.conversationId}, ${run.id}, 'assistant',
          ${JSON.stringify(parts)}, ${status}, ${nowMs})
        ON CONFLICT (id) DO UPDATE SET parts = excluded.parts, status = excluded.status
        RETURNING *`;
      return toMessage(row!);
    },
    finishRun: async (run, state, error, nowMs) => {
      const [row] = await sql<RunRow[]>`
        UPDATE runs SET state = ${state}, finished_at_ms = ${nowMs}, finish_seq = nextval('run_finish_seqs'),
          owner = NULL, lease_expires_at_ms = NULL, error = ${error}
        WHERE id = ${run.id} RETURNING *`;
      return toRun(row!);
    },
    insertApproval: async (run, approval, nowMs) => {
      await sql`
        INSERT INTO approvals (id, conversation_id, run_id, tool_call_id, tool_name, input, binding, state,
          created_at_ms, expires_at_ms)
        VALUES (${approval.id}, ${run.conversationId}, ${run.id}, ${approval.toolCallId}, ${approval.toolName},
          ${JSON.stringify(approval.input ?? null)}, ${approval.binding}, 'pending', ${nowMs}, ${approval.expiresAtMs})`;
    },
    writeDelivery: async (delivery, nowMs) => {
      await runAsync(commitAnswer(delivery, nowMs), outbox);
    },
    markInterruptRequested: async (runId, reason) => {
      await sql`UPDATE runs SET state = 'interrupt_requested', stop_reason = ${reason} WHERE id = ${runId}`;
    },
    recordStopReason: async (runId, reason) => {
      await sql`UPDATE runs SET stop_reason = ${reason} WHERE id = ${runId}`;
    },

    // ---- the ledger's mutations ----
    keyOf: async (key) => {
      const [row] = await sql<Array<{ conversation_id: string }>>`
        SELECT conversation_id FROM conversation_keys WHERE key = ${key}`;
      return row?.conversation_id ?? null;
    },
    insertKey: async (key, conversationId, nowMs) => {
      const inserted = await sql`
        INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms)
        VALUES (${key}, ${conversationId}, 1, ${nowMs})
        ON CONFLICT (key) DO NOTHING RETURNING key`;
      return inserted.length === 1;
    },
    rebindKey: async (key, conversationId, nowMs) => {
      await sql`
        INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms)
        VALUES (${key}, ${conversationId}, 1, ${nowMs})
        ON CONFLICT (key) DO UPDATE SET conversation_id = excluded.conversation_id,
          generation = conversation_keys.generation + 1, updated_at_ms = excluded.updated_at_ms`;
    },
    insertHead: (conversationId, nowMs) => ledger.insertHead(conversationId, nowMs),
    enterConversation: async (conversationId, nowMs) => ({
      created: (await ledger.lockHead(conversationId, nowMs)).created,
    }),
    lockHead: (conversationId, nowMs) => ledger.lockHead(conversationId, nowMs),
    deleteHead: async (conversationId) => {
      await sql`DELETE FROM conversations WHERE id = ${conversationId}`;
    },
    stateSlot: async (conversationId, slot) => {
      const [row] = await sql<StateRow[]>`
        SELECT * FROM conversation_state WHERE conversation_id = ${conversationId} AND slot = ${slot}`;
      return row ? toStateRecord(row) : null;
    },
    upsertStateSlot: async (request, version) => {
      await sql`
        INSERT INTO conversation_state (conversation_id, slot, value, version, actor, updated_at_ms)
        VALUES (${request.conversationId}, ${request.slot}, ${JSON.stringify(request.value)},
          ${version}, ${request.actor}, ${request.nowMs})
        ON CONFLICT (conversation_id, slot) DO UPDATE SET value = excluded.value,
          version = excluded.version, actor = excluded.actor, updated_at_ms = excluded.updated_at_ms`;
    },
    // One statement, so two concurrent saves cannot both read the same version and both write.
    compareAndSetSummary: async ({ conversationId, text, throughFinishSeq, expectedVersion, nowMs }) => {
      const [saved] =
        expectedVersion === 0
          ? await sql<Array<{ version: Integer }>>`
              INSERT INTO conversation_summaries (conversation_id, text, through_finish_seq, version, updated_at_ms)
              VALUES (${conversationId}, ${text}, ${throughFinishSeq}, 1, ${nowMs})
              ON CONFLICT (conversation_id) DO NOTHING RETURNING version`
          : await sql<Array<{ version: Integer }>>`
              UPDATE conversation_summaries SET text = ${text}, through_finish_seq = ${throughFinishSeq},
                version = version + 1, updated_at_ms = ${nowMs}
              WHERE conversation_id = ${conversationId} AND version = ${expectedVersion}
                AND through_finish_seq < ${throughFinishSeq}
              RETURNING version`;
      return saved ? Number(saved.version) : null;
    },
    summaryVersion: async (conversationId) => (await summaryOf(sql, conversationId))?.version ?? 0,
    lockIngress: (source, key) => ledger.lockIngress(source, key),
    claimOf: async (source, key) => {
      const [seen] = await sql<Array<{ outcome: string; run_id: string | null; payload: string }>>`
        SELECT outcome, run_id, payload FROM ingress_receipts WHERE source = ${source} AND key = ${key}`;
      return seen ?? null;
    },
    insertClaim: async (request) => {
      await sql`
        INSERT INTO ingress_receipts (source, key, conversation_id, outcome, payload, created_at_ms)
        VALUES (${request.source}, ${request.key}, ${request.conversationId ?? null}, ${request.outcome},
          ${JSON.stringify(request.payload ?? null)}, ${request.nowMs})`;
    },
    deleteRunSteps: async (conversationId) => {
      await sql`DELETE FROM steps WHERE run_id IN (SELECT id FROM runs WHERE conversation_id = ${conversationId})`;
    },
    deleteRows: async (table, conversationId) => {
      await sql`DELETE FROM ${sql(table)} WHERE conversation_id = ${conversationId}`;
    },
    purgeCompanion: async (statement, conversationId) => {
      await sql.unsafe(statement.replace("?", "$1"), [conversationId]);
    },
    settingsForUpdate: async (conversationId, nowMs) => {
      await sql`
        INSERT INTO conversation_settings (conversation_id, settings, updated_at_ms) VALUES (${conversationId}, '{}', ${nowMs})
        ON CONFLICT (conversation_id) DO NOTHING`;
      const [row] = await sql<Array<{ settings: string }>>`
        SELECT settings FROM conversation_settings WHERE conversation_id = ${conversationId} FOR UPDATE`;
      return JSON.parse(row!.settings) as ConversationSettings;
    },
    writeSettings: async (conversationId, settings, nowMs) => {
      await sql`
        UPDATE conversation_settings SET settings = ${JSON.stringify(settings)}, updated_at_ms = ${nowMs}
        WHERE conversation_id = ${conversationId}`;
    },
    insertTombstone: async (conversationId, nowMs, actor) => {
      await sql`
        INSERT INTO conversation_tombstones (conversation_id, purged_at_ms, purged_by)
        VALUES (${conversationId}, ${nowMs}, ${actor})`;
    },
  };
  return steps;
}
