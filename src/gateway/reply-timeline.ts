import type { DeliveryObserver } from "../../outbox/types.ts";
import type { ModelCallObserver } from "../runtime/types.ts";
import type { ReplyStage } from "./metrics.ts";

/** Replies followed at once; past it the oldest is forgotten (a run whose reply never goes out). */
const MAX_TRACKED_RUNS = 10_000;

/** Where one reply is, in the timeline's milliseconds. */
interface Stamps {
  /** The latest admission into the run committed here; taken by `admitted`. */
  committedAtMs?: number;
  /** Set by a fresh admission, taken by the run's first model call. */
  admittedAtMs?: number;
  /** The model call in flight's start. */
  modelStartedAtMs?: number;
  /** The latest model call's end. */
  modelFinishedAtMs?: number;
  terminalAtMs?: number;
  sendStartedAtMs?: number;
}

/**
 * Times each reply through this process, stage by stage (see `REPLY_STAGES`), and reports each
 * stage as it ends. In memory and per process: a reply recovered after a restart reports only the
 * stages it passes here.
 */
export interface ReplyTimeline {
  /** An update reached ingress: returns its stamp, for `admitted`. */
  received(): number;
  /** The runtime committed an admission into `runId` (T1); `admitted` then times up to here. */
  admissions: { committed(runId: string): void };
  /**
   * Ingress learnt that its input was committed at `runId`; `fresh` when that started a run (not
   * joined one). `platformAtMs`: when the adapter got the update (see `IngressTiming`), when it said.
   */
  admitted(runId: string, receivedAtMs: number, fresh: boolean, platformAtMs?: number): void;
  modelCalls: ModelCallObserver;
  /** The run's terminal commit (T2) is done. */
  terminalCommitted(runId: string): void;
  delivery: Required<Pick<DeliveryObserver, "firstSendStarted" | "firstSendAnswered">>;
}

export function createReplyTimeline(
  observe: (stage: ReplyStage, ms: number) => void,
  /** Sub-millisecond: most stages take less than one. */
  nowMs: () => number = () => performance.now(),
): ReplyTimeline {
  const runs = new Map<string, Stamps>();
  const stampsOf = (runId: string): Stamps => {
    let stamps = runs.get(runId);
    if (!stamps) {
      if (runs.size >= MAX_TRACKED_RUNS) runs.delete(runs.keys().next().value!);
      stamps = {};
      runs.set(runId, stamps);
    }
    return stamps;
  };

  return {
    received: nowMs,
    admissions: {
      committed(runId) {
        stampsOf(runId).committedAtMs = nowMs();
      },
    },
    admitted(runId, receivedAtMs, fresh, platformAtMs) {
      const stamps = runs.get(runId);
      const atMs = stamps?.committedAtMs ?? nowMs();
      if (stamps) delete stamps.committedAtMs;
      if (platformAtMs !== undefined) observe("receive", receivedAtMs - platformAtMs);
      observe("admit", atMs - receivedAtMs);
      if (fresh) stampsOf(runId).admittedAtMs = atMs;
    },
    modelCalls: {
      started(runId) {
        const atMs = nowMs();
        const stamps = stampsOf(runId);
        stamps.modelStartedAtMs = atMs;
        if (stamps.admittedAtMs === undefined) return;
        observe("to_model", atMs - stamps.admittedAtMs);
        delete stamps.admittedAtMs;
      },
      finished(runId) {
        const stamps = stampsOf(runId);
        stamps.modelFinishedAtMs = nowMs();
        if (stamps.modelStartedAtMs === undefined) return;
        observe("model", stamps.modelFinishedAtMs - stamps.modelStartedAtMs);
        delete stamps.modelStartedAtMs;
      },
    },
    terminalCommitted(runId) {
      const stamps = runs.get(runId);
      if (stamps?.modelFinishedAtMs === undefined) return;
      stamps.terminalAtMs = nowMs();
      observe("to_terminal", stamps.terminalAtMs - stamps.modelFinishedAtMs);
    },
    delivery: {
      firstSendStarted(record) {
        const stamps = runs.get(record.runId);
        if (stamps?.terminalAtMs === undefined) return;
        // A retry times only its own call: the wait for it is the retry's, not the outbox's.
        const first = stamps.sendStartedAtMs === undefined;
        stamps.sendStartedAtMs = nowMs();
        if (first) observe("to_send", stamps.sendStartedAtMs - stamps.terminalAtMs);
      },
      firstSendAnswered(record) {
        const stamps = runs.get(record.runId);
        if (stamps?.sendStartedAtMs === undefined) return;
        observe("send", nowMs() - stamps.sendStartedAtMs);
        runs.delete(record.runId);
      },
    },
  };
}
