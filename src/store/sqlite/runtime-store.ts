import type { Database } from "bun:sqlite";
import { SwitchboardError } from "../../errors.ts";
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
import { type AdmissionSteps, admitSync } from "../admission.ts";
import { endedStreamMarkdown, fileInsert, streamKey } from "../outbox-records.ts";
import {
  type ApprovalRow,
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
  summaryConflict,
  terminalEvent,
} from "../rules.ts";
import { type StateRow, stateDecision, stateEvent, toStateRecord } from "../state-rows.ts";
import { runSync } from "../steps.ts";
import { type StopSteps, stop, type TerminalSteps, terminal } from "../terminal.ts";
import { sumUsage } from "../usage.ts";
import { sqliteAdmissionSteps } from "./admission-steps.ts";
import { GroupCommit, type Outcome } from "./group-commit.ts";
import { commitAnswerDeliverySync, finalizeStreamRecordSync, insertOutboxRecordsSync } from "./outbox.ts";
import { compactionCandidates, promptContext, summaryOf } from "./prompt-reads.ts";

const ACTIVE = "('queued', 'running', 'interrupt_requested')";

/**
 * The runtime store on bun:sqlite. Mutations run in `BEGIN IMMEDIATE` transactions, reads in
 * deferred ones (one WAL snapshot). Methods are async to satisfy the backend-neutral interface;
 * the work itself is synchronous and serialized by the single connection.
 */
export class SqliteRuntimeStore implements RuntimeStore, StateStore {
  private readonly listeners = new Set<(events: DurableEvent[]) => void>();
  /** Conversation version after the latest appendEvent in the transaction in progress. */
  private lastVersion = 0;
  /** Events appended by the transaction in progress; published only after it commits. */
  private appended: DurableEvent[] = [];

  /** Admission's reads and writes on this connection (see admission.ts for the algorithm). */
  private readonly admissionSteps: AdmissionSteps;
  /** The terminal commit's and a stop request's (see terminal.ts). */
  private readonly terminalSteps: TerminalSteps;
  private readonly stopSteps: StopSteps;

  constructor(readonly db: Database) {
    this.admissionSteps = sqliteAdmissionSteps(db, {
      resolveKey: (key, nowMs) => this.resolveKey(key, nowMs),
      version: (conversationId) => this.version(conversationId),
      activeRuns: (conversationId) => this.activeRuns(conversationId),
      endRun: (run, state, nowMs) => this.endWithoutOwner(run, state, nowMs),
      appendEvent: (body, nowMs) => ({ seq: this.appendEvent(body, nowMs), version: this.lastVersion }),
    });
    const ledger = {
      endRun: (run: RunRecord, state: TerminalRunState, nowMs: number, absorbedInto?: string) =>
        this.endWithoutOwner(run, state, nowMs, absorbedInto),
      appendEvent: (body: EventBody, nowMs: number) => ({ seq: this.appendEvent(body, nowMs) }),
    };
    this.terminalSteps = {
      ...ledger,
      fenced: (fence) => this.fenced(fence),
      saveStep: (run, step, parts, nowMs) => this.saveStep(run, step, parts, nowMs),
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
            .get(state, nowMs, this.nextFinishSeq(), error, run.id) as RunRow,
        ),
      activeRuns: (conversationId) => this.activeRuns(conversationId),
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
      writeDelivery: (delivery, nowMs) => commitAnswerDeliverySync(db, delivery, nowMs),
    };
    this.stopSteps = {
      ...ledger,
      lockRun: (runId) => this.runRow(runId),
      markInterruptRequested: (runId, reason) => {
        db.query("UPDATE runs SET state = 'interrupt_requested', stop_reason = ? WHERE id = ?").run(
          reason,
          runId,
        );
      },
    };
  }

  onCommitted(listener: (events: DurableEvent[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private publish(): void {
    const events = this.appended;
    this.appended = [];
    if (events.length === 0) return;
    for (const listener of this.listeners) {
      try {
        listener(events);
      } catch {
        // An observer's failure must not undo or hide a committed mutation.
      }
    }
  }

  private write<T>(work: () => T): Promise<T> {
    try {
      this.appended = [];
      const result = this.db.transaction(work).immediate();
      this.publish();
      return Promise.resolve(result);
    } catch (error) {
      this.appended = [];
      return Promise.reject(error);
    }
  }

  private read<T>(work: () => T): Promise<T> {
    try {
      return Promise.resolve(this.db.transaction(work).deferred());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  // ---- internal helpers (call only inside a transaction) ----

  private runRow(runId: string): RunRecord | null {
    const row = this.db.query("SELECT * FROM runs WHERE id = ?").get(runId) as RunRow | null;
    return row ? toRun(row) : null;
  }

  private activeRuns(conversationId: string): RunRecord[] {
    return (
      this.db
        .query(`SELECT * FROM runs WHERE conversation_id = ? AND state IN ${ACTIVE} ORDER BY queue_seq`)
        .all(conversationId) as RunRow[]
    ).map(toRun);
  }

  private assertNotPurged(conversationId: string): void {
    const tomb = this.db
      .query("SELECT 1 FROM conversation_tombstones WHERE conversation_id = ?")
      .get(conversationId);
    if (tomb) {
      throw new SwitchboardError(
        "conversation_purged",
        `Conversation ${conversationId} was purged; start a new conversation instead.`,
      );
    }
  }

  private ensureConversation(conversationId: string, nowMs: number): void {
    // A purge deletes the head, so an existing head proves the conversation is not purged.
    if (this.db.query("SELECT 1 FROM conversations WHERE id = ?").get(conversationId)) return;
    this.assertNotPurged(conversationId);
    this.db
      .query(
        "INSERT INTO conversations (id, version, last_seq, created_at_ms) VALUES (?, 0, 0, ?) ON CONFLICT(id) DO NOTHING",
      )
      .run(conversationId, nowMs);
  }

  /**
   * Appends a durable event and bumps the conversation version; returns the event's seq. A
   * conversation's first event creates its head, or throws if it was purged (the caller's
   * transaction then rolls back whatever it wrote before).
   */
  private appendEvent(body: EventBody, nowMs: number): number {
    const bump = this.db.query(
      "UPDATE conversations SET version = version + 1, last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq, version",
    );
    type Head = { last_seq: number; version: number };
    let head = bump.get(body.conversationId) as Head | null;
    if (!head) {
      this.ensureConversation(body.conversationId, nowMs);
      head = bump.get(body.conversationId) as Head;
    }
    this.lastVersion = head.version;
    const event = { ...body, durable: true, seq: head.last_seq } as DurableEvent;
    this.appended.push(event);
    this.db
      .query("INSERT INTO events (conversation_id, seq, type, payload, at_ms) VALUES (?, ?, ?, ?, ?)")
      .run(body.conversationId, head.last_seq, body.type, JSON.stringify(event), nowMs);
    return head.last_seq;
  }

  private version(conversationId: string): number {
    const row = this.db.query("SELECT version FROM conversations WHERE id = ?").get(conversationId) as {
      version: number;
    } | null;
    return row?.version ?? 0;
  }

  private nextFinishSeq(): number {
    const row = this.db
      .query(
        "SELECT COALESCE((SELECT finish_seq FROM runs WHERE finish_seq IS NOT NULL ORDER BY finish_seq DESC LIMIT 1), 0) + 1 AS n",
      )
      .get() as {
      n: number;
    };
    return row.n;
  }

  private resolveKey(key: string, nowMs: number): string {
    const row = this.db.query("SELECT conversation_id FROM conversation_keys WHERE key = ?").get(key) as {
      conversation_id: string;
    } | null;
    if (row) return row.conversation_id;
    const id = newId("conv", nowMs);
    this.db
      .query(
        "INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms) VALUES (?, ?, 1, ?)",
      )
      .run(key, id, nowMs);
    this.ensureConversation(id, nowMs);
    return id;
  }

  /** Ends a run that never started (or is being ended without its owner) in one of the terminal states. */
  private endWithoutOwner(
    run: RunRecord,
    state: TerminalRunState,
    nowMs: number,
    absorbedInto?: string,
  ): number {
    this.db
      .query(
        `UPDATE runs SET state = ?, finished_at_ms = ?, finish_seq = ?, owner = NULL, lease_expires_at_ms = NULL,
         absorbed_into = ? WHERE id = ?`,
      )
      .run(state, nowMs, this.nextFinishSeq(), absorbedInto ?? null, run.id);
    const answer = this.db
      .query("UPDATE messages SET status = ? WHERE id = ? RETURNING parts")
      .get(answerStatus(state), run.assistantMessageId) as { parts: string } | null;
    const parts = answer ? (JSON.parse(answer.parts) as MessagePart[]) : [];
    finalizeStreamRecordSync(this.db, streamKey(run.id), endedStreamMarkdown(state, parts), nowMs);
    return this.appendEvent(
      terminalEvent(run, state, parts, { usage: run.usage, ...(absorbedInto ? { absorbedInto } : {}) }),
      nowMs,
    );
  }

  private fenced(fence: Fence): RunRecord {
    return checkFence(this.runRow(fence.runId), fence);
  }

  // ---- RuntimeStore ----

  loadCompactionCandidates(conversationId: string, options: CompactionRead): Promise<CompactionCandidates> {
    return this.read(() => compactionCandidates(this.db, conversationId, options));
  }

  saveSummary(request: SummarySave): Promise<SummarySaveResult> {
    return this.write(() => {
      const current = summaryOf(this.db, request.conversationId);
      const actual = current?.version ?? 0;
      if (summaryConflict(current, request)) return { outcome: "conflict", actualVersion: actual } as const;
      this.db
        .query(
          `INSERT INTO conversation_summaries (conversation_id, text, through_finish_seq, version, updated_at_ms)
           VALUES (?, ?, ?, ?, ?)
           ON CONFLICT(conversation_id) DO UPDATE SET text = excluded.text,
             through_finish_seq = excluded.through_finish_seq, version = excluded.version,
             updated_at_ms = excluded.updated_at_ms`,
        )
        .run(request.conversationId, request.text, request.throughFinishSeq, actual + 1, request.nowMs);
      return { outcome: "saved", version: actual + 1 } as const;
    });
  }

  /**
   * Admissions that arrive together share one write transaction (group commit). Every caller's
   * promise settles only after the shared commit.
   */
  admit(request: AdmitRequest): Promise<AdmitResult> {
    return this.admissions.submit(request);
  }

  private readonly admissions = new GroupCommit<AdmitRequest, AdmitResult>((requests, isolate) =>
    this.commitAdmissions(requests, isolate),
  );

  private commitAdmissions(requests: readonly AdmitRequest[], isolate: boolean): Array<Outcome<AdmitResult>> {
    const outcomes: Array<Outcome<AdmitResult>> = [];
    this.appended = [];
    try {
      this.db
        .transaction(() => {
          for (const request of requests) {
            if (!isolate) {
              outcomes.push({ ok: true, value: this.admitOne(request) });
              continue;
            }
            const mark = this.appended.length;
            try {
              outcomes.push({ ok: true, value: this.db.transaction(() => this.admitOne(request))() });
            } catch (error) {
              this.appended.length = mark;
              outcomes.push({ ok: false, error });
            }
          }
        })
        .immediate();
    } catch (error) {
      this.appended = [];
      throw error;
    }
    this.publish();
    return outcomes;
  }

  private admitOne(request: AdmitRequest): AdmitResult {
    return admitSync(request, this.admissionSteps);
  }

  loadRun(runId: string): Promise<RunView | null> {
    return this.read(() => {
      const run = this.runRow(runId);
      if (!run) return null;
      const row = this.db
        .query("SELECT * FROM messages WHERE id = ?")
        .get(run.assistantMessageId) as MessageRow | null;
      return { run, answer: row ? toMessage(row) : null };
    });
  }

  listActiveRuns(conversationId: string): Promise<RunRecord[]> {
    return this.read(() => this.activeRuns(conversationId));
  }

  acquireNext(request: AcquireNextRequest): Promise<NextAcquisition> {
    return this.write(() => {
      const active = this.activeRuns(request.conversationId);
      const next = nextRunnable(active, request.nowMs);
      const acquired = next ? this.take(next, active, request) : null;
      if (acquired) return { acquired, heldUntilMs: null };
      return { acquired: null, heldUntilMs: foreignLeaseUntil(active, request.owner) };
    });
  }

  acquireRun(request: AcquireRequest): Promise<AcquiredRun | null> {
    return this.write(() => {
      const run = this.runRow(request.runId);
      if (!run) return null;
      return this.take(run, run.state === "queued" ? this.activeRuns(run.conversationId) : [], request);
    });
  }

  /** Takes ownership of `run` when `acquisition` allows it (inside a write transaction). */
  private take(
    run: RunRecord,
    active: readonly RunRecord[],
    request: { owner: string; nowMs: number; leaseMs: number },
  ): AcquiredRun | null {
    const { nowMs } = request;
    const taken = acquisition(run, active, nowMs);
    if (!taken) return null;
    const row = this.db
      .query(
        `UPDATE runs SET state = ?, owner = ?, fencing_token = ?, lease_expires_at_ms = ?,
         started_at_ms = COALESCE(started_at_ms, ?) WHERE id = ? RETURNING *`,
      )
      .get(taken.state, request.owner, taken.fencingToken, nowMs + request.leaseMs, nowMs, run.id) as RunRow;
    const seq = this.appendEvent(
      { type: "run-state", conversationId: run.conversationId, runId: run.id, state: taken.state },
      nowMs,
    );
    return { run: toRun(row), fence: { runId: run.id, fencingToken: taken.fencingToken }, seq };
  }

  renewLease(fence: Fence, nowMs: number, leaseMs: number): Promise<boolean> {
    return this.write(() => {
      const result = this.db
        .query(
          `UPDATE runs SET lease_expires_at_ms = ? WHERE id = ? AND fencing_token = ?
           AND state IN ('running', 'interrupt_requested')`,
        )
        .run(nowMs + leaseMs, fence.runId, fence.fencingToken);
      return result.changes === 1;
    });
  }

  assertFence(fence: Fence): Promise<void> {
    return this.read(() => {
      this.fenced(fence);
    });
  }

  loadPromptContext(runId: string, options: { maxTurns: number }): Promise<PromptContext> {
    return this.read(() => promptContext(this.db, runId, options));
  }

  checkpoint(request: CheckpointRequest): Promise<{ seq: number }> {
    return this.write(() => {
      const run = this.fenced(request.fence);
      const { nowMs, step } = request;
      this.db
        .query(
          `INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms)
           VALUES (?, ?, ?, 'assistant', ?, 'streaming', ?)
           ON CONFLICT(id) DO UPDATE SET parts = excluded.parts`,
        )
        .run(
          run.assistantMessageId,
          run.conversationId,
          run.id,
          JSON.stringify(request.assistantParts),
          nowMs,
        );
      const seq = this.saveStep(run, step, request.assistantParts, nowMs);
      return { seq };
    });
  }

  /** A step's row, the run's usage summed over its steps, and its `checkpoint` event. */
  private saveStep(run: RunRecord, step: StepRecord, parts: readonly MessagePart[], nowMs: number): number {
    this.db
      .query(
        `INSERT OR REPLACE INTO steps (run_id, step, model, finish_reason, usage, started_at_ms, finished_at_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        run.id,
        step.step,
        step.model,
        step.finishReason,
        JSON.stringify(step.usage),
        step.startedAtMs,
        step.finishedAtMs,
      );
    const usages = (
      this.db.query("SELECT usage FROM steps WHERE run_id = ? ORDER BY step").all(run.id) as Array<{
        usage: string;
      }>
    ).map((r) => JSON.parse(r.usage) as Usage);
    const total = sumUsage(usages);
    this.db
      .query("UPDATE runs SET steps = ?, usage = ?, cost_complete = ? WHERE id = ?")
      .run(step.step + 1, JSON.stringify(total.usage), total.costComplete ? 1 : 0, run.id);
    return this.appendEvent(checkpointEvent(run, step, parts), nowMs);
  }

  saveToolProgress(
    fence: Fence,
    assistantParts: MessagePart[],
    nowMs: number,
    spilled?: SpilledOutput,
  ): Promise<void> {
    return this.write(() => {
      const run = this.fenced(fence);
      this.db
        .query(
          `INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms)
           VALUES (?, ?, ?, 'assistant', ?, 'streaming', ?)
           ON CONFLICT(id) DO UPDATE SET parts = excluded.parts`,
        )
        .run(run.assistantMessageId, run.conversationId, run.id, JSON.stringify(assistantParts), nowMs);
      if (spilled) {
        this.db
          .query(
            `INSERT INTO tool_outputs (ref, conversation_id, run_id, tool_call_id, tool_name, text, created_at_ms)
             VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(ref) DO NOTHING`,
          )
          .run(
            spilled.ref,
            run.conversationId,
            run.id,
            spilled.toolCallId,
            spilled.toolName,
            spilled.text,
            nowMs,
          );
      }
    });
  }

  readToolOutput(
    conversationId: string,
    ref: string,
    slice: { offset: number; length: number },
  ): Promise<ToolOutputSlice | null> {
    return this.read(() => {
      const row = this.db
        .query(
          `SELECT tool_name, substr(text, ?, ?) AS text, length(text) AS total
           FROM tool_outputs WHERE ref = ? AND conversation_id = ?`,
        )
        .get(slice.offset + 1, slice.length, ref, conversationId) as {
        tool_name: string;
        text: string;
        total: number;
      } | null;
      return row ? { toolName: row.tool_name, text: row.text, totalChars: row.total } : null;
    });
  }

  enqueueFiles(fence: Fence, files: FileDelivery[], nowMs: number): Promise<string[]> {
    return this.write(() => {
      const run = this.fenced(fence);
      const inserts = files.map((file) =>
        fileInsert({ runId: run.id, conversationId: run.conversationId }, file),
      );
      return insertOutboxRecordsSync(this.db, inserts, nowMs);
    });
  }

  saveInputParts(fence: Fence, messageId: string, parts: InputPart[]): Promise<void> {
    return this.write(() => {
      const run = this.fenced(fence);
      if (!run.inputMessageIds.includes(messageId)) throw notAnInput(messageId, run.id);
      this.db
        .query("UPDATE messages SET parts = ? WHERE id = ? AND role = 'user'")
        .run(JSON.stringify(parts), messageId);
    });
  }

  requestStop(runId: string, reason: StopReason, nowMs: number): Promise<StopRequestResult> {
    return this.write(() => runSync(stop(runId, reason, nowMs), this.stopSteps));
  }

  commitTerminal(request: TerminalRequest): Promise<TerminalResult> {
    return this.write(() => runSync(terminal(request), this.terminalSteps));
  }

  expireLeases(request: { exceptOwner: string; nowMs: number }): Promise<number> {
    return this.write(() => {
      const result = this.db
        .query(
          `UPDATE runs SET lease_expires_at_ms = ? WHERE state IN ${ACTIVE} AND owner IS NOT NULL AND owner <> ?
           AND lease_expires_at_ms > ?`,
        )
        .run(request.nowMs, request.exceptOwner, request.nowMs);
      return result.changes;
    });
  }

  releaseRun(fence: Fence, nowMs: number): Promise<void> {
    return this.write(() => {
      const run = this.fenced(fence);
      const state = releasedState(run);
      this.db
        .query("UPDATE runs SET state = ?, owner = NULL, lease_expires_at_ms = NULL WHERE id = ?")
        .run(state, run.id);
      this.appendEvent(
        { type: "run-state", conversationId: run.conversationId, runId: run.id, state },
        nowMs,
      );
    });
  }

  scanRecoverable(page: { afterQueueSeq: number; limit: number }): Promise<RunRecord[]> {
    return this.read(() =>
      (
        this.db
          .query(`SELECT * FROM runs WHERE state IN ${ACTIVE} AND queue_seq > ? ORDER BY queue_seq LIMIT ?`)
          .all(page.afterQueueSeq, page.limit) as RunRow[]
      ).map(toRun),
    );
  }

  readEvents(conversationId: string, afterSeq: number, limit: number): Promise<DurableEvent[]> {
    return this.read(() =>
      (
        this.db
          .query("SELECT payload FROM events WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?")
          .all(conversationId, afterSeq, limit) as Array<{ payload: string }>
      ).map((r) => JSON.parse(r.payload) as DurableEvent),
    );
  }

  listMessages(conversationId: string, page: { afterOrder: number; limit: number }): Promise<MessagePage> {
    return this.read(() => {
      const rows = this.db
        .query(
          `SELECT m.*, r.state AS run_state FROM messages m JOIN runs r ON r.id = m.run_id
           WHERE m.conversation_id = ? AND m.ord > ? ORDER BY m.ord LIMIT ?`,
        )
        .all(conversationId, page.afterOrder, page.limit + 1) as Array<MessageRow & { run_state: string }>;
      return toMessagePage(rows, page.limit);
    });
  }

  resolveConversationKey(key: string, nowMs: number): Promise<string> {
    return this.write(() => this.resolveKey(key, nowMs));
  }

  rotateConversationKey(key: string, nowMs: number): Promise<string> {
    return this.write(() => {
      const id = newId("conv", nowMs);
      this.ensureConversation(id, nowMs);
      this.db
        .query(
          `INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms) VALUES (?, ?, 1, ?)
           ON CONFLICT(key) DO UPDATE SET conversation_id = excluded.conversation_id,
             generation = generation + 1, updated_at_ms = excluded.updated_at_ms`,
        )
        .run(key, id, nowMs);
      return id;
    });
  }

  purgeConversation(
    conversationId: string,
    options: { expectedVersion?: number; nowMs: number; actor?: string },
  ): Promise<PurgeResult> {
    const { expectedVersion, nowMs } = options;
    return this.write(() => {
      const tomb = this.db
        .query("SELECT 1 FROM conversation_tombstones WHERE conversation_id = ?")
        .get(conversationId);
      if (tomb) return { outcome: "already_purged" } as const;
      const active = this.activeRuns(conversationId).map((r) => r.id);
      const refusal = purgeRefusal(active, expectedVersion, this.version(conversationId));
      if (refusal) return refusal;
      this.db
        .query("DELETE FROM steps WHERE run_id IN (SELECT id FROM runs WHERE conversation_id = ?)")
        .run(conversationId);
      for (const table of ["messages", "runs", "events", "tool_outputs", "conversation_state", "approvals"]) {
        this.db.query(`DELETE FROM ${table} WHERE conversation_id = ?`).run(conversationId);
      }
      for (const table of ["conversation_keys", "conversation_settings", "conversation_summaries"]) {
        this.db.query(`DELETE FROM ${table} WHERE conversation_id = ?`).run(conversationId);
      }
      for (const statement of PURGE_COMPANION_SQL) this.db.query(statement).run(conversationId);
      this.db.query("DELETE FROM conversations WHERE id = ?").run(conversationId);
      this.db
        .query(
          "INSERT INTO conversation_tombstones (conversation_id, purged_at_ms, purged_by) VALUES (?, ?, ?)",
        )
        .run(conversationId, nowMs, options.actor ?? null);
      return { outcome: "purged" } as const;
    });
  }

  loadState(conversationId: string): Promise<ConversationState> {
    return this.read(() => {
      const rows = this.db
        .query("SELECT * FROM conversation_state WHERE conversation_id = ?")
        .all(conversationId) as StateRow[];
      return Object.fromEntries(rows.map((row) => [row.slot, toStateRecord(row)])) as ConversationState;
    });
  }

  saveState(request: StateSave): Promise<StateSaveResult> {
    return this.write((): StateSaveResult => {
      const row = this.db
        .query("SELECT * FROM conversation_state WHERE conversation_id = ? AND slot = ?")
        .get(request.conversationId, request.slot) as StateRow | null;
      const current = row ? toStateRecord(row) : null;
      const decision = stateDecision(request.expectedVersion, current);
      if (decision.kind === "conflict") return { outcome: "conflict", actual: current };
      // First: it creates the conversation's head, or throws for a purged conversation.
      const seq = this.appendEvent(stateEvent(request, decision.version), request.nowMs);
      this.db
        .query(
          `INSERT INTO conversation_state (conversation_id, slot, value, version, actor, updated_at_ms)
           VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (conversation_id, slot) DO UPDATE SET value = excluded.value,
             version = excluded.version, actor = excluded.actor, updated_at_ms = excluded.updated_at_ms`,
        )
        .run(
          request.conversationId,
          request.slot,
          JSON.stringify(request.value),
          decision.version,
          request.actor,
          request.nowMs,
        );
      return { outcome: "saved", version: decision.version, seq };
    });
  }

  loadPurge(conversationId: string): Promise<PurgeRecord | null> {
    return this.read(() => {
      const row = this.db
        .query("SELECT purged_at_ms, purged_by FROM conversation_tombstones WHERE conversation_id = ?")
        .get(conversationId) as { purged_at_ms: number; purged_by: string | null } | null;
      return row ? { conversationId, purgedAtMs: row.purged_at_ms, purgedBy: row.purged_by } : null;
    });
  }

  latestIngressPerTarget(
    source: string,
    limit: number,
  ): Promise<Array<{ replyTarget: string; updateKey: string }>> {
    return this.read(() =>
      (
        this.db
          .query(
            `SELECT target, key FROM (
               SELECT json_extract(payload, '$.replyTarget') AS target, key, created_at_ms,
                 ROW_NUMBER() OVER (
                   PARTITION BY json_extract(payload, '$.replyTarget')
                   ORDER BY created_at_ms DESC, length(key) DESC, key DESC
                 ) AS rank
               FROM ingress_receipts WHERE source = ?
             )
             WHERE rank = 1 AND target IS NOT NULL
             ORDER BY created_at_ms DESC, length(key) DESC, key DESC
             LIMIT ?`,
          )
          .all(source, limit) as Array<{ target: string; key: string }>
      ).map((row) => ({ replyTarget: row.target, updateKey: row.key })),
    );
  }

  ingressByPrefix(
    source: string,
    keyPrefix: string,
    limit: number,
  ): Promise<Array<{ key: string; payload: unknown; atMs: number }>> {
    return this.read(() =>
      (
        this.db
          .query(
            `SELECT key, payload, created_at_ms FROM ingress_receipts
             WHERE source = ? AND substr(key, 1, ?) = ?
             ORDER BY created_at_ms DESC, key DESC LIMIT ?`,
          )
          .all(source, keyPrefix.length, keyPrefix, limit) as Array<{
          key: string;
          payload: string;
          created_at_ms: number;
        }>
      ).map((row) => ({ key: row.key, payload: JSON.parse(row.payload), atMs: row.created_at_ms })),
    );
  }

  async ingressOutcome(source: string, key: string): Promise<string | null> {
    const row = this.db
      .query("SELECT outcome FROM ingress_receipts WHERE source = ? AND key = ?")
      .get(source, key) as { outcome: string } | null;
    return row?.outcome ?? null;
  }

  claimIngress(request: IngressClaim): Promise<IngressClaimResult> {
    return this.write(() => {
      const seen = this.db
        .query("SELECT outcome, run_id, payload FROM ingress_receipts WHERE source = ? AND key = ?")
        .get(request.source, request.key) as {
        outcome: string;
        run_id: string | null;
        payload: string;
      } | null;
      if (seen)
        return {
          fresh: false,
          previousOutcome: seen.outcome,
          runId: seen.run_id,
          previousPayload: JSON.parse(seen.payload) as unknown,
        };
      this.db
        .query(
          `INSERT INTO ingress_receipts (source, key, conversation_id, outcome, payload, created_at_ms)
           VALUES (?, ?, ?, ?, ?, ?)`,
        )
        .run(
          request.source,
          request.key,
          request.conversationId ?? null,
          request.outcome,
          JSON.stringify(request.payload ?? null),
          request.nowMs,
        );
      return { fresh: true, previousOutcome: null, runId: null, previousPayload: null };
    });
  }

  loadConversationSettings(conversationId: string): Promise<ConversationSettings> {
    return this.read(() => {
      const row = this.db
        .query("SELECT settings FROM conversation_settings WHERE conversation_id = ?")
        .get(conversationId) as { settings: string } | null;
      return row ? (JSON.parse(row.settings) as ConversationSettings) : {};
    });
  }

  saveConversationSettings(
    conversationId: string,
    settings: ConversationSettings,
    nowMs: number,
  ): Promise<void> {
    return this.write(() => {
      const row = this.db
        .query("SELECT settings FROM conversation_settings WHERE conversation_id = ?")
        .get(conversationId) as { settings: string } | null;
      const merged = { ...(row ? (JSON.parse(row.settings) as ConversationSettings) : {}), ...settings };
      this.db
        .query(
          `INSERT INTO conversation_settings (conversation_id, settings, updated_at_ms) VALUES (?, ?, ?)
           ON CONFLICT(conversation_id) DO UPDATE SET settings = excluded.settings, updated_at_ms = excluded.updated_at_ms`,
        )
        .run(conversationId, JSON.stringify(merged), nowMs);
    });
  }

  loadApproval(approvalId: string): Promise<ApprovalRecord | null> {
    return this.read(() => {
      const row = this.db.query("SELECT * FROM approvals WHERE id = ?").get(approvalId) as ApprovalRow | null;
      return row ? toApproval(row) : null;
    });
  }

  listApprovals(filter: ApprovalFilter): Promise<ApprovalRecord[]> {
    return this.read(() => {
      const where: string[] = [];
      const params: Array<string | number> = [];
      if (filter.state) {
        where.push("state = ?");
        params.push(filter.state);
      }
      if (filter.conversationId) {
        where.push("conversation_id = ?");
        params.push(filter.conversationId);
      }
      if (filter.expiredAtMs !== undefined) {
        where.push("state = 'pending' AND expires_at_ms <= ?");
        params.push(filter.expiredAtMs);
      }
      const sql = `SELECT * FROM approvals ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
        ORDER BY created_at_ms DESC, id DESC LIMIT ?`;
      return (this.db.query(sql).all(...params, filter.limit ?? 100) as ApprovalRow[]).map(toApproval);
    });
  }

  loadOrCreateSecret(name: string, candidate: string, nowMs: number): Promise<string> {
    return this.write(() => {
      this.db
        .query(
          "INSERT INTO secrets (name, value, created_at_ms) VALUES (?, ?, ?) ON CONFLICT(name) DO NOTHING",
        )
        .run(name, candidate, nowMs);
      return (this.db.query("SELECT value FROM secrets WHERE name = ?").get(name) as { value: string }).value;
    });
  }

  loadConversation(conversationId: string): Promise<ConversationHead | null> {
    return this.read(() => {
      const row = this.db.query("SELECT * FROM conversations WHERE id = ?").get(conversationId) as {
        id: string;
        version: number;
        last_seq: number;
        created_at_ms: number;
      } | null;
      return row
        ? { id: row.id, version: row.version, lastSeq: row.last_seq, createdAtMs: row.created_at_ms }
        : null;
    });
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
