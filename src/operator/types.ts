import type { OutboxRecord, OutboxRepository, OutboxState } from "../../outbox/types.ts";
import type { Occurrence, Schedule, ScheduleRepository } from "../../schedules/types.ts";
import type { AccessGrant, AccessStore } from "../access/store.ts";
import type { BudgetLimits, LimitStatus, UsageTotals } from "../budgets/rules.ts";
import type { BudgetOverride, BudgetStore, UsageRow } from "../budgets/store.ts";
import type { ChildRecord } from "../children/store.ts";
import type { ChildNode } from "../children/tree.ts";
import type { ApprovalRecord, ApprovalState, MessagePageItem, RunRecord } from "../runtime/store.ts";
import type { ToolCallSummary } from "../runtime/tool-calls.ts";
import type { RunState, StepRecord, Usage } from "../runtime/types.ts";
import type { SearchHit, SearchStore } from "../search/store.ts";
import type { Page } from "./cursor.ts";
import type { BranchResult, ConversationExport } from "./export.ts";
import type { ForgetResult } from "./forget.ts";
import type { CommandInput, ConversationSummary, OperatorQueries } from "./queries.ts";
import type { OperatorRuntimeStore } from "./runtime-store.ts";

export type { CommandInput, ConversationSummary } from "./queries.ts";

/** The stores the operator service reads and changes; the caller opens and closes them. */
export interface OperatorStores {
  readonly runtime: OperatorRuntimeStore;
  readonly outbox: OutboxRepository;
  readonly schedules: ScheduleRepository;
  readonly operator: OperatorQueries;
  readonly search: SearchStore;
  readonly access: AccessStore;
  readonly budgets: BudgetStore;
}

/**
 * What operators can see and do, shared by the CLI (database mode) and the HTTP API. Every
 * mutation records who did it (`actor`, e.g. `operator:alice`) in the record's history.
 */
/** A run as lists show it: the record and the model of its latest step (null before the first). */
export type RunListItem = RunRecord & { model: string | null };

export interface RunDetail {
  run: RunRecord;
  answerText: string;
  usage: Usage;
  /** Each model step: model, finish reason, usage and timing, in order. */
  steps: StepRecord[];
  /** Each tool call of the run, in order, with its timing and outcome. */
  toolCalls: ToolCallSummary[];
  /** The child agents it started, oldest first, each with theirs (the tree); empty when none. */
  children: ChildNode[];
  /** When this run is a child agent's: its link to the run that started it; null otherwise. */
  childOf: ChildRecord | null;
}

export interface OperatorService {
  runs: {
    /**
     * One page, newest first (by admission order); `cursor` is the `nextCursor` of the previous
     * page. Empty items when none match.
     */
    list(filter: {
      state?: RunState;
      conversationId?: string;
      cursor?: string;
      limit?: number;
    }): Promise<Page<RunListItem>>;
    /** One run with its answer text and its tool calls; null when unknown. */
    show(runId: string): Promise<RunDetail | null>;
  };
  conversations: {
    /**
     * One page, most recently active first; `cursor` is the `nextCursor` of the previous page.
     * `query` keeps the conversations, of any age, where it occurs case-insensitively in a user's id
     * or name (so in the title) or in the channel key; `%` and `_` are plain characters, blank is
     * no filter, longer than CONVERSATION_QUERY_MAX is `input_invalid`.
     */
    list(filter: { cursor?: string; limit?: number; query?: string }): Promise<Page<ConversationListItem>>;
    /**
     * The conversation and one page of its messages, newest first, each with its run's state
     * (superseded/absorbed marked); `cursor` (the previous page's `nextCursor`) pages to older
     * messages. Null when unknown.
     */
    show(
      conversationId: string,
      page: { cursor?: string; limit?: number },
    ): Promise<{
      conversation: ConversationSummary;
      /** The model picked with /model or `setModel`; null: the surface's default. */
      model: string | null;
      items: MessagePageItem[];
      nextCursor: string | null;
      /** The conversation's newest chat commands (at most 200), newest first: they are not messages. */
      commands: CommandInput[];
      /** The child agents its runs started, oldest first, each with theirs; empty when none. */
      children: ChildNode[];
    } | null>;
    /**
     * Sets the conversation's model (a name from SWITCHBOARD_CONFIG `models`; null: back to the
     * default), used from its next run on. `not_found` for an unknown conversation,
     * `input_invalid` for a name that is not configured.
     */
    setModel(
      conversationId: string,
      model: string | null,
      actor: `operator:${string}`,
    ): Promise<{ conversationId: string; model: string | null }>;
    /**
     * Forgets a conversation: its chat's next message starts a fresh one, its active runs are
     * interrupted, then the store purges it (rows, state, schedules, outbox text) and keeps a
     * tombstone naming `actor` (the audit entry). `already_purged` with the earlier entry when it
     * was purged before; `not_found` for an id never seen; `state_conflict` when runs did not end.
     */
    purge(conversationId: string, actor: `operator:${string}`): Promise<ForgetResult>;
    /**
     * Copies the settled prefix through `throughRunId` (default: the settled tip) into a new
     * conversation; the same request again returns the same copy (`duplicate`).
     */
    branch(
      conversationId: string,
      throughRunId: string | undefined,
      actor: `operator:${string}`,
    ): Promise<BranchResult>;
    /** Messages, runs with usage, schedules and outbox history (docs/export-format.md); null when unknown. */
    export(conversationId: string): Promise<ConversationExport | null>;
    /**
     * Restores a JSONL export as a new conversation (no model call, nothing delivered).
     * `input_invalid` naming the line for a corrupt file or a newer format version.
     */
    import(
      jsonl: string,
      actor: `operator:${string}`,
    ): Promise<{ conversationId: string; sourceConversationId: string; runs: number; messages: number }>;
  };
  /**
   * History search over every conversation (or one), best match first. A malformed query is
   * `input_invalid` with what to change.
   */
  search(query: string, filter: { conversationId?: string; limit?: number }): Promise<SearchHit[]>;
  outbox: {
    /** One page, newest first; `cursor` is the `nextCursor` of the previous page. */
    list(filter: {
      state?: OutboxState;
      conversationId?: string;
      cursor?: string;
      limit?: number;
    }): Promise<Page<OutboxRecord>>;
    show(idOrKey: string): Promise<OutboxRecord | null>;
    retry(id: string, actor: `operator:${string}`, note?: string): Promise<OutboxRecord>;
    resolve(
      id: string,
      outcome: "delivered" | "failed",
      actor: `operator:${string}`,
      note: string,
    ): Promise<OutboxRecord>;
    cancel(id: string, actor: `operator:${string}`, note?: string): Promise<OutboxRecord>;
  };
  access: {
    /**
     * Admits the user who was given this pairing code (`*_ALLOWED_USERS=pairing`). `input_invalid`
     * for something that is not a code; `not_found` for an unknown code (the wrong attempt is
     * counted against `attemptKey`, default the actor); `state_conflict` when it expired, was
     * already redeemed (nothing changes) or too many wrong codes were tried lately under the same
     * `attemptKey` (others can still approve). The operator API passes the named operator, or the
     * client's address for the shared token, whose actor name the client chooses.
     */
    approve(code: string, actor: `operator:${string}`, attemptKey?: string): Promise<AccessGrant>;
    /** The stored grants, and the users waiting with an open code (the codes themselves are not shown). */
    list(): Promise<AccessList>;
    /** Removes a grant: the user is refused from their next message on. `not_found` when there is none. */
    revoke(
      channel: string,
      userId: string,
      actor: `operator:${string}`,
    ): Promise<{ channel: string; userId: string }>;
  };
  budgets: {
    /**
     * Every configured budget scope and every scope an operator changed, each measured now, and
     * usage today and this month per user and per conversation (the heaviest first).
     */
    show(): Promise<BudgetOverview>;
    /**
     * One scope (`user:<channel>:<user id>`, `surface:<surface key>`) measured now.
     * `input_invalid` for a malformed scope.
     */
    status(scope: string): Promise<BudgetScopeStatus>;
    /** What one conversation's runs used today and this month; zero for an unknown or purged one. */
    conversation(conversationId: string): Promise<ConversationUsage>;
    /**
     * Sets the scope's limits (merged over any earlier raise, field by field; they replace the
     * configured ones). `input_invalid` for a malformed scope, a scope no configured budget
     * covers (admission would never apply it), or no positive limit.
     */
    raise(scope: string, limits: BudgetLimits, actor: `operator:${string}`): Promise<BudgetScopeStatus>;
    /** Usage before now stops counting against the scope's current day and month. */
    reset(scope: string, actor: `operator:${string}`): Promise<BudgetScopeStatus>;
    /** Drops raised limits and resets: back to the configuration. `not_found` when there were none. */
    clear(scope: string, actor: `operator:${string}`): Promise<BudgetScopeStatus>;
  };
  approvals: {
    /** Newest first. Empty when none match. */
    list(filter: {
      state?: ApprovalState;
      conversationId?: string;
      limit?: number;
    }): Promise<ApprovalRecord[]>;
    /**
     * Decides a pending approval as an operator: its successor run is queued with the decision.
     * Throws `not_found` for an unknown id and `state_conflict` when it was already decided.
     */
    decide(
      approvalId: string,
      decision: "approve" | "deny",
      actor: `operator:${string}`,
    ): Promise<ApprovalRecord>;
  };
  schedules: {
    list(filter: { conversationId?: string; includeEnded?: boolean }): Promise<Schedule[]>;
    runs(scheduleId: string, limit?: number): Promise<Occurrence[]>;
    pause(scheduleId: string): Promise<Schedule>;
    resume(scheduleId: string): Promise<Schedule>;
    cancel(scheduleId: string): Promise<Schedule>;
  };
}

/**
 * A conversation as lists show it: its channel and who it is with (from its latest run's
 * context; null for conversations no channel started) and its newest message.
 */
export interface ConversationListItem extends ConversationSummary {
  channel: string | null;
  /** The user's name (or id) the latest run came from. */
  title: string | null;
  lastMessage: { role: string; text: string; atMs: number } | null;
}

/** A chat command a user sent (its reply is an outbox record of the same conversation). */

export interface AccessList {
  grants: AccessGrant[];
  pending: Array<{ channel: string; userId: string; userName: string | null; expiresAtMs: number }>;
}

/** One budget scope now: its limits in force (configured, raised) and each measured. */
export interface BudgetScopeStatus {
  scope: string;
  /** The zone its days and months are counted in. */
  timezone: string;
  configured: BudgetLimits | null;
  override: BudgetOverride | null;
  /** Each limit in force with its usage, what remains and when it resets. */
  limits: LimitStatus[];
  /** Whether the next message in this scope would be refused. */
  refused: boolean;
}

export interface BudgetOverview {
  timezone: string;
  /** Today and this month in `timezone`, as half-open [start, end) instants: usage counts from `startMs`. */
  periods: Record<"day" | "month", BudgetPeriod>;
  scopes: BudgetScopeStatus[];
  /** Usage per user (`<channel>:<user id>`) and per conversation, today and this month. */
  usage: Record<"user" | "conversation", Record<"day" | "month", UsageRow[]>>;
  /**
   * The per-user budget (`user:<channel>:<user id>`) of each user in `usage`, measured now; empty
   * when no per-user budget is configured.
   */
  users: BudgetScopeStatus[];
}

export interface BudgetPeriod {
  startMs: number;
  endMs: number;
}

/** What one conversation's runs used today and this month (budgets limit users and surfaces, not conversations). */
export interface ConversationUsage {
  conversationId: string;
  timezone: string;
  day: UsageTotals & BudgetPeriod;
  month: UsageTotals & BudgetPeriod;
}
