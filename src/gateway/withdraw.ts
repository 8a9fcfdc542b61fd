import type { InboundMessage, WithdrawEffect } from "../../channels/types.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { IngressReceipt, RunRecord, RuntimeStore } from "../runtime/store.ts";
import { isTerminalState } from "../runtime/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";

export interface WithdrawDeps {
  runtime: Pick<Runtime, "interrupt">;
  store: Pick<RuntimeStore, "loadIngressReceipt" | "loadRun" | "claimIngress">;
  clock: Clock;
  logger: Logger;
}

export type WithdrawResult =
  | { duplicate: true }
  | { duplicate: false; runId: string | null; effect: WithdrawEffect };

/**
 * A person deleted a message (`message.withdrawn`): the run its receipt names is cancelled when it
 * is still queued and stopped, as /stop stops it, when it runs; its stop reason says `withdrawn`.
 * A run that answers other messages too goes on, and so does one already finished. The delete is
 * recorded under its own key after it took effect, so a redelivery changes nothing: one that
 * arrives after the record is a duplicate, and one that arrives before (the process died in
 * between) finds the run already ended or asked to stop.
 *
 * A delete is authorised by the message it deletes: only a message admitted from this source and
 * answered in the same chat (reply target) or room is withdrawn, whoever deleted it (its author or a moderator;
 * Discord does not say which).
 */
export async function withdraw(
  message: InboundMessage & { withdrawn: NonNullable<InboundMessage["withdrawn"]> },
  source: string,
  deps: WithdrawDeps,
): Promise<WithdrawResult> {
  const { store, clock, logger } = deps;
  if (await store.loadIngressReceipt(source, message.updateKey)) return { duplicate: true };
  const original = await store.loadIngressReceipt(source, message.withdrawn.updateKey);
  const found = original?.runId ? await store.loadRun(original.runId) : null;
  const run = found && answersIn(found.run, message) ? found.run : null;
  const effect = run && original ? await apply(run, original, deps) : "unknown";
  const claimed = await store.claimIngress({
    source,
    key: message.updateKey,
    outcome: `withdrawn:${effect}`,
    payload: message,
    ...(run ? { conversationId: run.conversationId } : {}),
    nowMs: clock.now(),
  });
  if (!claimed.fresh) return { duplicate: true };
  const fields = {
    channel: message.channel,
    updateKey: message.updateKey,
    withdrawn: message.withdrawn.updateKey,
    runId: run?.id ?? null,
    effect,
  };
  if (effect === "shared")
    logger.info("ingress.withdraw_shared", {
      ...fields,
      inputs: run?.inputMessageIds.length ?? 0,
      hint: "the deleted message's run answers other messages too; it goes on (send /stop to stop it)",
    });
  else logger.info("ingress.withdrawn", fields);
  return { duplicate: false, runId: run?.id ?? null, effect };
}

/** Ends or stops `run`, whose input `original` was deleted, unless it answers more than that input. */
async function apply(run: RunRecord, original: IngressReceipt, deps: WithdrawDeps): Promise<WithdrawEffect> {
  if (isTerminalState(run.state)) return "finished";
  if (run.inputMessageIds.length !== 1 || run.inputMessageIds[0] !== original.inputMessageId) return "shared";
  const stopped = await deps.runtime.interrupt({
    conversationId: run.conversationId,
    runId: run.id,
    reason: "withdrawn",
  });
  if (!stopped) return "finished";
  const after = await deps.store.loadRun(run.id);
  return after?.run.state === "cancelled" ? "cancelled" : "stopped";
}

/**
 * The run answers in the chat the delete came from, or in the room that holds it (a Matrix
 * redaction names the room, not the thread): a receipt of another chat is never touched.
 */
function answersIn(run: RunRecord, message: InboundMessage): boolean {
  const context = run.context as Partial<
    Record<"channel" | "target" | "conversationKey" | "roomKey", unknown>
  > | null;
  if (context?.channel !== message.channel) return false;
  const room = (context.roomKey ?? context.conversationKey) as unknown;
  return context.target === message.replyTarget || room === (message.roomKey ?? message.conversationKey);
}
