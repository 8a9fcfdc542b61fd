import type { SQL, TransactionSQL } from "bun";
import type { ChildFilter, ChildRecord } from "../../children/store.ts";
import type { OperatorRuntimeStore } from "../../operator/runtime-store.ts";
import type { DurableEvent } from "../../runtime/events.ts";
import type * as Store from "../../runtime/store.ts";
import type { ConversationState, StateStore } from "../../state/store.ts";
import { type AdmissionSteps, admitAsync } from "../admission.ts";
import { type ChildRow, childSelectSql, childTargetWhere, toChildLink } from "../child-sql.ts";
import { withoutContext } from "../children.ts";
import { resolveKey } from "../ledger-writes.ts";
import { type Mutation, type MutationSteps, StoreMutations } from "../mutations.ts";
import type { PromptRead } from "../prompt-reads.ts";
import {
  type ApprovalRow,
  type Integer,
  type MessageRow,
  type ReceiptRow,
  type RunRow,
  toApproval,
  toMessagePage,
  toReceipt,
  toRun,
} from "../rows.ts";
import { checkFence, type EventBody, purgedError } from "../rules.ts";
import { type StateRow, toStateRecord } from "../state-rows.ts";
import { type AsyncSteps, runAsync } from "../steps.ts";
import { postgresAdmissionSteps } from "./admission-steps.ts";
import { CommitPublisher } from "./commit-publisher.ts";
import { messageById, postgresPromptReads } from "./prompt-reads.ts";
import { openMigratedPool } from "./schema.ts";
import { postgresStoreSteps } from "./store-steps.ts";

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
export class PostgresRuntimeStore extends StoreMutations implements OperatorRuntimeStore, StateStore {
  private readonly publisher = new CommitPublisher();

  constructor(private readonly sql: SQL) {
    super();
  }

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

  protected transact<R>(procedure: Mutation<R>): Promise<R> {
    return this.write((tx) => runAsync(procedure, this.steps(tx)));
  }

  protected readPrompt<R>(procedure: PromptRead<R>): Promise<R> {
    return this.read((sql) => runAsync(procedure, postgresPromptReads(sql)));
  }

  /** Runs several reads on one snapshot. A single-statement read uses the pool directly. */
  private async read<T>(work: (sql: SQL) => Promise<T>): Promise<T> {
    return (await this.sql.begin("isolation level repeatable read, read only", work)) as T;
  }

  // ---- internal helpers ----

  private async runRow(sql: SQL, runId: string): Promise<Store.RunRecord | null> {
    const [row] = await sql<RunRow[]>`SELECT * FROM runs WHERE id = ${runId}`;
    return row ? toRun(row) : null;
  }

  private async activeRuns(sql: SQL, conversationId: string): Promise<Store.RunRecord[]> {
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
    if (tomb) throw purgedError(conversationId);
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
  private async lockRun(tx: Tx, runId: string): Promise<Store.RunRecord | null> {
    await tx.sql`
      SELECT 1 FROM conversations WHERE id = (SELECT conversation_id FROM runs WHERE id = ${runId}) FOR UPDATE`;
    const [row] = await tx.sql<RunRow[]>`SELECT * FROM runs WHERE id = ${runId} FOR UPDATE`;
    return row ? toRun(row) : null;
  }

  private async fenced(tx: Tx, fence: Store.Fence): Promise<Store.RunRecord> {
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
  private resolveKey(tx: Tx, key: string, nowMs: number): Promise<string> {
    return runAsync(resolveKey(key, nowMs), this.steps(tx));
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

  /** Every mutation's reads and writes but admission's in transaction `tx` (see mutations.ts). */
  private steps(tx: Tx): AsyncSteps<MutationSteps> {
    return postgresStoreSteps(tx.sql, {
      lockRun: (runId) => this.lockRun(tx, runId),
      fenced: (fence) => this.fenced(tx, fence),
      activeRuns: (conversationId) => this.activeRuns(tx.sql, conversationId),
      appendEvent: (body, nowMs) => this.appendEvent(tx, body, nowMs),
      lockHead: (conversationId, nowMs) => this.lockHead(tx, conversationId, nowMs),
      lockExistingHead: (conversationId) => this.lockExistingHead(tx, conversationId),
      insertHead: (conversationId, nowMs) => this.insertHead(tx, conversationId, nowMs),
      lockIngress: (source, key) => this.lockIngress(tx, source, key),
      admission: () => this.admissionSteps(tx),
    });
  }

  // ---- RuntimeStore ----

  /**
   * One transaction per admission. Admissions to one conversation queue on its head lock; two
   * carrying one ingress identity queue on that identity first, so the second sees the first's
   * receipt.
   */
  admit(request: Store.AdmitRequest): Promise<Store.AdmitResult> {
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
      endRun: (run, state, nowMs) => this.steps(tx).endRun(run, state, nowMs),
      appendEvent: (body, nowMs) => this.appendEvent(tx, body, nowMs),
    });
  }

  async listChildren(filter: ChildFilter): Promise<ChildRecord[]> {
    const { where, param } = childTargetWhere(filter, (n) => `$${n}`);
    const sql = childSelectSql(
      `${where} AND ($2::text IS NULL OR c.state = $2::text)`,
      "ORDER BY c.created_at_ms, c.handle LIMIT $3",
    );
    const rows = (await this.sql.unsafe(sql, [
      param,
      filter.state ?? null,
      filter.limit ?? 100,
    ])) as ChildRow[];
    return rows.map((row) => withoutContext(toChildLink(row)));
  }

  async loadChild(handle: string): Promise<ChildRecord | null> {
    const [row] = (await this.sql.unsafe(childSelectSql("c.handle = $1"), [handle])) as ChildRow[];
    return row ? withoutContext(toChildLink(row)) : null;
  }

  loadRun(runId: string): Promise<Store.RunView | null> {
    return this.read(async (sql) => {
      const run = await this.runRow(sql, runId);
      if (!run) return null;
      return { run, answer: await messageById(sql, run.assistantMessageId) };
    });
  }

  listActiveRuns(conversationId: string): Promise<Store.RunRecord[]> {
    return this.activeRuns(this.sql, conversationId);
  }

  /** One conditional statement: it waits for a takeover in progress and then sees its new token. */
  async renewLease(fence: Store.Fence, nowMs: number, leaseMs: number): Promise<boolean> {
    const result = await this.sql`
      UPDATE runs SET lease_expires_at_ms = ${nowMs + leaseMs}
      WHERE id = ${fence.runId} AND fencing_token = ${fence.fencingToken}
        AND state IN ('running', 'interrupt_requested')`;
    return result.count === 1;
  }

  async assertFence(fence: Store.Fence): Promise<void> {
    checkFence(await this.runRow(this.sql, fence.runId), fence);
  }

  async readToolOutput(
    conversationId: string,
    ref: string,
    slice: { offset: number; length: number },
  ): Promise<Store.ToolOutputSlice | null> {
    const [row] = await this.sql<Array<{ tool_name: string; text: string; total: number }>>`
      SELECT tool_name, substr(text, ${slice.offset + 1}, ${slice.length}) AS text,
        char_length(text)::int AS total
      FROM tool_outputs WHERE ref = ${ref} AND conversation_id = ${conversationId}`;
    return row ? { toolName: row.tool_name, text: row.text, totalChars: Number(row.total) } : null;
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

  async scanRecoverable(page: { afterQueueSeq: number; limit: number }): Promise<Store.RunRecord[]> {
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
  ): Promise<Store.MessagePage> {
    const rows = await this.sql<Array<MessageRow & { run_state: string }>>`
      SELECT m.*, r.state AS run_state FROM messages m JOIN runs r ON r.id = m.run_id
      WHERE m.conversation_id = ${conversationId} AND m.ord > ${page.afterOrder} ORDER BY m.ord LIMIT ${page.limit + 1}`;
    return toMessagePage(rows, page.limit);
  }

  async loadState(conversationId: string): Promise<ConversationState> {
    const rows = await this.sql<StateRow[]>`
      SELECT * FROM conversation_state WHERE conversation_id = ${conversationId}`;
    return Object.fromEntries(rows.map((row) => [row.slot, toStateRecord(row)])) as ConversationState;
  }

  async loadPurge(conversationId: string): Promise<Store.PurgeRecord | null> {
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

  async loadIngressReceipt(source: string, key: string): Promise<Store.IngressReceipt | null> {
    const [row] = await this.sql<ReceiptRow[]>`
      SELECT outcome, conversation_id, run_id, input_message_id FROM ingress_receipts
      WHERE source = ${source} AND key = ${key}`;
    return row ? toReceipt(row) : null;
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

  async loadConversationSettings(conversationId: string): Promise<Store.ConversationSettings> {
    const [row] = await this.sql<Array<{ settings: string }>>`
      SELECT settings FROM conversation_settings WHERE conversation_id = ${conversationId}`;
    return row ? (JSON.parse(row.settings) as Store.ConversationSettings) : {};
  }

  async loadApproval(approvalId: string): Promise<Store.ApprovalRecord | null> {
    const [row] = await this.sql<ApprovalRow[]>`SELECT * FROM approvals WHERE id = ${approvalId}`;
    return row ? toApproval(row) : null;
  }

  async listApprovals(filter: Store.ApprovalFilter): Promise<Store.ApprovalRecord[]> {
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

  async loadChannelState(name: string): Promise<string | null> {
    const [row] = await this.sql<
      Array<{ value: string }>
    >`SELECT value FROM channel_state WHERE name = ${name}`;
    return row?.value ?? null;
  }

  async saveChannelState(name: string, value: string, nowMs: number): Promise<void> {
    await this.sql`
      INSERT INTO channel_state (name, value, updated_at_ms) VALUES (${name}, ${value}, ${nowMs})
      ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at_ms = EXCLUDED.updated_at_ms`;
  }

  async loadConversation(conversationId: string): Promise<Store.ConversationHead | null> {
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
