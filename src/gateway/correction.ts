import type { InboundMessage } from "../../channels/types.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { RunRecord, RuntimeStore } from "../runtime/store.ts";
import type { InputPolicy } from "../runtime/types.ts";
import type { Logger } from "../util/log.ts";
import type { SurfacePolicy } from "./config/index.ts";
import { activeRunsAnswering } from "./message-runs.ts";

/**
 * An edit of a message whose answer is not finished: the corrected text is admitted as the
 * message's new input (`policy` for its admission) and the runs answering the old text that
 * `replaces` lists are ended with the stop reason `edited`, which retracts what they showed.
 */
export interface Correction {
  /** The active runs answering the edited message, in durable order. */
  runs: RunRecord[];
  /** How the corrected input is admitted: behind what runs (`queue`), or joining it (`inject`). */
  policy: InputPolicy;
  /** The runs the correction ends: every queued one, and the running one unless the surface queues. */
  replaces: RunRecord[];
}

/**
 * What an edit does to the runs answering the edited message, decided from them and the
 * surface's input policy. Null: no run answers it any more (its answer is finished, or it never
 * had one), so the surface's `edits` setting decides. A queued run is always replaced. A running
 * one restarts with the corrected text under `supersede` and `interrupt`; under `queue` it
 * finishes and the correction is answered after it, and under `inject` the correction joins it.
 */
export function planCorrection(
  runs: RunRecord[],
  inputPolicy: SurfacePolicy["inputPolicy"],
): Correction | null {
  if (runs.length === 0) return null;
  const restarts = inputPolicy === "supersede" || inputPolicy === "interrupt";
  const running = runs.some((run) => run.state !== "queued");
  return {
    runs,
    policy: inputPolicy === "inject" && running ? "inject" : "queue",
    replaces: runs.filter((run) => run.state === "queued" || restarts),
  };
}

/** The active runs answering `message.edited`, and what its correction does to them (null: none). */
export async function findCorrection(
  message: InboundMessage & { edited: NonNullable<InboundMessage["edited"]> },
  conversationId: string,
  policy: SurfacePolicy,
  store: Pick<RuntimeStore, "listActiveRuns">,
): Promise<Correction | null> {
  const runs = await activeRunsAnswering(store, conversationId, message.channel, message.edited.messageId);
  return planCorrection(runs, policy.inputPolicy);
}

export interface CorrectionDeps {
  runtime: Pick<Runtime, "interrupt">;
  store: Pick<RuntimeStore, "loadRun">;
  logger: Logger;
}

/**
 * Ends the runs the correction replaces, once the corrected input was admitted to `runId`: only
 * those admitted before it, so a redelivered older edit never ends a newer correction's run.
 * Ending a run that already ended changes nothing, so applying it again after a crash (the edit
 * redelivered, its admission a duplicate) finishes what the first try began.
 */
export async function applyCorrection(
  correction: Correction,
  admitted: { runId: string; conversationId: string },
  message: InboundMessage,
  deps: CorrectionDeps,
): Promise<string[]> {
  const run = (await deps.store.loadRun(admitted.runId))?.run;
  if (!run) return [];
  const ended: string[] = [];
  for (const earlier of correction.replaces) {
    if (earlier.id === run.id || earlier.queueSeq >= run.queueSeq) continue;
    const stopped = await deps.runtime.interrupt({
      conversationId: admitted.conversationId,
      runId: earlier.id,
      reason: "edited",
    });
    if (stopped) ended.push(earlier.id);
  }
  deps.logger.info("ingress.corrected", {
    channel: message.channel,
    updateKey: message.updateKey,
    runId: run.id,
    replaced: ended,
    queuedBehind: correction.runs.filter((r) => r.id !== run.id && !ended.includes(r.id)).map((r) => r.id),
  });
  return ended;
}
