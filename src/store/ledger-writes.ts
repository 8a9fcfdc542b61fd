/**
 * The writes to a conversation's ledger and the tables beside it (its keys, state slots and
 * summary, ingress claims, its purge), written once for both engines (see steps.ts). Each engine
 * supplies the steps as its own SQL inside one transaction.
 */
import { isSwitchboardError } from "../errors.ts";
import type {
  ConversationSettings,
  IngressClaim,
  IngressClaimResult,
  PurgeResult,
  RunRecord,
  SummarySave,
  SummarySaveResult,
} from "../runtime/store.ts";
import type { StateSave, StateSaveResult, StateSlotRecord } from "../state/store.ts";
import { newId } from "../util/ids.ts";
import { type EventBody, PURGE_COMPANION_SQL, purgeRefusal } from "./rules.ts";
import { stateDecision, stateEvent } from "./state-rows.ts";
import { type Answer, type StepCall, stepsOf } from "./steps.ts";

/** The tables whose rows a purge deletes by `conversation_id` (the runs' steps go first, by run). */
export const PURGED_TABLES = [
  "messages",
  "runs",
  "events",
  "conversation_keys",
  "tool_outputs",
  "conversation_state",
  "approvals",
  "conversation_settings",
  "conversation_summaries",
] as const;

export type PurgedTable = (typeof PURGED_TABLES)[number];

/** The reads and writes of the ledger's mutations, each inside one transaction. */
export interface LedgerWriteSteps {
  /** The conversation `key` maps to; null when unmapped. */
  keyOf(key: string): string | null;
  /** Maps `key` to `conversationId`; false when a mapping made concurrently won (PostgreSQL). */
  insertKey(key: string, conversationId: string, nowMs: number): boolean;
  /** Maps `key` to `conversationId` whatever it mapped to before (its generation counts up). */
  rebindKey(key: string, conversationId: string, nowMs: number): void;
  /** Creates the head of a conversation id this transaction just made up. */
  insertHead(conversationId: string, nowMs: number): void;
  /**
   * Makes this transaction the conversation's one writer until it ends (PostgreSQL locks its
   * head, creating it when new, and throws `conversation_purged` for a purged conversation;
   * SQLite's connection is the one writer already, and the first event creates the head).
   */
  enterConversation(conversationId: string, nowMs: number): { created: boolean };
  /**
   * The conversation's head, locked and created when new (`created`); throws
   * `conversation_purged` for a purged conversation.
   */
  lockHead(conversationId: string, nowMs: number): { version: number; created: boolean };
  /** Deletes the conversation's head row. */
  deleteHead(conversationId: string): void;
  activeRuns(conversationId: string): RunRecord[];
  /** Appends a durable event, creating the head or throwing for a purged conversation (SQLite). */
  appendEvent(body: EventBody, nowMs: number): { seq: number };
  stateSlot(conversationId: string, slot: StateSave["slot"]): StateSlotRecord | null;
  upsertStateSlot(request: StateSave, version: number): void;
  /**
   * Saves the summary when `request.expectedVersion` is its version and it folds more turns;
   * answers the new version, or null (and saves nothing) when it does not.
   */
  compareAndSetSummary(request: SummarySave): number | null;
  /** The version of the conversation's summary; 0 when it has none. */
  summaryVersion(conversationId: string): number;
  /** Serializes the transactions that record one ingress identity (PostgreSQL; released at COMMIT). */
  lockIngress(source: string, key: string): void;
  claimOf(source: string, key: string): { outcome: string; run_id: string | null; payload: string } | null;
  insertClaim(request: IngressClaim): void;
  /** Deletes the steps of the conversation's runs. */
  deleteRunSteps(conversationId: string): void;
  deleteRows(table: PurgedTable, conversationId: string): void;
  /** Runs one of PURGE_COMPANION_SQL, whose one parameter is the conversation id. */
  purgeCompanion(statement: (typeof PURGE_COMPANION_SQL)[number], conversationId: string): void;
  insertTombstone(conversationId: string, nowMs: number, actor: string | null): void;
  /**
   * The conversation's settings (empty when none), locked for this transaction so that a
   * concurrent merge waits (PostgreSQL first inserts an empty row to lock).
   */
  settingsForUpdate(conversationId: string, nowMs: number): ConversationSettings;
  writeSettings(conversationId: string, settings: ConversationSettings, nowMs: number): void;
}

const call = stepsOf<LedgerWriteSteps>();
type A<K extends keyof LedgerWriteSteps> = Answer<LedgerWriteSteps, K>;
type Procedure<R> = Generator<StepCall<LedgerWriteSteps>, R, unknown>;

/** The conversation mapped to `key`; a new one when unmapped. A mapping made concurrently wins. */
export function* resolveKey(key: string, nowMs: number): Procedure<string> {
  for (;;) {
    const mapped = (yield call("keyOf", key)) as A<"keyOf">;
    if (mapped) return mapped;
    const id = newId("conv", nowMs);
    if ((yield call("insertKey", key, id, nowMs)) as A<"insertKey">) {
      yield call("insertHead", id, nowMs);
      return id;
    }
  }
}

/** Maps `key` to a new conversation (a chat's /new); returns its id. */
export function* rotateKey(key: string, nowMs: number): Procedure<string> {
  const id = newId("conv", nowMs);
  yield call("insertHead", id, nowMs);
  yield call("rebindKey", key, id, nowMs);
  return id;
}

/**
 * A state slot's compare-and-set, and its `state` event in the ledger (which orders versions and
 * seqs as every ledger writer does).
 */
export function* saveState(request: StateSave): Procedure<StateSaveResult> {
  const { conversationId, nowMs } = request;
  const entered = (yield call("enterConversation", conversationId, nowMs)) as A<"enterConversation">;
  const current = (yield call("stateSlot", conversationId, request.slot)) as A<"stateSlot">;
  const decision = stateDecision(request.expectedVersion, current);
  if (decision.kind === "conflict") {
    // A head inserted only to take the lock must not outlive a save that did not happen.
    if (entered.created) yield call("deleteHead", conversationId);
    return { outcome: "conflict", actual: current };
  }
  const { seq } = (yield call(
    "appendEvent",
    stateEvent(request, decision.version),
    nowMs,
  )) as A<"appendEvent">;
  yield call("upsertStateSlot", request, decision.version);
  return { outcome: "saved", version: decision.version, seq };
}

/** Merges `patch` into the conversation's settings; concurrent merges do not lose keys. */
export function* mergeSettings(
  conversationId: string,
  patch: ConversationSettings,
  nowMs: number,
): Procedure<void> {
  const current = (yield call("settingsForUpdate", conversationId, nowMs)) as A<"settingsForUpdate">;
  yield call("writeSettings", conversationId, { ...current, ...patch }, nowMs);
}

/** A summary's compare-and-set; the current version is read only when it did not match. */
export function* saveSummary(request: SummarySave): Procedure<SummarySaveResult> {
  const saved = (yield call("compareAndSetSummary", request)) as A<"compareAndSetSummary">;
  if (saved !== null) return { outcome: "saved", version: saved };
  const actualVersion = (yield call("summaryVersion", request.conversationId)) as A<"summaryVersion">;
  return { outcome: "conflict", actualVersion };
}

/** Records an ingress identity the first time it is seen; later, answers what the first recorded. */
export function* claimIngress(request: IngressClaim): Procedure<IngressClaimResult> {
  yield call("lockIngress", request.source, request.key);
  const seen = (yield call("claimOf", request.source, request.key)) as A<"claimOf">;
  if (seen) {
    return {
      fresh: false,
      previousOutcome: seen.outcome,
      runId: seen.run_id,
      previousPayload: JSON.parse(seen.payload) as unknown,
    };
  }
  yield call("insertClaim", request);
  return { fresh: true, previousOutcome: null, runId: null, previousPayload: null };
}

/**
 * Deletes a conversation that has no active run (and is at `expectedVersion`, when given) and
 * leaves its tombstone. Holding the head lock, created when the conversation has no head, makes an
 * admission that would create it wait and then see the tombstone. Throws `conversation_purged`
 * when it was purged before: the engine rolls back and answers {@link alreadyPurged}.
 */
export function* purge(
  conversationId: string,
  options: { expectedVersion?: number; nowMs: number; actor?: string },
): Procedure<PurgeResult> {
  const { nowMs } = options;
  const head = (yield call("lockHead", conversationId, nowMs)) as A<"lockHead">;
  const active = ((yield call("activeRuns", conversationId)) as A<"activeRuns">).map((r) => r.id);
  const refusal = purgeRefusal(active, options.expectedVersion, head.version);
  if (refusal) {
    // A head inserted only to take the lock must not outlive a purge that did not happen.
    if (head.created) yield call("deleteHead", conversationId);
    return refusal;
  }
  yield call("deleteRunSteps", conversationId);
  for (const table of PURGED_TABLES) yield call("deleteRows", table, conversationId);
  for (const statement of PURGE_COMPANION_SQL) yield call("purgeCompanion", statement, conversationId);
  yield call("deleteHead", conversationId);
  yield call("insertTombstone", conversationId, nowMs, options.actor ?? null);
  return { outcome: "purged" };
}

/** What a purge that found the conversation purged before answers (its transaction rolled back). */
export function alreadyPurged(error: unknown): PurgeResult {
  if (isSwitchboardError(error, "conversation_purged")) return { outcome: "already_purged" };
  throw error;
}
