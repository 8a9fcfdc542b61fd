/**
 * A database that has been in use for a while: `replies` earlier replies in `conversations` other
 * chats, written through the store's own calls (admission, acquisition, the prompt's context,
 * terminal commit with the answer in the outbox, delivery), as a gateway leaves them. A fresh file hides every cost that
 * grows with the history rather than with the reply.
 */
import type { ChannelName } from "../../channels/types.ts";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";

/** The stores a reply goes through, as `openSqliteStores` gives them. */
type ReplyStores = Pick<ReturnType<typeof openSqliteStores>, "runtime" | "outbox">;

/**
 * One reply through the store's own calls, as the gateway makes them: admission, acquisition,
 * the prompt's context, and the terminal commit with the answer in the outbox (not delivered).
 */
export async function storeReply(
  { runtime }: ReplyStores,
  reply: { id: string; conversationId: string; target: string; channel: ChannelName },
): Promise<void> {
  const { id, conversationId, target, channel } = reply;
  const admitted = await runtime.admit({
    conversation: { id: conversationId },
    idempotencyKey: id,
    fingerprint: id,
    parts: [{ type: "text", text: `earlier message ${id}` }],
    context: { channel, target, surface: `${channel}:dm` },
    policy: "queue",
    coalescePending: false,
    proposedIds: { runId: `run-${id}`, messageId: `msg-${id}` },
    nowMs: Date.now(),
  });
  const acquired = await runtime.acquireRun({
    runId: admitted.runId,
    owner: "history",
    nowMs: Date.now(),
    leaseMs: 30_000,
  });
  if (!acquired) throw new Error(`reply ${id} was not acquired`);
  await runtime.loadPromptContext(acquired.run.id, { maxTurns: 40 });
  const text = `earlier answer ${id}`;
  await runtime.commitTerminal({
    fence: acquired.fence,
    state: "completed",
    assistantParts: [{ type: "text", text }],
    delivery: {
      runId: acquired.run.id,
      conversationId,
      channel,
      account: "history",
      target,
      state: "completed",
      text,
    },
    nowMs: Date.now(),
  });
}

/** The outbox worker's look (due heads, next wake-up) and the delivery of every due head. */
export async function deliverDue(
  outbox: ReplyStores["outbox"],
  channel: ChannelName,
  limit: number,
): Promise<void> {
  const due = await outbox.nextDeliverable(Date.now(), { limit, channels: [channel] });
  await outbox.nextWakeAtMs([channel], Date.now());
  for (const record of due) {
    await outbox.markSending(record.id, Date.now());
    await outbox.markDelivered(record.id, { messageIds: [`sent-${record.id}`] }, Date.now());
  }
}

export async function fillHistory(
  file: string,
  options: { replies: number; conversations: number; channel: ChannelName },
): Promise<void> {
  const stores = openSqliteStores(file);
  let n = 0;
  const reply = (chat: number) => {
    n += 1;
    return storeReply(stores, {
      id: `history-${n}`,
      conversationId: `history-chat-${chat}`,
      target: String(800_000 + chat),
      channel: options.channel,
    });
  };
  // Chats in parallel, so admissions share their group commits and filling stays quick.
  const rounds = Math.ceil(options.replies / options.conversations);
  for (let round = 0; round < rounds; round++) {
    const chats = Math.min(options.conversations, options.replies - round * options.conversations);
    await Promise.all(Array.from({ length: chats }, (_, chat) => reply(chat)));
    await deliverDue(stores.outbox, options.channel, chats);
  }
  stores.close();
}
