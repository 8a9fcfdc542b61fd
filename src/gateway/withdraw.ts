import type { InboundMessage, WithdrawEffect } from "../../channels/types.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { RunRecord, RuntimeStore } from "../runtime/store.ts";
import { isTerminalState } from "../runtime/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { activeRunsAnswering } from "./message-runs.ts";

export interface WithdrawDeps {
  runtime: Pick<Runtime, "interrupt">;
  store: Pick<
    RuntimeStore,
    "loadIngressReceipt" | "loadRun" | "claimIngress" | "listActiveRuns" | "resolveConversationKey"
  >;
  clock: Clock;
  logger: Logger;
}

export type WithdrawResult =
  | { duplicate: true }
  | { duplicate: false; runId: string | null; effect: WithdrawEffect };

/**
 * A person deleted a message (`message.withdrawn`): the run its receipt names (or, for a delete
 * that names the message by its platform id, the active run replying to it) is cancelled, queued
 * or running (a running one stops as /stop stops it, and what it showed is retracted); its stop
 * reason says `withdrawn`.
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
  const { run, inputMessageId } = await deletedRun(message, source, deps);
  const effect = run ? await apply(run, inputMessageId, deps) : "unknown";
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
    withdrawn: "updateKey" in message.withdrawn ? message.withdrawn.updateKey : message.withdrawn.messageId,
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

/**
 * The run answering the deleted message: by the receipt of its update key, or (named by its
 * platform id) the newest of the conversation's active runs that replies to it. Null when none.
 */
async function deletedRun(
  message: InboundMessage & { withdrawn: NonNullable<InboundMessage["withdrawn"]> },
  source: string,
  deps: WithdrawDeps,
): Promise<{ run: RunRecord | null; inputMessageId: string | null }> {
  const { store, clock } = deps;
  if ("messageId" in message.withdrawn) {
    const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
    const runs = await activeRunsAnswering(
      store,
      conversationId,
      message.channel,
      message.withdrawn.messageId,
    );
    return { run: runs.at(-1) ?? null, inputMessageId: null };
  }
  const original = await store.loadIngressReceipt(source, message.withdrawn.updateKey);
  const found = original?.runId ? await store.loadRun(original.runId) : null;
  const run = found && answersIn(found.run, message) ? found.run : null;
  return { run, inputMessageId: original?.inputMessageId ?? null };
}

/**
 * Ends or stops `run`, whose input was deleted, unless it answers more than that input
 * (`inputMessageId`, when the receipt named it).
 */
async function apply(
  run: RunRecord,
  inputMessageId: string | null,
  deps: WithdrawDeps,
): Promise<WithdrawEffect> {
  if (isTerminalState(run.state)) return "finished";
  if (
    run.inputMessageIds.length !== 1 ||
    (inputMessageId !== null && run.inputMessageIds[0] !== inputMessageId)
  )
    return "shared";
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
