import { SwitchboardError } from "../errors.ts";
import type { BlobJanitor } from "../runtime/blob-cleanup.ts";
import type { PurgeRecord, RuntimeStore } from "../runtime/store.ts";
import type { Clock } from "../util/clock.ts";

export interface ForgetOptions {
  store: Pick<RuntimeStore, "purgeConversation" | "listActiveRuns" | "requestStop" | "loadPurge">;
  clock: Clock;
  /**
   * Ends one active run, throwing its answer away (`superseded`: nothing of it reaches the chat).
   * The gateway passes its runtime's interrupt (which also aborts the model call in flight);
   * without it a durable stop request is committed and the run's owner ends it at its next step.
   */
  stopRun?: (conversationId: string, runId: string) => Promise<unknown>;
  /** How long the conversation's runs may take to end before the purge is refused. Default 20 s. */
  settleMs?: number;
  /**
   * Removes the conversation's files after the purge (those no other row points at). Without it
   * (the CLI on the database) the running gateway's periodic sweep removes them.
   */
  blobs?: Pick<BlobJanitor, "collect" | "sweep">;
}

export interface ForgetResult extends PurgeRecord {
  outcome: "purged" | "already_purged";
}

/**
 * /forget and `conversations purge`: interrupts the conversation's active runs, then purges it
 * with the store's purge (one transaction: its rows, state, schedules and outbox text; a tombstone
 * naming `actor` stays). A run admitted meanwhile is stopped too, until `settleMs` runs out; then
 * `state_conflict` names the runs still active and nothing was deleted. Safe to repeat.
 */
export async function forgetConversation(
  options: ForgetOptions,
  conversationId: string,
  actor: string,
): Promise<ForgetResult> {
  const { store, clock } = options;
  const deadline = clock.now() + (options.settleMs ?? 20_000);
  const stop =
    options.stopRun ?? ((_: string, runId: string) => store.requestStop(runId, "superseded", clock.now()));
  const stopped = new Set<string>();
  const released = await options.blobs?.collect(conversationId);
  for (;;) {
    const result = await store.purgeConversation(conversationId, { nowMs: clock.now(), actor });
    if (result.outcome === "purged" || result.outcome === "already_purged") {
      if (released) await options.blobs?.sweep(released);
      const record = await store.loadPurge(conversationId);
      return {
        outcome: result.outcome,
        ...(record ?? { conversationId, purgedAtMs: clock.now(), purgedBy: actor }),
      };
    }
    if (result.outcome === "conflict") {
      // No expected version is given, so only a store that broke its contract gets here.
      throw new SwitchboardError(
        "version_conflict",
        `Conversation ${conversationId} changed during its purge.`,
      );
    }
    if (clock.now() >= deadline) {
      throw new SwitchboardError(
        "state_conflict",
        `Conversation ${conversationId} still has active runs (${result.runIds.join(", ")}), so nothing was deleted. ` +
          "A run ends at its next step once asked to stop; with the gateway stopped, start it (it ends them on recovery) " +
          "or purge through its API (SWITCHBOARD_URL). Then try again.",
        { details: { conversationId, runIds: result.runIds } },
      );
    }
    for (const runId of result.runIds) {
      if (stopped.has(runId)) continue;
      stopped.add(runId);
      await stop(conversationId, runId);
    }
    await clock.sleep(50);
  }
}
