import type { SQL, TransactionSQL } from "bun";
import { isSwitchboardError, SwitchboardError } from "../../errors.ts";
import type { DurableEvent } from "../../runtime/events.ts";
import type {
  AcquiredRun,
  AcquireNextRequest,
  AcquireRequest,
  AdmitRequest,
  AdmitResult,
  ApprovalFilter,
  ApprovalRecord,
  CheckpointRequest,
  CompactionCandidates,
  CompactionRead,
  ConversationHead,
  ConversationSettings,
  Fence,
  FileDelivery,
  IngressClaim,
  IngressClaimResult,
  MessagePage,
  NextAcquisition,
  PromptContext,
  PurgeRecord,
  PurgeResult,
  RunRecord,
  RuntimeStore,
  RunView,
  SpilledOutput,
  StopRequestResult,
  SummarySave,
  SummarySaveResult,
  TerminalRequest,
  TerminalResult,
  ToolOutputSlice,
} from "../../runtime/store.ts";
import type {
  InputPart,
  MessagePart,
  StepRecord,
  StopReason,
  TerminalRunState,
  Usage,
} from "../../runtime/types.ts";
import type { ConversationState, StateSave, StateSaveResult, StateStore } from "../../state/store.ts";
import { newId } from "../../util/ids.ts";
import { type AdmissionSteps, admitAsync } from "../admission.ts";
import { endedStreamMarkdown, fileInsert, streamKey } from "../outbox-records.ts";
import {
  type ApprovalRow,
  type Integer,
  type MessageRow,
  type RunRow,
  toApproval,
  toMessage,
  toMessagePage,
  toRun,
} from "../rows.ts";
import {
  acquisition,
  answerStatus,
  checkFence,
  checkpointEvent,
  type EventBody,
  foreignLeaseUntil,
  nextRunnable,
  notAnInput,
  PURGE_COMPANION_SQL,
  purgeRefusal,
  releasedState,
  terminalEvent,
} from "../rules.ts";
import { type StateRow, stateDecision, stateEvent, toStateRecord } from "../state-rows.ts";
import { type AsyncSteps, runAsync } from "../steps.ts";
import { type StopSteps, stop, type TerminalSteps, terminal } from "../terminal.ts";
import { sumUsage } from "../usage.ts";
import { postgresAdmissionSteps } from "./admission-steps.ts";
import { CommitPublisher } from "./commit-publisher.ts";
import { commitAnswerDelivery, finalizeStreamRecord, insertOutboxRecords } from "./outbox.ts";
import { compactionCandidates, messageById, promptContext, summaryOf } from "./prompt-reads.ts";
import { openMigratedPool } from "./schema.ts";

interface HeadRow {
  id: string;
  version: Integer;
  last_seq: Integer;
  created_at_ms: Integer;
}

/** A locked conversation head; `created` when this transaction inserted it. */
interface LockedHead {
  version: number;
  created: boolean;
}

/** One write transaction: its connection and the events it appended, published after COMMIT. */
interface Tx {
  sql: TransactionSQL;
  events: DurableEvent[];
}

/**
 * The runtime store on PostgreSQL, for several gateway processes sharing one database.
 *
 * Mutations run in READ COMMITTED transactions that take row locks in one order: an ingress
 * identity (advisory lock), then the conversation's head row, then run rows. Every transaction
 * that changes a conversation's runs or ledger holds its head lock, so they run one after the
 * other per conversation across processes, and each statement after the lock sees what the
 * previous holder committed. Lease renewal and expiry change one column without the head lock,
 * which is why a writer that decides on a lease also locks the run row. Reads of several
 * statements share one REPEATABLE READ snapshot.
 */
export class PostgresRuntimeStore implements RuntimeStore, StateStore {
  private readonly publisher = new CommitPublisher();

  constructor(private readonly sql: SQL) {}

  onCommitted(listener: (events: DurableEvent[]) => void): () => void {
    return this.publisher.subscribe(listener);
  }

  /**
   * Runs `work` in one transaction and publishes its events after COMMIT. READ COMMITTED is
   * explicit because the locking relies on it: a statement after a lock wait sees what the
   * previous holder committed, which a server default of REPEATABLE READ would not give.
   */
  private async write<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    let settle: ((committed: boolean) => void) | undefined;
    try {
      const result = await this.sql.begin("isolation level read committed", async (sql) => {
        const tx: Tx = { sql, events: [] };
        const value = await work(tx);
        if (tx.events.length > 0) settle = this.publisher.enqueue(tx.events);
        return value;
      });
      settle?.(true);
      return result as T;
    } catch (error) {
      settle?.(false);
      throw error;
    }
  }

  /** Runs several reads on one snapshot. A single-statement read uses the pool directly. */
  private async read<T>(work: (sql: SQL) => Promise<T>): Promise<T> {
    return (await this.sql.begin("isolation level repeatable read, read only", work)) as T;
  }

  // ---- internal helpers ----

  private async runRow(sql: SQL, runId: string): Promise<RunRecord | null> {
    const [row] = await sql<RunRow[]>`SELECT * FROM runs WHERE id = ${runId}`;
    return row ? toRun(row) : null;
  }

  private async activeRuns(sql: SQL, conversationId: string): Promise<RunRecord[]> {
    const rows = await sql<RunRow[]>`
      SELECT * FROM runs WHERE conversation_id = ${conversationId}
      AND state IN ('queued', 'running', 'interrupt_requested') ORDER BY queue_seq`;
    return rows.map(toRun);
  }

  private async version(sql: SQL, conversationId: string): Promise<number> {
    const [row] = await sql<Array<{ version: Integer }>>`
      SELECT version FROM conversations WHERE id = ${conversationId}`;
    return row ? Number(row.version) : 0;
  }

  private async assertNotPurged(sql: SQL, conversationId: string): Promise<void> {
    const [tomb] = await sql`
      SELECT 1 FROM conversation_tombstones WHERE conversation_id = ${conversationId}`;
    if (tomb) {
      throw new SwitchboardError(
        "conversation_purged",
        `Conversation ${conversationId} was purged; start a new conversation instead.`,
      );
    }
  }

  private async lockExistingHead(tx: Tx, conversationId: string): Promise<number | null> {
    const [row] = await tx.sql<Array<{ version: Integer }>>`
      SELECT version FROM conversations WHERE id = ${conversationId} FOR UPDATE`;
    return row ? Number(row.version) : null;
  }

  /**
   * Locks the conversation's head row, creating it when new. Throws `conversation_purged` for a
   * purged conversation (the transaction then rolls back the head it inserted).
   */
  private async lockHead(tx: Tx, conversationId: string, nowMs: number): Promise<LockedHead> {
    let created = false;
    for (;;) {
      const version = await this.lockExistingHead(tx, conversationId);
      if (version !== null) return { version, created };
      const inserted = await tx.sql`
        INSERT INTO conversations (id, version, last_seq, created_at_ms) VALUES (${conversationId}, 0, 0, ${nowMs})
        ON CONFLICT (id) DO NOTHING RETURNING id`;
      created = inserted.length === 1;
      // A purge deletes the head. The insert waited for a purge in progress to end, so its
      // tombstone is visible now.
      await this.assertNotPurged(tx.sql, conversationId);
    }
  }

  /**
   * Locks a run for a change: its conversation's head first (the order every writer follows),
   * then the run's row. Null when the run does not exist.
   */
  private async lockRun(tx: Tx, runId: string): Promise<RunRecord | null> {
    await tx.sql`
      SELECT 1 FROM conversations WHERE id = (SELECT conversation_id FROM runs WHERE id = ${runId}) FOR UPDATE`;
    const [row] = await tx.sql<RunRow[]>`SELECT * FROM runs WHERE id = ${runId} FOR UPDATE`;
    return row ? toRun(row) : null;
  }

  private async fenced(tx: Tx, fence: Fence): Promise<RunRecord> {
    return checkFence(await this.lockRun(tx, fence.runId), fence);
  }

  /**
   * Appends a durable event and bumps the conversation version. The caller holds the head lock,
   * which also orders the event's seq.
   */
  private async appendEvent(
    tx: Tx,
    body: EventBody,
    nowMs: number,
  ): Promise<{ seq: number; version: number }> {
    const [head] = await tx.sql<Array<{ last_seq: Integer; version: Integer }>>`
      UPDATE conversations SET version = version + 1, last_seq = last_seq + 1
      WHERE id = ${body.conversationId} RETURNING last_seq, version`;
    const seq = Number(head!.last_seq);
    const event = { ...body, durable: true, seq } as DurableEvent;
    tx.events.push(event);
    await tx.sql`
      INSERT INTO events (conversation_id, seq, type, payload, at_ms)
      VALUES (${body.conversationId}, ${seq}, ${body.type}, ${JSON.stringify(event)}, ${nowMs})`;
    return { seq, version: Number(head!.version) };
  }

  /** The conversation mapped to `key`; a new one when unmapped. A mapping made concurrently wins. */
  private async resolveKey(tx: Tx, key: string, nowMs: number): Promise<string> {
    for (;;) {
      const [row] = await tx.sql<Array<{ conversation_id: string }>>`
        SELECT conversation_id FROM conversation_keys WHERE key = ${key}`;
      if (row) return row.conversation_id;
      const id = newId("conv", nowMs);
      const inserted = await tx.sql`
        INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms) VALUES (${key}, ${id}, 1, ${nowMs})
        ON CONFLICT (key) DO NOTHING RETURNING key`;
      if (inserted.length === 1) {
        await this.insertHead(tx, id, nowMs);
        return id;
      }
    }
  }

  /** Inserts the head of a conversation id this transaction just made up. */
  private async insertHead(tx: Tx, conversationId: string, nowMs: number): Promise<void> {
    await tx.sql`
      INSERT INTO conversations (id, version, last_seq, created_at_ms) VALUES (${conversationId}, 0, 0, ${nowMs})`;
  }

  /** Serializes the transactions that record one ingress identity; released at COMMIT. */
  private async lockIngress(tx: Tx, source: string, key: string): Promise<void> {
    await tx.sql`SELECT pg_advisory_xact_lock(hashtext(${source}), hashtext(${key}))`;
  }

  /** Ends a run that never started (or is being ended without its owner) in one of the terminal states. */
  private async endWithoutOwner(
    tx: Tx,
    run: RunRecord,
    state: TerminalRunState,
    nowMs: number,
    absorbedInto?: string,
  ): Promise<number> {
    await tx.sql`
      UPDATE runs SET state = ${state}, finished_at_ms = ${nowMs}, finish_seq = nextval('run_finish_seqs'),
        owner = NULL, lease_expires_at_ms = NULL, absorbed_into = ${absorbedInto ?? null}
      WHERE id = ${run.id}`;
    const [answer] = await tx.sql<Array<{ parts: string }>>`
      UPDATE messages SET status = ${answerStatus(state)} WHERE id = ${run.assistantMessageId} RETURNING parts`;
    const parts = answer ? (JSON.parse(answer.parts) as MessagePart[]) : [];
    await finalizeStreamRecord(tx.sql, streamKey(run.id), endedStreamMarkdown(state, parts), nowMs);
    const { seq } = await this.appendEvent(
      tx,
      terminalEvent(run, state, parts, { usage: run.usage, ...(absorbedInto ? { absorbedInto } : {}) }),
      nowMs,
    );
    return seq;
  }

  // ---- RuntimeStore ----

  loadCompactionCandidates(conversationId: string, options: CompactionRead): Promise<CompactionCandidates> {
    return this.read((sql) => compactionCandidates(sql, conversationId, options));
  }

  /** A compare-and-set in one statement; the conflict read runs only when it matched nothing. */
  saveSummary(request: SummarySave): Promise<SummarySaveResult> {
    const { conversationId, text, throughFinishSeq, expectedVersion, nowMs } = request;
    return this.write(async (tx) => {
      const saved =
        expectedVersion === 0
          ? await tx.sql<Array<{ version: Integer }>>`
              INSERT INTO conversation_summaries (conversation_id, text, through_finish_seq, version, updated_at_ms)
              VALUES (${conversationId}, ${text}, ${throughFinishSeq}, 1, ${nowMs})
              ON CONFLICT (conversation_id) DO NOTHING RETURNING version`
          : await tx.sql<Array<{ version: Integer }>>`
              UPDATE conversation_summaries SET text = ${text}, through_finish_seq = ${throughFinishSeq},
                version = version + 1, updated_at_ms = ${nowMs}
              WHERE conversation_id = ${conversationId} AND version = ${expectedVersion}
                AND through_finish_seq < ${throughFinishSeq}
              RETURNING version`;
      if (saved[0]) return { outcome: "saved", version: Number(saved[0].version) } as const;
      const current = await summaryOf(tx.sql, conversationId);
      return { outcome: "conflict", actualVersion: current?.version ?? 0 } as const;
    });
  }

  /**
   * One transaction per admission. Admissions to one conversation queue on its head lock; two
   * carrying one ingress identity queue on that identity first, so the second sees the first's
   * receipt.
   */
  admit(request: AdmitRequest): Promise<AdmitResult> {
    return this.write((tx) => admitAsync(request, this.admissionSteps(tx)));
  }

  /** Admission's reads and writes in transaction `tx` (see admission.ts for the algorithm). */
  private admissionSteps(tx: Tx): AsyncSteps<AdmissionSteps> {
    return postgresAdmissionSteps(tx.sql, {
      lockIngress: (ingress) => this.lockIngress(tx, ingress.source, ingress.key),
      enterConversation: async (conversationId, nowMs) => {
        await this.lockHead(tx, conversationId, nowMs);
      },
      resolveKey: (key, nowMs) => this.resolveKey(tx, key, nowMs),
      version: (conversationId) => this.version(tx.sql, conversationId),
      activeRuns: (conversationId) => this.activeRuns(tx.sql, conversationId),
      endRun: (run, state, nowMs) => this.endWithoutOwner(tx, run, state, nowMs),
      appendEvent: (body, nowMs) => this.appendEvent(tx, body, nowMs),
    });
  }

  loadRun(runId: string): Promise<RunView | null> {
    return this.read(async (sql) => {
      const run = await this.runRow(sql, runId);
      if (!run) return null;
      return { run, answer: await messageById(sql, run.assistantMessageId) };
    });
  }

  listActiveRuns(conversationId: string): Promise<RunRecord[]> {
    return this.activeRuns(this.sql, conversationId);
  }

  acquireNext(request: AcquireNextRequest): Promise<NextAcquisition> {
    return this.write(async (tx): Promise<NextAcquisition> => {
      if ((await this.lockExistingHead(tx, request.conversationId)) === null)
        return { acquired: null, heldUntilMs: null };
      // Locked, so that a lease renewed meanwhile is seen before the run is taken over.
      const active = (
        await tx.sql<RunRow[]>`
          SELECT * FROM runs WHERE conversation_id = ${request.conversationId}
          AND state IN ('queued', 'running', 'interrupt_requested') ORDER BY queue_seq FOR UPDATE`
      ).map(toRun);
      const next = nextRunnable(active, request.nowMs);
      const acquired = next ? await this.take(tx, next, active, request) : null;
      if (acquired) return { acquired, heldUntilMs: null };
      return { acquired: null, heldUntilMs: foreignLeaseUntil(active, request.owner) };
    });
  }

  acquireRun(request: AcquireRequest): Promise<AcquiredRun | null> {
    return this.write(async (tx) => {
      const run = await this.lockRun(tx, request.runId);
      if (!run) return null;
      const active = run.state === "queued" ? await this.activeRuns(tx.sql, run.conversationId) : [];
      return this.take(tx, run, active, request);
    });
  }

  /** Takes ownership of `run` when `acquisition` allows it; the caller holds its head lock. */
  private async take(
    tx: Tx,
    run: RunRecord,
    active: readonly RunRecord[],
    request: { owner: string; nowMs: number; leaseMs: number },
  ): Promise<AcquiredRun | null> {
    const { nowMs } = request;
    const taken = acquisition(run, active, nowMs);
    if (!taken) return null;
    const [row] = await tx.sql<RunRow[]>`
      UPDATE runs SET state = ${taken.state}, owner = ${request.owner}, fencing_token = ${taken.fencingToken},
        lease_expires_at_ms = ${nowMs + request.leaseMs}, started_at_ms = COALESCE(started_at_ms, ${nowMs})
      WHERE id = ${run.id} RETURNING *`;
    const { seq } = await this.appendEvent(
      tx,
      { type: "run-state", conversationId: run.conversationId, runId: run.id, state: taken.state },
      nowMs,
    );
    return { run: toRun(row!), fence: { runId: run.id, fencingToken: taken.fencingToken }, seq };
  }

  /** One conditional statement: it waits for a takeover in progress and then sees its new token. */
  async renewLease(fence: Fence, nowMs: number, leaseMs: number): Promise<boolean> {
    const result = await this.sql`
      UPDATE runs SET lease_expires_at_ms = ${nowMs + leaseMs}
      WHERE id = ${fence.runId} AND fencing_token = ${fence.fencingToken}
        AND state IN ('running', 'interrupt_requested')`;
    return result.count === 1;
  }

  async assertFence(fence: Fence): Promise<void> {
    checkFence(await this.runRow(this.sql, fence.runId), fence);
  }

  loadPromptContext(runId: string, options: { maxTurns: number }): Promise<PromptContext> {
    return this.read((sql) => promptContext(sql, runId, options));
  }

  checkpoint(request: CheckpointRequest): Promise<{ seq: number }> {
    const { nowMs, step } = request;
    return this.write(async (tx) => {
      const run = await this.fenced(tx, request.fence);
      await tx.sql`
        INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms)
        VALUES (${run.assistantMessageId}, ${run.conversationId}, ${run.id}, 'assistant',
          ${JSON.stringify(request.assistantParts)}, 'streaming', ${nowMs})
        ON CONFLICT (id) DO UPDATE SET parts = excluded.parts`;
      const seq = await this.saveStep(tx, run, step, request.assistantParts, nowMs);
      return { seq };
    });
  }

  /** A step's row, the run's usage summed over its steps, and its `checkpoint` event. */
  private async saveStep(
    tx: Tx,
    run: RunRecord,
    step: StepRecord,
    parts: readonly MessagePart[],
    nowMs: number,
  ): Promise<number> {
    await tx.sql`
      INSERT INTO steps (run_id, step, model, finish_reason, usage, started_at_ms, finished_at_ms)
      VALUES (${run.id}, ${step.step}, ${step.model}, ${step.finishReason}, ${JSON.stringify(step.usage)},
        ${step.startedAtMs}, ${step.finishedAtMs})
      ON CONFLICT (run_id, step) DO UPDATE SET model = excluded.model, finish_reason = excluded.finish_reason,
        usage = excluded.usage, started_at_ms = excluded.started_at_ms, finished_at_ms = excluded.finished_at_ms`;
    const usages = await tx.sql<Array<{ usage: string }>>`
      SELECT usage FROM steps WHERE run_id = ${run.id} ORDER BY step`;
    const total = sumUsage(usages.map((r) => JSON.parse(r.usage) as Usage));
    await tx.sql`
      UPDATE runs SET steps = ${step.step + 1}, usage = ${JSON.stringify(total.usage)},
        cost_complete = ${total.costComplete}
      WHERE id = ${run.id}`;
    return (await this.appendEvent(tx, checkpointEvent(run, step, parts), nowMs)).seq;
  }

  saveToolProgress(
    fence: Fence,
    assistantParts: MessagePart[],
    nowMs: number,
    spilled?: SpilledOutput,
  ): Promise<void> {
    return this.write(async (tx) => {
      const run = await this.fenced(tx, fence);
      await tx.sql`
        INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms)
        VALUES (${run.assistantMessageId}, ${run.conversationId}, ${run.id}, 'assistant',
          ${JSON.stringify(assistantParts)}, 'streaming', ${nowMs})
        ON CONFLICT (id) DO UPDATE SET parts = excluded.parts`;
      if (spilled) {
        await tx.sql`
          INSERT INTO tool_outputs (ref, conversation_id, run_id, tool_call_id, tool_name, text, created_at_ms)
          VALUES (${spilled.ref}, ${run.conversationId}, ${run.id}, ${spilled.toolCallId},
            ${spilled.toolName}, ${spilled.text}, ${nowMs})
          ON CONFLICT (ref) DO NOTHING`;
      }
    });
  }

  async readToolOutput(
    conversationId: string,
    ref: string,
    slice: { offset: number; length: number },
  ): Promise<ToolOutputSlice | null> {
    const [row] = await this.sql<Array<{ tool_name: string; text: string; total: number }>>`
      SELECT tool_name, substr(text, ${slice.offset + 1}, ${slice.length}) AS text,
        char_length(text)::int AS total
      FROM tool_outputs WHERE ref = ${ref} AND conversation_id = ${conversationId}`;
    return row ? { toolName: row.tool_name, text: row.text, totalChars: Number(row.total) } : null;
  }

  enqueueFiles(fence: Fence, files: FileDelivery[], nowMs: number): Promise<string[]> {
    return this.write(async (tx) => {
      const run = await this.fenced(tx, fence);
      const inserts = files.map((file) =>
        fileInsert({ runId: run.id, conversationId: run.conversationId }, file),
      );
      return await insertOutboxRecords(tx.sql, inserts, nowMs);
    });
  }

  saveInputParts(fence: Fence, messageId: string, parts: InputPart[]): Promise<void> {
    return this.write(async (tx) => {
      const run = await this.fenced(tx, fence);
      if (!run.inputMessageIds.includes(messageId)) throw notAnInput(messageId, run.id);
      await tx.sql`UPDATE messages SET parts = ${JSON.stringify(parts)} WHERE id = ${messageId} AND role = 'user'`;
    });
  }

  requestStop(runId: string, reason: StopReason, nowMs: number): Promise<StopRequestResult> {
    return this.write((tx) => runAsync(stop(runId, reason, nowMs), this.stopSteps(tx)));
  }

  commitTerminal(request: TerminalRequest): Promise<TerminalResult> {
    return this.write((tx) => runAsync(terminal(request), this.terminalSteps(tx)));
  }

  /** The terminal commit's reads and writes in transaction `tx` (see terminal.ts for the algorithm). */
  private terminalSteps(tx: Tx): AsyncSteps<TerminalSteps> {
    return {
      fenced: (fence) => this.fenced(tx, fence),
      saveStep: async (run, step, parts, nowMs) => {
        await this.saveStep(tx, run, step, parts, nowMs);
      },
      upsertAnswer: async (run, parts, status, nowMs) => {
        const [row] = await tx.sql<MessageRow[]>`
          INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms)
          VALUES (${run.assistantMessageId}, ${run.conversationId}, ${run.id}, 'assistant',
            ${JSON.stringify(parts)}, ${status}, ${nowMs})
          ON CONFLICT (id) DO UPDATE SET parts = excluded.parts, status = excluded.status
          RETURNING *`;
        return toMessage(row!);
      },
      finishRun: async (run, state, error, nowMs) => {
        const [row] = await tx.sql<RunRow[]>`
          UPDATE runs SET state = ${state}, finished_at_ms = ${nowMs}, finish_seq = nextval('run_finish_seqs'),
            owner = NULL, lease_expires_at_ms = NULL, error = ${error}
          WHERE id = ${run.id} RETURNING *`;
        return toRun(row!);
      },
      activeRuns: (conversationId) => this.activeRuns(tx.sql, conversationId),
      endRun: (run, state, nowMs, absorbedInto) => this.endWithoutOwner(tx, run, state, nowMs, absorbedInto),
      insertApproval: async (run, approval, nowMs) => {
        await tx.sql`
          INSERT INTO approvals (id, conversation_id, run_id, tool_call_id, tool_name, input, binding, state,
            created_at_ms, expires_at_ms)
          VALUES (${approval.id}, ${run.conversationId}, ${run.id}, ${approval.toolCallId}, ${approval.toolName},
            ${JSON.stringify(approval.input ?? null)}, ${approval.binding}, 'pending', ${nowMs}, ${approval.expiresAtMs})`;
      },
      writeDelivery: async (delivery, nowMs) => {
        await commitAnswerDelivery(tx.sql, delivery, nowMs);
      },
      appendEvent: (body, nowMs) => this.appendEvent(tx, body, nowMs),
    };
  }

  /** A stop request's reads and writes in transaction `tx` (see terminal.ts for the algorithm). */
  private stopSteps(tx: Tx): AsyncSteps<StopSteps> {
    return {
      lockRun: (runId) => this.lockRun(tx, runId),
      endRun: (run, state, nowMs) => this.endWithoutOwner(tx, run, state, nowMs),
      markInterruptRequested: async (runId, reason) => {
        await tx.sql`UPDATE runs SET state = 'interrupt_requested', stop_reason = ${reason} WHERE id = ${runId}`;
      },
      appendEvent: (body, nowMs) => this.appendEvent(tx, body, nowMs),
    };
  }

  /**
   * Locks the runs in queue order, the order in which an admission's policy and absorption lock
   * several runs of a conversation, so neither can deadlock with it.
   */
  async expireLeases(request: { exceptOwner: string; nowMs: number }): Promise<number> {
    const result = await this.sql`
      UPDATE runs SET lease_expires_at_ms = ${request.nowMs}
      WHERE queue_seq IN (
        SELECT queue_seq FROM runs
        WHERE state IN ('queued', 'running', 'interrupt_requested') AND owner IS NOT NULL
          AND owner <> ${request.exceptOwner} AND lease_expires_at_ms > ${request.nowMs}
        ORDER BY queue_seq FOR UPDATE
      )`;
    return result.count;
  }

  releaseRun(fence: Fence, nowMs: number): Promise<void> {
    return this.write(async (tx) => {
      const run = await this.fenced(tx, fence);
      const state = releasedState(run);
      await tx.sql`UPDATE runs SET state = ${state}, owner = NULL, lease_expires_at_ms = NULL WHERE id = ${run.id}`;
      await this.appendEvent(
        tx,
        { type: "run-state", conversationId: run.conversationId, runId: run.id, state },
        nowMs,
      );
    });
  }

  async scanRecoverable(page: { afterQueueSeq: number; limit: number }): Promise<RunRecord[]> {
    const rows = await this.sql<RunRow[]>`
      SELECT * FROM runs WHERE state IN ('queued', 'running', 'interrupt_requested')
      AND queue_seq > ${page.afterQueueSeq} ORDER BY queue_seq LIMIT ${page.limit}`;
    return rows.map(toRun);
  }

  async readEvents(conversationId: string, afterSeq: number, limit: number): Promise<DurableEvent[]> {
    const rows = await this.sql<Array<{ payload: string }>>`
      SELECT payload FROM events WHERE conversation_id = ${conversationId} AND seq > ${afterSeq}
      ORDER BY seq LIMIT ${limit}`;
    return rows.map((r) => JSON.parse(r.payload) as DurableEvent);
  }

  async listMessages(
    conversationId: string,
    page: { afterOrder: number; limit: number },
  ): Promise<MessagePage> {
    const rows = await this.sql<Array<MessageRow & { run_state: string }>>`
      SELECT m.*, r.state AS run_state FROM messages m JOIN runs r ON r.id = m.run_id
      WHERE m.conversation_id = ${conversationId} AND m.ord > ${page.afterOrder} ORDER BY m.ord LIMIT ${page.limit + 1}`;
    return toMessagePage(rows, page.limit);
  }

  resolveConversationKey(key: string, nowMs: number): Promise<string> {
    return this.write((tx) => this.resolveKey(tx, key, nowMs));
  }

  rotateConversationKey(key: string, nowMs: number): Promise<string> {
    return this.write(async (tx) => {
      const id = newId("conv", nowMs);
      await this.insertHead(tx, id, nowMs);
      await tx.sql`
        INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms) VALUES (${key}, ${id}, 1, ${nowMs})
        ON CONFLICT (key) DO UPDATE SET conversation_id = excluded.conversation_id,
          generation = conversation_keys.generation + 1, updated_at_ms = excluded.updated_at_ms`;
      return id;
    });
  }

  /**
   * Takes the head lock, creating the head if the conversation has none, so an admission that
   * would create it waits and then sees the tombstone. Finding the tombstone under the lock
   * rolls back and reports `already_purged`.
   */
  purgeConversation(
    conversationId: string,
    options: { expectedVersion?: number; nowMs: number; actor?: string },
  ): Promise<PurgeResult> {
    const { expectedVersion, nowMs } = options;
    return this.write<PurgeResult>(async (tx) => {
      const head = await this.lockHead(tx, conversationId, nowMs);
      const active = (await this.activeRuns(tx.sql, conversationId)).map((r) => r.id);
      const refusal = purgeRefusal(active, expectedVersion, head.version);
      if (refusal) {
        // A head inserted only to take the lock must not outlive a purge that did not happen.
        if (head.created) await tx.sql`DELETE FROM conversations WHERE id = ${conversationId}`;
        return refusal;
      }
      await tx.sql`
        DELETE FROM steps WHERE run_id IN (SELECT id FROM runs WHERE conversation_id = ${conversationId})`;
      for (const table of [
        "messages",
        "runs",
        "events",
        "conversation_keys",
        "tool_outputs",
        "conversation_state",
        "approvals",
        "conversation_settings",
        "conversation_summaries",
      ]) {
        await tx.sql`DELETE FROM ${tx.sql(table)} WHERE conversation_id = ${conversationId}`;
      }
      for (const statement of PURGE_COMPANION_SQL) {
        await tx.sql.unsafe(statement.replace("?", "$1"), [conversationId]);
      }
      await tx.sql`DELETE FROM conversations WHERE id = ${conversationId}`;
      await tx.sql`
        INSERT INTO conversation_tombstones (conversation_id, purged_at_ms, purged_by)
        VALUES (${conversationId}, ${nowMs}, ${options.actor ?? null})`;
      return { outcome: "purged" };
    }).catch((error: unknown) => {
      if (isSwitchboardError(error, "conversation_purged")) return { outcome: "already_purged" } as const;
      throw error;
    });
  }

  async loadState(conversationId: string): Promise<ConversationState> {
    const rows = await this.sql<StateRow[]>`
      SELECT * FROM conversation_state WHERE conversation_id = ${conversationId}`;
    return Object.fromEntries(rows.map((row) => [row.slot, toStateRecord(row)])) as ConversationState;
  }

  /** Under the conversation's head lock, like every ledger writer, so versions and seqs stay in order. */
  saveState(request: StateSave): Promise<StateSaveResult> {
    return this.write(async (tx): Promise<StateSaveResult> => {
      const head = await this.lockHead(tx, request.conversationId, request.nowMs);
      const [row] = await tx.sql<StateRow[]>`
        SELECT * FROM conversation_state
        WHERE conversation_id = ${request.conversationId} AND slot = ${request.slot}`;
      const current = row ? toStateRecord(row) : null;
      const decision = stateDecision(request.expectedVersion, current);
      if (decision.kind === "conflict") {
        if (head.created) await tx.sql`DELETE FROM conversations WHERE id = ${request.conversationId}`;
        return { outcome: "conflict", actual: current };
      }
      const { seq } = await this.appendEvent(tx, stateEvent(request, decision.version), request.nowMs);
      await tx.sql`
        INSERT INTO conversation_state (conversation_id, slot, value, version, actor, updated_at_ms)
        VALUES (${request.conversationId}, ${request.slot}, ${JSON.stringify(request.value)},
          ${decision.version}, ${request.actor}, ${request.nowMs})
        ON CONFLICT (conversation_id, slot) DO UPDATE SET value = excluded.value,
          version = excluded.version, actor = excluded.actor, updated_at_ms = excluded.updated_at_ms`;
      return { outcome: "saved", version: decision.version, seq };
    });
  }

  async loadPurge(conversationId: string): Promise<PurgeRecord | null> {
    const [row] = await this.sql<Array<{ purged_at_ms: string | number; purged_by: string | null }>>`
      SELECT purged_at_ms, purged_by FROM conversation_tombstones WHERE conversation_id = ${conversationId}`;
    return row ? { conversationId, purgedAtMs: Number(row.purged_at_ms), purgedBy: row.purged_by } : null;
  }

  /** Ties order keys byte-wise (`COLLATE "C"`), as SQLite does, whatever the database's collation. */
  async latestIngressPerTarget(
    source: string,
    limit: number,
  ): Promise<Array<{ replyTarget: string; updateKey: string }>> {
    const rows = await this.sql<Array<{ target: string; key: string }>>`
      SELECT target, key FROM (
        SELECT payload::json ->> 'replyTarget' AS target, key, created_at_ms,
          ROW_NUMBER() OVER (
            PARTITION BY payload::json ->> 'replyTarget'
            ORDER BY created_at_ms DESC, length(key) DESC, key COLLATE "C" DESC
          ) AS rank
        FROM ingress_receipts WHERE source = ${source}
      ) AS latest
      WHERE rank = 1 AND target IS NOT NULL
      ORDER BY created_at_ms DESC, length(key) DESC, key COLLATE "C" DESC
      LIMIT ${limit}`;
    return rows.map((row) => ({ replyTarget: row.target, updateKey: row.key }));
  }

  async ingressByPrefix(
    source: string,
    keyPrefix: string,
    limit: number,
  ): Promise<Array<{ key: string; payload: unknown; atMs: number }>> {
    const rows = await this.sql<Array<{ key: string; payload: string; created_at_ms: Integer }>>`
      SELECT key, payload, created_at_ms FROM ingress_receipts
      WHERE source = ${source} AND substr(key, 1, ${keyPrefix.length}) = ${keyPrefix}
      ORDER BY created_at_ms DESC, key COLLATE "C" DESC LIMIT ${limit}`;
    return rows.map((row) => ({
      key: row.key,
      payload: JSON.parse(row.payload),
      atMs: Number(row.created_at_ms),
    }));
  }

  /** Holds the identity's lock, as an admission does. */
  async ingressOutcome(source: string, key: string): Promise<string | null> {
    const [row] = await this.sql<Array<{ outcome: string }>>`
      SELECT outcome FROM ingress_receipts WHERE source = ${source} AND key = ${key}`;
    return row?.outcome ?? null;
  }

  claimIngress(request: IngressClaim): Promise<IngressClaimResult> {
    return this.write(async (tx) => {
      await this.lockIngress(tx, request.source, request.key);
      const [seen] = await tx.sql<Array<{ outcome: string; run_id: string | null; payload: string }>>`
        SELECT outcome, run_id, payload FROM ingress_receipts WHERE source = ${request.source} AND key = ${request.key}`;
      if (seen)
        return {
          fresh: false,
          previousOutcome: seen.outcome,
          runId: seen.run_id,
          previousPayload: JSON.parse(seen.payload) as unknown,
        };
      await tx.sql`
        INSERT INTO ingress_receipts (source, key, conversation_id, outcome, payload, created_at_ms)
        VALUES (${request.source}, ${request.key}, ${request.conversationId ?? null}, ${request.outcome},
          ${JSON.stringify(request.payload ?? null)}, ${request.nowMs})`;
      return { fresh: true, previousOutcome: null, runId: null, previousPayload: null };
    });
  }

  async loadConversationSettings(conversationId: string): Promise<ConversationSettings> {
    const [row] = await this.sql<Array<{ settings: string }>>`
      SELECT settings FROM conversation_settings WHERE conversation_id = ${conversationId}`;
    return row ? (JSON.parse(row.settings) as ConversationSettings) : {};
  }

  /** Locks the settings row (inserting an empty one first) so concurrent merges do not lose keys. */
  saveConversationSettings(
    conversationId: string,
    settings: ConversationSettings,
    nowMs: number,
  ): Promise<void> {
    return this.write(async (tx) => {
      await tx.sql`
        INSERT INTO conversation_settings (conversation_id, settings, updated_at_ms) VALUES (${conversationId}, '{}', ${nowMs})
        ON CONFLICT (conversation_id) DO NOTHING`;
      const [row] = await tx.sql<Array<{ settings: string }>>`
        SELECT settings FROM conversation_settings WHERE conversation_id = ${conversationId} FOR UPDATE`;
      const merged = { ...(JSON.parse(row!.settings) as ConversationSettings), ...settings };
      await tx.sql`
        UPDATE conversation_settings SET settings = ${JSON.stringify(merged)}, updated_at_ms = ${nowMs}
        WHERE conversation_id = ${conversationId}`;
    });
  }

  async loadApproval(approvalId: string): Promise<ApprovalRecord | null> {
    const [row] = await this.sql<ApprovalRow[]>`SELECT * FROM approvals WHERE id = ${approvalId}`;
    return row ? toApproval(row) : null;
  }

  async listApprovals(filter: ApprovalFilter): Promise<ApprovalRecord[]> {
    const state = filter.state ?? null;
    const conversationId = filter.conversationId ?? null;
    const expiredAtMs = filter.expiredAtMs ?? null;
    const rows = await this.sql<ApprovalRow[]>`
      SELECT * FROM approvals
      WHERE (${state}::text IS NULL OR state = ${state})
        AND (${conversationId}::text IS NULL OR conversation_id = ${conversationId})
        AND (${expiredAtMs}::bigint IS NULL OR (state = 'pending' AND expires_at_ms <= ${expiredAtMs}))
      ORDER BY created_at_ms DESC, id DESC LIMIT ${filter.limit ?? 100}`;
    return rows.map(toApproval);
  }

  async loadOrCreateSecret(name: string, candidate: string, nowMs: number): Promise<string> {
    await this.sql`
      INSERT INTO secrets (name, value, created_at_ms) VALUES (${name}, ${candidate}, ${nowMs})
      ON CONFLICT (name) DO NOTHING`;
    const [row] = await this.sql<Array<{ value: string }>>`SELECT value FROM secrets WHERE name = ${name}`;
    return row!.value;
  }

  async loadConversation(conversationId: string): Promise<ConversationHead | null> {
    const [row] = await this.sql<HeadRow[]>`SELECT * FROM conversations WHERE id = ${conversationId}`;
    return row
      ? {
          id: row.id,
          version: Number(row.version),
          lastSeq: Number(row.last_seq),
          createdAtMs: Number(row.created_at_ms),
        }
      : null;
  }

  async close(): Promise<void> {
    await this.sql.close();
  }
}

/**
 * Connects to `url` (e.g. `postgres://user@host:5432/switchboard`) with a pool of Bun's default
 * 10 connections and migrates the schema. Throws `schema_unsupported` for a newer or foreign
 * schema, closing the pool. Several processes may open the same database; none of them may run
 * the runtime's recovery with `takeOverLeases`, which would end the others' live leases.
 */
export async function openPostgresRuntimeStore(url: string): Promise<PostgresRuntimeStore> {
  return new PostgresRuntimeStore(await openMigratedPool(url));
}
