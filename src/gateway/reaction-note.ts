import type { InboundMessage } from "../../channels/types.ts";
import type { RuntimeStore } from "../runtime/store.ts";
import {
  clip,
  MAX_REACTION_EXCERPT_CHARS,
  type Reaction,
  reactionSchema,
  readReactions,
  withReaction,
} from "../state/slots.ts";
import type { StateStore } from "../state/store.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { IngressDecision } from "./ingress-decision.ts";

export interface ReactionNoteDeps {
  store: Pick<RuntimeStore, "loadIngressReceipt" | "claimIngress" | "resolveConversationKey">;
  state: StateStore;
  clock: Clock;
  logger: Logger;
}

export type ReactionNoteResult =
  | { kind: "noted"; conversationId: string }
  | { kind: "duplicate" }
  | { kind: "refused"; reason: string };

/** Saves tried when other changes to the slot keep landing in between (compare-and-set). */
const SAVE_ATTEMPTS = 5;

/**
 * A person reacted to a message (`message.reaction`): the reaction goes into the conversation's
 * `reactions` slot, which the system prompt shows at the agent's next turn. No run starts and the
 * model is not called. It is noted only when ingress's `decision` would have read a message from
 * this person here (an allowed user, addressed as the surface requires): a reaction is empty, so
 * `empty` is the one ignore reason that still notes it; any other (a user off the allowlist, one
 * who would be sent a pairing code) refuses it without a word.
 *
 * The reaction is recorded under its own key after the slot was saved: a redelivery that arrives
 * after the record is a duplicate, and one that arrives before (the process died in between) finds
 * the reaction in the slot already (by its key) and changes nothing.
 */
export async function noteReaction(
  message: InboundMessage & { reaction: NonNullable<InboundMessage["reaction"]> },
  source: string,
  decision: IngressDecision,
  deps: ReactionNoteDeps,
): Promise<ReactionNoteResult> {
  const { store, clock, logger } = deps;
  if (decision.kind === "pair") return { kind: "refused", reason: "user not allowed" };
  if (decision.kind === "ignore" && decision.reason !== "empty")
    return { kind: "refused", reason: decision.reason };
  if (await store.loadIngressReceipt(source, message.updateKey)) return { kind: "duplicate" };
  const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
  const excerpt = message.reaction.excerpt?.replace(/\s+/g, " ").trim();
  const reaction: Reaction = reactionSchema.parse({
    key: message.updateKey,
    emoji: message.reaction.emoji,
    messageId: message.reaction.messageId,
    by: {
      id: message.principal.id,
      ...(message.principal.name ? { name: message.principal.name } : {}),
    },
    atMs: Math.max(0, Math.round(message.receivedAtMs)),
    ...(excerpt ? { excerpt: clip(excerpt, MAX_REACTION_EXCERPT_CHARS) } : {}),
  });
  const version = await save(conversationId, reaction, message.principal.id, deps);
  const claimed = await store.claimIngress({
    source,
    key: message.updateKey,
    outcome: "noted",
    payload: message,
    conversationId,
    nowMs: clock.now(),
  });
  if (!claimed.fresh) return { kind: "duplicate" };
  logger.info("ingress.reaction_noted", {
    channel: message.channel,
    updateKey: message.updateKey,
    conversationId,
    messageId: reaction.messageId,
    removed: reaction.emoji === null,
    version,
  });
  return { kind: "noted", conversationId };
}

/** Adds `reaction` to the slot, again on a conflict; the slot's version after it (null: already there). */
async function save(
  conversationId: string,
  reaction: Reaction,
  userId: string,
  deps: ReactionNoteDeps,
): Promise<number | null> {
  for (let attempt = 1; ; attempt++) {
    const current = await deps.state.loadState(conversationId);
    const list = readReactions(current);
    const next = withReaction(list, reaction);
    if (next === list) return null;
    const saved = await deps.state.saveState({
      conversationId,
      slot: "reactions",
      value: next,
      actor: `human:${userId}`,
      expectedVersion: current.reactions?.version ?? 0,
      nowMs: deps.clock.now(),
    });
    if (saved.outcome === "saved") return saved.version;
    if (attempt >= SAVE_ATTEMPTS)
      throw new Error(
        `the reactions of conversation ${conversationId} changed ${SAVE_ATTEMPTS} times while a reaction was being noted; the platform's redelivery will try again`,
      );
  }
}
