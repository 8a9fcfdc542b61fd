/**
 * The runtime store's prompt reads, written once for both engines (see steps.ts): the bounded
 * material for a model call and for compaction, as procedures of read steps that each engine runs
 * on one snapshot (SQLite: a deferred transaction, one WAL snapshot; PostgreSQL: REPEATABLE READ).
 */
import { SwitchboardError } from "../errors.ts";
import type {
  CompactionCandidates,
  CompactionRead,
  ConversationSummary,
  PromptContext,
  PromptTurn,
  RunRecord,
} from "../runtime/store.ts";
import type { Message, RunState, StepRecord } from "../runtime/types.ts";
import { compactionReach, joinableInputs, joinedInputIds, promptTurns } from "./rules.ts";
import { type Answer, type StepCall, stepsOf } from "./steps.ts";

/** The reads the prompt procedures take, each on the snapshot they run on. */
export interface PromptReadSteps {
  run(runId: string): RunRecord | null;
  message(id: string): Message | null;
  /** The messages with these ids, in conversation order (none for no ids). */
  messagesByIds(ids: readonly string[]): Message[];
  /** The messages of these runs, in conversation order. */
  messagesOfRuns(runIds: readonly string[]): Message[];
  /**
   * Finished runs (superseded, absorbed and cancelled left out) after `afterFinishSeq`, in finish
   * order: up to `limit`, the newest ones (newest first) when `newest`, else the oldest.
   */
  finishedRuns(
    conversationId: string,
    afterFinishSeq: number,
    limit: number,
    newest: boolean,
  ): Array<{ id: string; state: RunState; finishSeq: number }>;
  /** How many runs `finishedRuns` could answer, without a limit. */
  finishedCount(conversationId: string, afterFinishSeq: number): number;
  summary(conversationId: string): ConversationSummary | null;
  /** Queued `inject` runs of normal priority and no steps after `queueSeq`, in queue order. */
  joinableRuns(conversationId: string, queueSeq: number): RunRecord[];
  lastStep(runId: string): StepRecord | null;
}

export type PromptRead<R> = Generator<StepCall<PromptReadSteps>, R, unknown>;

const step = stepsOf<PromptReadSteps>();
type A<K extends keyof PromptReadSteps> = Answer<PromptReadSteps, K>;

/**
 * Finished turns after `afterFinishSeq`, oldest first: the newest `limit` of them, or the oldest
 * `limit` when `newest` is false.
 */
function* finishedTurns(
  conversationId: string,
  options: { afterFinishSeq: number; limit: number; newest: boolean },
): PromptRead<PromptTurn[]> {
  const runs = (yield step(
    "finishedRuns",
    conversationId,
    options.afterFinishSeq,
    options.limit,
    options.newest,
  )) as A<"finishedRuns">;
  if (options.newest) runs.reverse();
  if (runs.length === 0) return [];
  const messages = (yield step(
    "messagesOfRuns",
    runs.map((r) => r.id),
  )) as A<"messagesOfRuns">;
  const joined = (yield step(
    "messagesByIds",
    joinedInputIds(messages.flatMap((m) => m.parts)),
  )) as A<"messagesByIds">;
  return promptTurns(runs, messages, joined);
}

/** See RuntimeStore.loadCompactionCandidates. */
export function* compactionCandidates(
  conversationId: string,
  options: CompactionRead,
): PromptRead<CompactionCandidates> {
  const summary = (yield step("summary", conversationId)) as A<"summary">;
  const after = summary?.throughFinishSeq ?? 0;
  const count = (yield step("finishedCount", conversationId, after)) as A<"finishedCount">;
  const { pending, read } = compactionReach(count, options);
  const turns =
    read === 0
      ? []
      : yield* finishedTurns(conversationId, { afterFinishSeq: after, limit: read, newest: false });
  return { summary, turns, pending };
}

/** See RuntimeStore.loadPromptContext. */
export function* promptContext(runId: string, options: { maxTurns: number }): PromptRead<PromptContext> {
  const run = (yield step("run", runId)) as A<"run">;
  if (!run) throw new SwitchboardError("not_found", `Run ${runId} does not exist.`);
  const inputs = (yield step("messagesByIds", run.inputMessageIds)) as A<"messagesByIds">;
  const assistant = (yield step("message", run.assistantMessageId)) as A<"message">;
  const summary = (yield step("summary", run.conversationId)) as A<"summary">;
  const history = yield* finishedTurns(run.conversationId, {
    afterFinishSeq: summary?.throughFinishSeq ?? 0,
    limit: options.maxTurns,
    newest: true,
  });
  const joinableRuns = (yield step("joinableRuns", run.conversationId, run.queueSeq)) as A<"joinableRuns">;
  const joinable = joinableInputs(
    joinableRuns,
    (yield step(
      "messagesByIds",
      joinableRuns.flatMap((r) => r.inputMessageIds),
    )) as A<"messagesByIds">,
  );
  const lastStep = (yield step("lastStep", run.id)) as A<"lastStep">;
  return { run, summary, history, inputs, assistant, lastStep, joinable };
}
