import type { OutboxRecord, OutboxState } from "../../outbox/types.ts";
import type { Schedule } from "../../schedules/types.ts";
import type { MessagePageItem, RunRecord } from "../runtime/store.ts";
import type { RunState, StepRecord } from "../runtime/types.ts";

/**
 * Read-only views across conversations that only operators need (the runtime, outbox and schedule
 * repositories answer per-record questions). Each method reads one committed snapshot; an empty
 * array means nothing matched. Lists are newest first and keyset-paged: `before` is the sort key
 * of the last item of the previous page, and the result starts strictly after it. Both store
 * backends implement the same interface (test/store/operator-conformance.ts).
 */
export interface OperatorQueries {
  /** Runs newest first (by admission order, `queueSeq`), at most `limit`. */
  listRuns(filter: {
    state?: RunState;
    conversationId?: string;
    beforeQueueSeq?: number;
    limit: number;
  }): Promise<RunRecord[]>;
  /**
   * Conversations most recently active first (never-active ones by creation time, ties by id
   * descending), at most `limit`. `before` is `[activityMs, id]` of the previous page's last one.
   * `matching`: only conversations where it occurs, case-insensitively (ASCII letters at least; other
   * letters as the engine's lower() folds them), in the id or name of a user who had a run there,
   * or in a channel key mapped to it; `%` and `_` in it are plain characters.
   */
  listConversations(page: {
    before?: readonly [number, string];
    limit: number;
    matching?: string;
  }): Promise<ConversationSummary[]>;
  /** One conversation's summary; null when there is no such conversation. */
  conversationSummary(conversationId: string): Promise<ConversationSummary | null>;
  /**
   * Outbox records newest first by (createdAtMs, ordinal, id), at most `limit`. `before` is that
   * key of the previous page's last record.
   */
  listOutbox(filter: {
    state?: OutboxState;
    conversationId?: string;
    before?: readonly [number, number, string];
    limit: number;
  }): Promise<OutboxRecord[]>;
  /** One conversation's messages, newest first (by order), each with its run's state; at most `limit`. */
  listMessagesNewestFirst(
    conversationId: string,
    page: { beforeOrder?: number; limit: number },
  ): Promise<MessagePageItem[]>;
  /**
   * A conversation's chat commands (`/help`, `/every …`) as they arrived, newest first, at most
   * `limit`: the command's name, its text and when it was received. Their replies are outbox records.
   */
  listCommandInputs(conversationId: string, limit: number): Promise<CommandInput[]>;
  /** The model steps of these runs, by run then step; a run with no step yet has none. */
  listSteps(runIds: readonly string[]): Promise<Array<StepRecord & { runId: string }>>;
  /** The usage of every model step that finished at or after `sinceMs`, one entry per step. */
  stepUsageSince(sinceMs: number): Promise<Array<{ runId: string; usage: StepRecord["usage"] }>>;
  /** Schedules of every conversation (or of one), oldest first; only live ones unless `includeEnded`. */
  listSchedules(filter: { conversationId?: string; includeEnded: boolean }): Promise<Schedule[]>;
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

export interface CommandInput {
  command: string;
  text: string;
  atMs: number;
}
