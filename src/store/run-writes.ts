/**
 * A run's lease taken and given back, and the writes its owner makes under its fence, written
 * once for both engines (see steps.ts). Each engine supplies the steps as its own SQL inside one
 * transaction.
 */
import type { OutboxInsert } from "../../outbox/types.ts";
import type {
  AcquiredRun,
  AcquireNextRequest,
  AcquireRequest,
  CheckpointRequest,
  Fence,
  FileDelivery,
  NextAcquisition,
  RunRecord,
  SpilledOutput,
} from "../runtime/store.ts";
import type {
  InputPart,
  MessagePart,
  MessageStatus,
  RunState,
  StepRecord,
  TerminalRunState,
  Usage,
} from "../runtime/types.ts";
import { endedStreamMarkdown, fileInsert, streamKey } from "./outbox-records.ts";
import {
  acquisition,
  answerStatus,
  checkpointEvent,
  type EventBody,
  foreignLeaseUntil,
  nextRunnable,
  notAnInput,
  releasedState,
  terminalEvent,
} from "./rules.ts";
import { type Answer, type StepCall, stepsOf } from "./steps.ts";
import { sumUsage } from "./usage.ts";

/** The steps that record a finished model step (see {@link saveStep}). */
export interface StepSaveSteps {
  /** Writes the step's row, replacing one saved before under the same number. */
  upsertStep(runId: string, step: StepRecord): void;
  /** The usage of each of the run's saved steps, in step order. */
  stepUsages(runId: string): Usage[];
  /** The run's step count and its usage summed over its steps. */
  setRunUsage(runId: string, steps: number, total: ReturnType<typeof sumUsage>): void;
  appendEvent(body: EventBody, nowMs: number): { seq: number };
}

/** The steps that end a run without its owner (see {@link endWithoutOwner}). */
export interface RunEndSteps {
  /** Puts the run in terminal `state` without an owner or a lease, numbering its finish. */
  closeRun(run: RunRecord, state: TerminalRunState, nowMs: number, absorbedInto: string | null): void;
  /** Gives the run's answer `status`; answers its parts, or null when the run has no answer. */
  settleAnswer(run: RunRecord, status: MessageStatus): MessagePart[] | null;
  /** Sets the final text of the stream record `key` when there is one (see the outbox's own). */
  finalizeStream(key: string, markdown: string, nowMs: number): void;
  appendEvent(body: EventBody, nowMs: number): { seq: number };
}

/** The reads and writes of taking, keeping and giving back a run, each inside one transaction. */
export interface RunWriteSteps extends StepSaveSteps, RunEndSteps {
  /** The run, when `fence` still holds it; throws `fence_lost` otherwise. */
  fenced(fence: Fence): RunRecord;
  /** The run, locked for this transaction (PostgreSQL); null when there is none. */
  lockRun(runId: string): RunRecord | null;
  activeRuns(conversationId: string): RunRecord[];
  /**
   * The conversation's active runs in queue order, locked for this transaction (PostgreSQL, which
   * answers null for a conversation without a head: nothing to take).
   */
  lockActiveRuns(conversationId: string): RunRecord[] | null;
  /** Gives `run` to `owner` as `taken` says until `leaseUntilMs`; answers the row as it now is. */
  takeRun(
    run: RunRecord,
    taken: NonNullable<ReturnType<typeof acquisition>>,
    owner: string,
    leaseUntilMs: number,
    nowMs: number,
  ): RunRecord;
  /** Puts the run in `state` without an owner or a lease. */
  releaseRun(runId: string, state: RunState): void;
  /** Writes the run's answer as it streams (status `streaming`; an existing one keeps its status). */
  upsertStreamingAnswer(run: RunRecord, parts: readonly MessagePart[], nowMs: number): void;
  /** Keeps a tool's spilled output; a second write of the same ref changes nothing. */
  insertToolOutput(run: RunRecord, spilled: SpilledOutput, nowMs: number): void;
  /** The outbox records' ids, in order (an existing record's own id for a repeated key). */
  insertOutbox(inserts: readonly OutboxInsert[], nowMs: number): string[];
  /** Replaces the parts of the user message `messageId`. */
  updateInputParts(messageId: string, parts: readonly InputPart[]): void;
}

const call = stepsOf<RunWriteSteps>();
const stepSave = stepsOf<StepSaveSteps>();
const runEnd = stepsOf<RunEndSteps>();
type A<K extends keyof RunWriteSteps> = Answer<RunWriteSteps, K>;

/** A step's row, the run's usage summed over its steps, and its `checkpoint` event; returns its seq. */
export function* saveStep(
  run: RunRecord,
  step: StepRecord,
  parts: readonly MessagePart[],
  nowMs: number,
): Generator<StepCall<StepSaveSteps>, number, unknown> {
  yield stepSave("upsertStep", run.id, step);
  const usages = (yield stepSave("stepUsages", run.id)) as A<"stepUsages">;
  yield stepSave("setRunUsage", run.id, step.step + 1, sumUsage(usages));
  const { seq } = (yield stepSave(
    "appendEvent",
    checkpointEvent(run, step, parts),
    nowMs,
  )) as A<"appendEvent">;
  return seq;
}

/**
 * Ends a run that never started, or one ended without its owner (superseded, stopped while
 * queued, absorbed into the run `absorbedInto`), in terminal `state`: its answer so far keeps its
 * parts and its stream record gets its final text. Returns the seq of its terminal event.
 */
export function* endWithoutOwner(
  run: RunRecord,
  state: TerminalRunState,
  nowMs: number,
  absorbedInto?: string,
): Generator<StepCall<RunEndSteps>, number, unknown> {
  yield runEnd("closeRun", run, state, nowMs, absorbedInto ?? null);
  const parts = ((yield runEnd("settleAnswer", run, answerStatus(state))) as A<"settleAnswer">) ?? [];
  yield runEnd("finalizeStream", streamKey(run.id), endedStreamMarkdown(state, parts), nowMs);
  const event = terminalEvent(run, state, parts, {
    usage: run.usage,
    ...(absorbedInto ? { absorbedInto } : {}),
  });
  const { seq } = (yield runEnd("appendEvent", event, nowMs)) as A<"appendEvent">;
  return seq;
}

/** Takes ownership of `run` when `acquisition` allows it, given its conversation's `active` runs. */
function* take(
  run: RunRecord,
  active: readonly RunRecord[],
  request: { owner: string; nowMs: number; leaseMs: number },
): Generator<StepCall<RunWriteSteps>, AcquiredRun | null, unknown> {
  const { nowMs } = request;
  const taken = acquisition(run, active, nowMs);
  if (!taken) return null;
  const row = (yield call(
    "takeRun",
    run,
    taken,
    request.owner,
    nowMs + request.leaseMs,
    nowMs,
  )) as A<"takeRun">;
  const body: EventBody = {
    type: "run-state",
    conversationId: run.conversationId,
    runId: run.id,
    state: taken.state,
  };
  const { seq } = (yield call("appendEvent", body, nowMs)) as A<"appendEvent">;
  return { run: row, fence: { runId: run.id, fencingToken: taken.fencingToken }, seq };
}

/** The conversation's next runnable run, taken; else when a foreign lease holds it until. */
export function* acquireNext(
  request: AcquireNextRequest,
): Generator<StepCall<RunWriteSteps>, NextAcquisition, unknown> {
  const active = (yield call("lockActiveRuns", request.conversationId)) as A<"lockActiveRuns">;
  if (active === null) return { acquired: null, heldUntilMs: null };
  const next = nextRunnable(active, request.nowMs);
  const acquired = next ? yield* take(next, active, request) : null;
  if (acquired) return { acquired, heldUntilMs: null };
  return { acquired: null, heldUntilMs: foreignLeaseUntil(active, request.owner) };
}

/** One named run, taken when `acquisition` allows it. */
export function* acquireRun(
  request: AcquireRequest,
): Generator<StepCall<RunWriteSteps>, AcquiredRun | null, unknown> {
  const run = (yield call("lockRun", request.runId)) as A<"lockRun">;
  if (!run) return null;
  const active =
    run.state === "queued" ? ((yield call("activeRuns", run.conversationId)) as A<"activeRuns">) : [];
  return yield* take(run, active, request);
}

/** Gives a fenced run back: a running one queues again, one asked to stop stays so. */
export function* release(fence: Fence, nowMs: number): Generator<StepCall<RunWriteSteps>, void, unknown> {
  const run = (yield call("fenced", fence)) as A<"fenced">;
  const state = releasedState(run);
  yield call("releaseRun", run.id, state);
  yield call(
    "appendEvent",
    { type: "run-state", conversationId: run.conversationId, runId: run.id, state },
    nowMs,
  );
}

/** The answer so far and the step that produced it (T1). */
export function* checkpoint(
  request: CheckpointRequest,
): Generator<StepCall<RunWriteSteps>, { seq: number }, unknown> {
  const run = (yield call("fenced", request.fence)) as A<"fenced">;
  yield call("upsertStreamingAnswer", run, request.assistantParts, request.nowMs);
  return { seq: yield* saveStep(run, request.step, request.assistantParts, request.nowMs) };
}

/** The answer as a tool left it, and the tool's spilled output when it had one. */
export function* toolProgress(
  fence: Fence,
  assistantParts: readonly MessagePart[],
  nowMs: number,
  spilled: SpilledOutput | undefined,
): Generator<StepCall<RunWriteSteps>, void, unknown> {
  const run = (yield call("fenced", fence)) as A<"fenced">;
  yield call("upsertStreamingAnswer", run, assistantParts, nowMs);
  if (spilled) yield call("insertToolOutput", run, spilled, nowMs);
}

/** Files the run sends, as outbox records of its conversation; returns their ids. */
export function* enqueueFiles(
  fence: Fence,
  files: readonly FileDelivery[],
  nowMs: number,
): Generator<StepCall<RunWriteSteps>, string[], unknown> {
  const run = (yield call("fenced", fence)) as A<"fenced">;
  const inserts = files.map((file) =>
    fileInsert({ runId: run.id, conversationId: run.conversationId }, file),
  );
  return (yield call("insertOutbox", inserts, nowMs)) as A<"insertOutbox">;
}

/** The prepared parts of one of the run's inputs; `not_found` for a message that is not one. */
export function* inputParts(
  fence: Fence,
  messageId: string,
  parts: readonly InputPart[],
): Generator<StepCall<RunWriteSteps>, void, unknown> {
  const run = (yield call("fenced", fence)) as A<"fenced">;
  if (!run.inputMessageIds.includes(messageId)) throw notAnInput(messageId, run.id);
  yield call("updateInputParts", messageId, parts);
}
