import type { Schedule } from "../../schedules/types.ts";
import type { RunRecord } from "../runtime/store.ts";
import type { RunState } from "../runtime/types.ts";
import type { ConversationSummary } from "./types.ts";

/**
 * Read-only views across conversations that only operators need (the runtime, outbox and schedule
 * repositories answer per-record questions). Each method reads one committed snapshot; an empty
 * array means nothing matched. A second store backend implements the same interface.
 */
export interface OperatorQueries {
  /** Runs newest first (by admission order), at most `limit`. */
  listRuns(filter: { state?: RunState; conversationId?: string; limit: number }): Promise<RunRecord[]>;
  /** Conversations most recently active first (never-active ones by creation time), at most `limit`. */
  listConversations(limit: number): Promise<ConversationSummary[]>;
  /** One conversation's summary; null when there is no such conversation. */
  conversationSummary(conversationId: string): Promise<ConversationSummary | null>;
  /** Schedules of every conversation (or of one), oldest first; only live ones unless `includeEnded`. */
  listSchedules(filter: { conversationId?: string; includeEnded: boolean }): Promise<Schedule[]>;
}
