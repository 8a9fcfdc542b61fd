import type { Database } from "bun:sqlite";
import type { ChildFilter, ChildRecord } from "../../children/store.ts";
import type { OperatorRuntimeStore } from "../../operator/runtime-store.ts";
import type { DurableEvent } from "../../runtime/events.ts";
import type {
  AdmitRequest,
  AdmitResult,
  ApprovalFilter,
  ApprovalRecord,
  ConversationHead,
  ConversationSettings,
  Fence,
  IngressReceipt,
  MessagePage,
  PurgeRecord,
  RunRecord,
  RunView,
  ToolOutputSlice,
} from "../../runtime/store.ts";
import type { ConversationState, StateStore } from "../../state/store.ts";
import { type AdmissionSteps, admitSync } from "../admission.ts";
import { type ChildRow, childSelectSql, childTargetWhere, toChildLink } from "../child-sql.ts";
import { withoutContext } from "../children.ts";
import { resolveKey } from "../ledger-writes.ts";
import { type Mutation, type MutationSteps, StoreMutations } from "../mutations.ts";
import type { PromptRead, PromptReadSteps } from "../prompt-reads.ts";
import {
  type ApprovalRow,
  type MessageRow,
  type ReceiptRow,
  type RunRow,
  toApproval,
  toMessage,
  toMessagePage,
  toReceipt,
  toRun,
} from "../rows.ts";
import { checkFence, type EventBody, purgedError } from "../rules.ts";
import { type StateRow, toStateRecord } from "../state-rows.ts";
import { runSync } from "../steps.ts";
import { sqliteAdmissionSteps } from "./admission-steps.ts";
import { GroupCommit, type Outcome } from "./group-commit.ts";
import { sqlitePromptReads } from "./prompt-reads.ts";
import { sqliteStoreSteps } from "./store-steps.ts";

const ACTIVE = "('queued', 'running', 'interrupt_requested')";

/**
 * The runtime store on bun:sqlite. Mutations run in `BEGIN IMMEDIATE` transactions, reads in
 * deferred ones (one WAL snapshot). Methods are async to satisfy the backend-neutral interface;
 * the work itself is synchronous and serialized by the single connection.
 */
export class SqliteRuntimeStore extends StoreMutations implements OperatorRuntimeStore, StateStore {
  private readonly listeners = new Set<(events: DurableEvent[]) => void>();
  /** Conversation version after the latest appendEvent in the transaction in progress. */
  private lastVersion = 0;
  /** Events appended by the transaction in progress; published only after it commits. */
  private appended: DurableEvent[] = [];

  /** Admission's reads and writes on this connection (see admission.ts for the algorithm). */
  private readonly admissionSteps: AdmissionSteps;
  /** Every other mutation's (see mutations.ts). */
  private readonly steps: MutationSteps;
  /** The prompt reads' (see prompt-reads.ts). */
  private readonly promptReads: PromptReadSteps;

  constructor(readonly db: Database) {
    super();
    this.promptReads = sqlitePromptReads(db);
    this.admissionSteps = sqliteAdmissionSteps(db, {
      resolveKey: (key, nowMs) => this.resolveKey(key, nowMs),
      version: (conversationId) => this.version(conversationId),
      activeRuns: (conversationId) => this.activeRuns(conversationId),
      endRun: (run, state, nowMs) => this.steps.endRun(run, state, nowMs),
      appendEvent: (body, nowMs) => ({ seq: this.appendEvent(body, nowMs), version: this.lastVersion }),
    });
    this.steps = sqliteStoreSteps(db, {
      runRow: (runId) => this.runRow(runId),
      activeRuns: (conversationId) => this.activeRuns(conversationId),
      appendEvent: (body, nowMs) => this.appendEvent(body, nowMs),
      ensureConversation: (conversationId, nowMs) => this.ensureConversation(conversationId, nowMs),
      assertNotPurged: (conversationId) => this.assertNotPurged(conversationId),
      version: (conversationId) => this.version(conversationId),
      nextFinishSeq: () => this.nextFinishSeq(),
      fenced: (fence) => this.fenced(fence),
      admission: () => this.admissionSteps,
    });
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

  protected transact<R>(procedure: Mutation<R>): Promise<R> {
    return this.write(() => runSync(procedure, this.steps));
  }

  protected readPrompt<R>(procedure: PromptRead<R>): Promise<R> {
    return this.read(() => runSync(procedure, this.promptReads));
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
    if (tomb) throw purgedError(conversationId);
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
    return runSync(resolveKey(key, nowMs), this.steps);
  }

  private fenced(fence: Fence): RunRecord {
    return checkFence(this.runRow(fence.runId), fence);
  }

  // ---- RuntimeStore ----

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

  listChildren(filter: ChildFilter): Promise<ChildRecord[]> {
    return this.read(() => {
      const { where, param } = childTargetWhere(filter, (n) => `?${n}`);
      const sql = childSelectSql(
        `${where} AND (?2 IS NULL OR c.state = ?2)`,
        "ORDER BY c.created_at_ms, c.handle LIMIT ?3",
      );
      const rows = this.db.query(sql).all(param, filter.state ?? null, filter.limit ?? 100) as ChildRow[];
      return rows.map((row) => withoutContext(toChildLink(row)));
    });
  }

  loadChild(handle: string): Promise<ChildRecord | null> {
    return this.read(() => {
      const row = this.db.query(childSelectSql("c.handle = ?1")).get(handle) as ChildRow | null;
      return row ? withoutContext(toChildLink(row)) : null;
    });
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

  loadState(conversationId: string): Promise<ConversationState> {
    return this.read(() => {
      const rows = this.db
        .query("SELECT * FROM conversation_state WHERE conversation_id = ?")
        .all(conversationId) as StateRow[];
      return Object.fromEntries(rows.map((row) => [row.slot, toStateRecord(row)])) as ConversationState;
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

  loadIngressReceipt(source: string, key: string): Promise<IngressReceipt | null> {
    return this.read(() => {
      const row = this.db
        .query(
          "SELECT outcome, conversation_id, run_id, input_message_id FROM ingress_receipts WHERE source = ? AND key = ?",
        )
        .get(source, key) as ReceiptRow | null;
      return row ? toReceipt(row) : null;
    });
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

  loadConversationSettings(conversationId: string): Promise<ConversationSettings> {
    return this.read(() => {
      const row = this.db
        .query("SELECT settings FROM conversation_settings WHERE conversation_id = ?")
        .get(conversationId) as { settings: string } | null;
      return row ? (JSON.parse(row.settings) as ConversationSettings) : {};
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

  loadChannelState(name: string): Promise<string | null> {
    return this.read(() => {
      const row = this.db.query("SELECT value FROM channel_state WHERE name = ?").get(name) as {
        value: string;
      } | null;
      return row?.value ?? null;
    });
  }

  saveChannelState(name: string, value: string, nowMs: number): Promise<void> {
    return this.write(() => {
      this.db
        .query(
          `INSERT INTO channel_state (name, value, updated_at_ms) VALUES (?, ?, ?)
           ON CONFLICT(name) DO UPDATE SET value = excluded.value, updated_at_ms = excluded.updated_at_ms`,
        )
        .run(name, value, nowMs);
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
