import { z } from "zod";
import type { ChannelName } from "../channels/types.ts";

/** Who asked for a schedule: a chat command, the agent through its tools, or an operator (CLI). */
export const SCHEDULE_CREATORS = ["user", "agent", "operator"] as const;
export type ScheduleCreator = (typeof SCHEDULE_CREATORS)[number];

export const SCHEDULE_STATES = ["active", "paused", "cancelled", "completed", "failed"] as const;
export type ScheduleState = (typeof SCHEDULE_STATES)[number];
/** States a schedule can leave again; they count against the per-conversation limit. */
export const LIVE_SCHEDULE_STATES = ["active", "paused"] as const satisfies readonly ScheduleState[];

/**
 * What to do with a slot that passed while no scheduler was running (late by more than
 * `missedGraceMs`): `once` fires it once, late, then continues at the next future slot of the
 * original cadence; `skip` records it as skipped and continues at the next future slot.
 */
export const MISSED_POLICIES = ["once", "skip"] as const;
export type MissedPolicy = (typeof MISSED_POLICIES)[number];

/** When a schedule fires. `after` requests are stored as `at`. */
export type ScheduleSpec =
  | { type: "at"; atMs: number }
  /** A 5-field cron expression evaluated in the schedule's time zone. */
  | { type: "cron"; expression: string }
  /** Slots are `anchorMs + k * intervalMs`; the anchor never moves after a restart. */
  | { type: "interval"; intervalMs: number; anchorMs: number };

export type RecurringSpec = Extract<ScheduleSpec, { type: "cron" | "interval" }>;

/**
 * The timing of a schedule. A recurring schedule always carries an IANA time zone; a one-off may
 * carry the conversation's zone for display only.
 */
export type ScheduleTiming =
  | { kind: "at"; spec: Extract<ScheduleSpec, { type: "at" }>; timezone: string | null }
  | { kind: "every"; spec: RecurringSpec; timezone: string };

export interface ScheduleTarget {
  conversationId: string;
  /**
   * The chat the schedule belongs to: its conversation key, which outlives /new. Listing,
   * cancelling and the per-chat limit go by it, and each occurrence runs in the chat's current
   * conversation. Null only for schedules stored before chats were recorded.
   */
  chatKey: string | null;
  /** Opaque; only the channel adapter that made it decodes it. */
  replyTarget: string;
  channel: ChannelName;
}

/** Whether `schedule` is one of the chat's (its conversation's, for one stored without a chat). */
export function belongsToChat(
  schedule: Pick<ScheduleTarget, "conversationId" | "chatKey">,
  chat: Pick<ScheduleTarget, "conversationId" | "chatKey">,
): boolean {
  if (schedule.chatKey !== null && chat.chatKey !== null) return schedule.chatKey === chat.chatKey;
  return schedule.conversationId === chat.conversationId;
}

export type Schedule = ScheduleTarget &
  ScheduleTiming & {
    id: string;
    createdBy: ScheduleCreator;
    prompt: string;
    missedPolicy: MissedPolicy;
    /** Attempts one occurrence gets before it is given up. */
    maxAttempts: number;
    state: ScheduleState;
    /** The slot the schedule fires next (ms since epoch); kept while that slot is retried. Null once ended. */
    nextAtMs: number | null;
    /** Attempts started for the slot at `nextAtMs` (including one in flight); 0 before the first. */
    attempts: number;
    /** When the failing slot is tried again (ms since epoch); null when nothing is being retried. */
    retryAtMs: number | null;
    /** Why the last attempt failed (at most 1000 characters); null after a success. */
    lastError: string | null;
    lastFiredAtMs: number | null;
    /** Bumped by every edit of timing or prompt; a claim made under an older version never fires. */
    version: number;
    createdAtMs: number;
    updatedAtMs: number;
  };

export const OCCURRENCE_STATES = ["claimed", "dispatched", "retrying", "failed", "skipped"] as const;
export type OccurrenceState = (typeof OCCURRENCE_STATES)[number];

/** One slot of one schedule; unique per (scheduleId, scheduledForMs). */
export interface Occurrence {
  scheduleId: string;
  scheduledForMs: number;
  /** The schedule version the latest claim was made under. */
  scheduleVersion: number;
  state: OccurrenceState;
  attempts: number;
  /** How late the first attempt started, in ms. Null for a slot skipped without an attempt. */
  lateByMs: number | null;
  /** The run the dispatch admitted (occurrence → run → outbox record). */
  runId: string | null;
  lastError: string | null;
  leaseOwner: string | null;
  leaseExpiresAtMs: number | null;
  /** Incremented by every claim; a settle carrying an older token is refused. */
  fencingToken: number;
  createdAtMs: number;
  updatedAtMs: number;
}

/** Proof of a claim; the settle must present it unchanged. */
export interface OccurrenceClaim {
  scheduleId: string;
  scheduleVersion: number;
  scheduledForMs: number;
  owner: string;
  fencingToken: number;
  /** 1 for the first attempt of this slot. */
  attempt: number;
  leaseExpiresAtMs: number;
}

/** Where a schedule goes after its current slot is done with. */
export type ScheduleAdvance =
  | { state: "active"; nextAtMs: number }
  | { state: "completed" }
  | { state: "failed" };

export type OccurrenceSettlement =
  | { outcome: "dispatched"; runId: string; advance: ScheduleAdvance }
  | { outcome: "retry"; error: string; retryAtMs: number }
  /** Given up (attempts exhausted, or the dispatcher said terminal). */
  | { outcome: "failed"; error: string; advance: ScheduleAdvance };

/** Fields an edit may replace; anything absent keeps its value. */
export interface ScheduleChange {
  timing?: ScheduleTiming;
  prompt?: string;
  missedPolicy?: MissedPolicy;
  maxAttempts?: number;
  /** The slot to work on next: the first slot of a new timing, or the current slot when timing is kept. */
  nextAtMs: number;
}

export type ClaimResult =
  | { claimed: true; claim: OccurrenceClaim; schedule: Schedule }
  /**
   * `stale`: the schedule changed since it was listed (another instance claimed it, or it was
   * edited, paused or cancelled). `leased`: a live lease holds the slot; the schedule is due again
   * when it expires. `settled`: the slot already has a final outcome and must not fire again.
   */
  | { claimed: false; reason: "stale" | "leased" | "settled" };

export type SettleResult =
  | { settled: true; schedule: Schedule | null }
  /** Another owner re-claimed the slot after this claim's lease expired: drop the outcome. */
  | { settled: false; reason: "fence_lost" };

/**
 * Persistence of schedules and their occurrences. Every mutation is one atomic transaction; reads
 * see one committed snapshot. Times are ms since the epoch and come from the caller. A method
 * returning null wrote nothing. A PostgreSQL backend implements the same interface.
 */
export interface ScheduleRepository {
  /** Inserts `schedule` unless its chat (its conversation, without a chat key) already holds `maxLive` active/paused ones (then returns the live count, writes nothing). Atomic. */
  insert(
    schedule: Schedule,
    maxLive: number,
  ): Promise<{ inserted: true } | { inserted: false; liveCount: number }>;
  /** The schedule with this id, or null when there is none. */
  get(id: string): Promise<Schedule | null>;
  /** A conversation's schedules in the given states, oldest first; empty when it has none. */
  listByConversation(conversationId: string, states: readonly ScheduleState[]): Promise<Schedule[]>;
  /** A chat's schedules in the given states, across its conversations, oldest first. */
  listByChat(chatKey: string, states: readonly ScheduleState[]): Promise<Schedule[]>;
  /** The earliest time any schedule needs attention (a slot, a retry, a lease expiry), ms; null when nothing is pending. Indexed, read-only. */
  nextDueAtMs(): Promise<number | null>;
  /** Up to `limit` schedules needing attention at `nowMs`, earliest first; read-only; empty when none. */
  listDue(nowMs: number, limit: number): Promise<Schedule[]>;
  /** active → paused. Null when the schedule is absent or not active. */
  pause(id: string, nowMs: number): Promise<Schedule | null>;
  /** paused → active with `nextAtMs` (same slot keeps its retry state). Null when absent or not paused. */
  resume(id: string, nextAtMs: number, nowMs: number): Promise<Schedule | null>;
  /** active/paused → cancelled. Null when absent or already ended. */
  cancel(id: string, nowMs: number): Promise<Schedule | null>;
  /** Applies `change` and bumps the version if the stored version is `expectedVersion` and the schedule is live; a changed slot resets retry state. Null otherwise. Atomic. */
  edit(id: string, expectedVersion: number, change: ScheduleChange, nowMs: number): Promise<Schedule | null>;
  /**
   * Claims the slot `scheduledForMs` of a due schedule listed at `expectedVersion`, under a lease
   * of `leaseMs`, with a fencing token one above the slot's previous one. Atomic.
   */
  claimOccurrence(request: {
    scheduleId: string;
    expectedVersion: number;
    scheduledForMs: number;
    owner: string;
    nowMs: number;
    leaseMs: number;
  }): Promise<ClaimResult>;
  /** Records the outcome of a claim and advances the schedule, if the claim's fencing token still holds. Atomic. */
  settleOccurrence(
    claim: OccurrenceClaim,
    settlement: OccurrenceSettlement,
    nowMs: number,
  ): Promise<SettleResult>;
  /**
   * Records a slot as skipped without dispatching it and advances the schedule, if it is still
   * active at `expectedVersion` with that slot due. Null when it changed meanwhile. Atomic.
   */
  skipOccurrence(request: {
    scheduleId: string;
    expectedVersion: number;
    scheduledForMs: number;
    reason: string;
    advance: ScheduleAdvance;
    nowMs: number;
  }): Promise<Schedule | null>;
  /**
   * Ends every live lease not held by `exceptOwner` at `nowMs`, so their slots are due at once.
   * For a single-process deployment starting up: the previous process is gone, and waiting for
   * its leases would only make its claimed occurrences late. Returns the number of leases ended.
   */
  expireLeases(request: { exceptOwner: string; nowMs: number }): Promise<number>;
  /** One occurrence, or null when that slot was never claimed or skipped. */
  getOccurrence(scheduleId: string, scheduledForMs: number): Promise<Occurrence | null>;
  /** A schedule's most recent occurrences, newest first, at most `limit`; empty when none. */
  listOccurrences(scheduleId: string, limit: number): Promise<Occurrence[]>;
}

/** What the runtime receives for one attempt of one occurrence. */
export interface DispatchRequest {
  schedule: Schedule;
  /** `<scheduleId>:<scheduledForMs>`. */
  occurrenceKey: string;
  /** `schedule:<scheduleId>:<scheduledForMs>`; the same for every attempt of the slot, so admission dedupes. */
  idempotencyKey: string;
  scheduledForMs: number;
  lateByMs: number;
  /** Aborted at the dispatch deadline or when the service stops. */
  signal: AbortSignal;
}

export type DispatchResult =
  | { status: "ok"; runId: string }
  /** A transient refusal: the slot is retried with backoff. */
  | { status: "retry"; reason: string }
  /** The schedule can never succeed: it becomes failed. */
  | { status: "terminal"; reason: string };

/** Resolves after the run is durably admitted. Throwing counts as `retry`. */
export type ScheduleDispatch = (request: DispatchRequest) => Promise<DispatchResult>;

export const dispatchResultSchema = z.discriminatedUnion("status", [
  z.object({ status: z.literal("ok"), runId: z.string().min(1) }),
  z.object({ status: z.literal("retry"), reason: z.string() }),
  z.object({ status: z.literal("terminal"), reason: z.string() }),
]);

/** What the service reports; for logs and tests. Never carries prompts. */
export type ScheduleEvent =
  | {
      type: "dispatched";
      scheduleId: string;
      scheduledForMs: number;
      runId: string;
      attempt: number;
      lateByMs: number;
    }
  | {
      type: "retry-scheduled";
      scheduleId: string;
      scheduledForMs: number;
      attempt: number;
      retryAtMs: number;
      error: string;
    }
  | {
      type: "occurrence-failed";
      scheduleId: string;
      scheduledForMs: number;
      attempt: number;
      error: string;
      scheduleState: ScheduleState;
      nextAtMs: number | null;
    }
  | { type: "occurrence-skipped"; scheduleId: string; scheduledForMs: number; reason: string }
  | { type: "settle-refused"; scheduleId: string; scheduledForMs: number; fencingToken: number }
  | { type: "store-error"; error: unknown; retryInMs: number };
