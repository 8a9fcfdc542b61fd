/**
 * Child agents' mutations, written once for both engines (see steps.ts): a spawn's receipt, the
 * child's result going back to its parent inside the child's terminal commit (T2), and stopping
 * children. The admission of a child's task and of its result are admission.ts's own procedure,
 * run step by step inside the same transaction ({@link viaAdmission}).
 */
import { createHash } from "node:crypto";
import type {
  ChildRecord,
  ChildState,
  ChildTarget,
  SpawnRequest,
  SpawnResult,
  StoppedChildRun,
} from "../children/store.ts";
import { boundOutput } from "../runtime/bounded-output.ts";
import type { AdmitRequest, Fence, RunRecord } from "../runtime/store.ts";
import { answerText, type MessagePart, type TerminalRunState } from "../runtime/types.ts";
import { newId } from "../util/ids.ts";
import { type AdmissionSteps, admission } from "./admission.ts";
import { deliversResult, resultText, spawnAllowed, stopsChildren } from "./child-rules.ts";
import { type Answer, type StepCall, stepsOf } from "./steps.ts";
import { type StopSteps, stop } from "./stop.ts";

/** A link as the steps write it. */
export interface ChildInsert {
  handle: string;
  parentRunId: string;
  parentConversationId: string;
  toolCallId: string;
  agent: string;
  task: string;
  wait: boolean;
  depth: number;
  conversationId: string;
  runId: string;
  resultContext: unknown;
  nowMs: number;
}

/** A link as the procedures read it: the record and the context its result is admitted with. */
export interface ChildLink extends ChildRecord {
  resultContext: unknown;
}

/** The reads and writes of the children's procedures, each inside the calling transaction. */
export interface ChildSteps {
  /** Takes one step of admission.ts's procedure (its name and arguments) in this transaction. */
  admissionStep(name: keyof AdmissionSteps, args: unknown[]): unknown;
  /**
   * Before a run's terminal commit locks its own conversation: the head of its parent's
   * conversation when the run is a child's (PostgreSQL; SQLite has one writer). Every writer
   * locks a parent's head before a child's, so a child ending and its parent stopping it cannot
   * deadlock.
   */
  lockParentOf(runId: string): void;
  /**
   * Before the running children of `target` are read for a change: the head of their parent's
   * conversation (PostgreSQL).
   */
  lockChildrenOf(target: ChildTarget): void;
  childBySpawn(parentRunId: string, toolCallId: string): ChildLink | null;
  childByHandle(handle: string): ChildLink | null;
  /** The link whose own conversation this is; null for a conversation that is not a child's. */
  childOfConversation(conversationId: string): ChildLink | null;
  /** The running links of `target`, oldest first. */
  runningChildren(target: ChildTarget): ChildLink[];
  insertChild(child: ChildInsert): void;
  settleChild(handle: string, settled: ChildSettled, nowMs: number): void;
  /** Whether the conversation was purged (its tombstone stays). */
  isPurged(conversationId: string): boolean;
  /** Keeps a result too large for the parent's prompt, for read_output in the parent's conversation. */
  insertResultOutput(output: ResultOutput, nowMs: number): void;
}

export interface ChildSettled {
  state: Exclude<ChildState, "running">;
  resultState: string | null;
  resultRunId: string | null;
}

export interface ResultOutput {
  ref: string;
  conversationId: string;
  runId: string;
  toolCallId: string;
  toolName: string;
  text: string;
}

/** What the children's procedures take: their own steps, a stop's, and a fenced read. */
export interface ChildProcedureSteps extends ChildSteps, StopSteps {
  fenced(fence: Fence): RunRecord;
  activeRuns(conversationId: string): RunRecord[];
}

const call = stepsOf<ChildProcedureSteps>();
type A<K extends keyof ChildProcedureSteps> = Answer<ChildProcedureSteps, K>;
type Procedure<R> = Generator<StepCall<ChildProcedureSteps>, R, unknown>;

/**
 * Runs admission.ts's procedure inside a children's procedure: each step it asks for is taken by
 * the engine's admission steps in the same transaction.
 */
function* viaAdmission<R>(procedure: Generator<StepCall<AdmissionSteps>, R, unknown>): Procedure<R> {
  let next = procedure.next();
  while (!next.done) {
    const answer: unknown = yield call("admissionStep", next.value.name, next.value.args);
    next = procedure.next(answer);
  }
  return next.value;
}

function fingerprint(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** The spawn's receipt: see ChildStore.spawnChild. */
export function* spawnChild(request: SpawnRequest): Procedure<SpawnResult> {
  const { nowMs, handle } = request;
  yield call("fenced", request.parentFence);
  const existing = (yield call(
    "childBySpawn",
    request.parentFence.runId,
    request.toolCallId,
  )) as A<"childBySpawn">;
  if (existing) return { outcome: "existing", child: withoutContext(existing) };
  const running = (yield call("runningChildren", {
    parentConversationId: request.parentConversationId,
  })) as A<"runningChildren">;
  if (!spawnAllowed(running.length, request.maxRunning))
    return { outcome: "refused", reason: "too_many_running", running: running.length };
  const task: AdmitRequest = {
    conversation: { id: request.proposedIds.conversationId },
    idempotencyKey: `spawn:${handle}`,
    fingerprint: fingerprint(request.task),
    parts: [{ type: "text", text: request.task }],
    context: request.childContext,
    policy: "queue",
    coalescePending: false,
    proposedIds: { runId: request.proposedIds.runId, messageId: request.proposedIds.messageId },
    nowMs,
  };
  const admitted = yield* viaAdmission(admission(task));
  yield call("insertChild", {
    handle,
    parentRunId: request.parentFence.runId,
    parentConversationId: request.parentConversationId,
    toolCallId: request.toolCallId,
    agent: request.agent,
    task: request.task,
    wait: request.wait,
    depth: request.depth,
    conversationId: admitted.conversationId,
    runId: admitted.runId,
    resultContext: request.resultContext,
    nowMs,
  });
  const child = (yield call("childByHandle", handle)) as A<"childByHandle">;
  return { outcome: "spawned", child: withoutContext(child!) };
}

/** Stops running children and theirs: see ChildStore.cancelChildren. */
export function* cancelChildren(target: ChildTarget, nowMs: number): Procedure<StoppedChildRun[]> {
  yield call("lockChildrenOf", target);
  const links = (yield call("runningChildren", target)) as A<"runningChildren">;
  const stopped: StoppedChildRun[] = [];
  for (const link of links) {
    yield call(
      "settleChild",
      link.handle,
      { state: "cancelled", resultState: null, resultRunId: null },
      nowMs,
    );
    const active = (yield call("activeRuns", link.conversationId)) as A<"activeRuns">;
    for (const run of active) {
      const outcome = yield* stop(run.id, "interrupted", nowMs);
      if (outcome.outcome !== "not_active")
        stopped.push({ conversationId: link.conversationId, runId: run.id });
    }
    yield call("admissionStep", "cancelApprovals", [link.conversationId, nowMs]);
    stopped.push(...(yield* cancelChildren({ parentConversationId: link.conversationId }, nowMs)));
  }
  return stopped;
}

/** What a terminal commit did beyond its own conversation. */
export interface ChildrenAtTerminal {
  /** Conversations this commit admitted an input to (a child's result for its parent). */
  resumed: string[];
  /** Runs of children this commit asked to stop (its run was stopped or failed). */
  stopped: StoppedChildRun[];
}

/**
 * The children's part of a run's terminal commit, after the run ended: a stopped or failed run
 * stops its running children; a child's run that delivers (see deliversResult) admits the child's
 * bounded answer as an input to the parent's conversation and settles the link, so the result is
 * delivered exactly when the child ends, and once.
 */
export function* childrenAtTerminal(
  run: RunRecord,
  state: TerminalRunState,
  parts: readonly MessagePart[],
  error: string | null,
  nowMs: number,
): Procedure<ChildrenAtTerminal> {
  const stopped = stopsChildren(state) ? yield* cancelChildren({ parentRunId: run.id }, nowMs) : [];
  const link = (yield call("childOfConversation", run.conversationId)) as A<"childOfConversation">;
  if (!link) return { resumed: [], stopped };
  const active = (yield call("activeRuns", run.conversationId)) as A<"activeRuns">;
  if (!deliversResult(link, state, active.filter((r) => r.id !== run.id).length))
    return { resumed: [], stopped };
  if ((yield call("isPurged", link.parentConversationId)) as A<"isPurged">) {
    yield call(
      "settleChild",
      link.handle,
      { state: "cancelled", resultState: state, resultRunId: null },
      nowMs,
    );
    return { resumed: [], stopped };
  }
  const ids = { runId: newId("run", nowMs), messageId: newId("msg", nowMs) };
  const bounded = boundOutput(resultText(link, state, answerText(parts), error), newId("out", nowMs));
  if (bounded.spilled) {
    yield call(
      "insertResultOutput",
      {
        ref: bounded.spilled.ref,
        conversationId: link.parentConversationId,
        runId: ids.runId,
        toolCallId: link.toolCallId,
        toolName: "spawn_agent",
        text: bounded.spilled.text,
      },
      nowMs,
    );
  }
  const text = bounded.output as string;
  const admitted = yield* viaAdmission(
    admission({
      conversation: { id: link.parentConversationId },
      idempotencyKey: `child-result:${link.handle}`,
      fingerprint: fingerprint(text),
      parts: [{ type: "text", text }],
      context: link.resultContext,
      policy: "queue",
      coalescePending: false,
      proposedIds: ids,
      nowMs,
    }),
  );
  yield call(
    "settleChild",
    link.handle,
    { state: "delivered", resultState: state, resultRunId: admitted.runId },
    nowMs,
  );
  return { resumed: [link.parentConversationId], stopped };
}

export function withoutContext(link: ChildLink): ChildRecord {
  const { resultContext: _, ...record } = link;
  return record;
}
