import type { OutboxRecord, OutboxState } from "../../outbox/types.ts";
import type { Occurrence, Schedule } from "../../schedules/types.ts";
import type { ApprovalRecord, ApprovalState, MessagePageItem, RunRecord } from "../runtime/store.ts";
import type { ToolCallSummary } from "../runtime/tool-calls.ts";
import type { RunState, Usage } from "../runtime/types.ts";
import type { SearchHit } from "../search/store.ts";

/**
 * What operators can see and do, shared by the CLI (database mode) and the HTTP API. Every
 * mutation records who did it (`actor`, e.g. `operator:alice`) in the record's history.
 */
export interface RunDetail {
  run: RunRecord;
  answerText: string;
  usage: Usage;
  /** Each tool call of the run, in order, with its timing and outcome. */
  toolCalls: ToolCallSummary[];
}

export interface OperatorService {
  runs: {
    /** Newest first. Empty when none match. */
    list(filter: { state?: RunState; conversationId?: string; limit?: number }): Promise<RunRecord[]>;
    /** One run with its answer text and its tool calls; null when unknown. */
    show(runId: string): Promise<RunDetail | null>;
  };
  conversations: {
    /** Most recently active first. */
    list(filter: { limit?: number }): Promise<ConversationSummary[]>;
    /** Messages paged in order, each with its run's state (superseded/absorbed marked). Null when unknown. */
    show(
      conversationId: string,
      page: { afterOrder?: number; limit?: number },
    ): Promise<{
      conversation: ConversationSummary;
      items: MessagePageItem[];
      nextAfterOrder: number | null;
    } | null>;
  };
  /**
   * History search over every conversation (or one), best match first. A malformed query is
   * `input_invalid` with what to change.
   */
  search(query: string, filter: { conversationId?: string; limit?: number }): Promise<SearchHit[]>;
  outbox: {
    list(filter: { state?: OutboxState; conversationId?: string; limit?: number }): Promise<OutboxRecord[]>;
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

export interface ConversationSummary {
  id: string;
  /** The channel key mapped to it (e.g. `tg:123:dm:42`), when any. */
  key: string | null;
  version: number;
  createdAtMs: number;
  lastActivityAtMs: number | null;
  runs: number;
  activeRuns: number;
}
