/**
 * A database that has been in use for a while: `replies` earlier replies in `conversations` other
 * chats, written through the store's own calls (admission, acquisition, terminal commit with the
 * answer in the outbox, delivery), as a gateway leaves them. A fresh file hides every cost that
 * grows with the history rather than with the reply.
 */
import type { ChannelName } from "../../channels/types.ts";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";

export async function fillHistory(
  file: string,
  options: { replies: number; conversations: number; channel: ChannelName },
): Promise<void> {
  const stores = openSqliteStores(file);
  const { runtime, outbox } = stores;
  let n = 0;
  const reply = async (chat: number) => {
    n += 1;
    const id = `history-${n}`;
    const conversationId = `history-chat-${chat}`;
    const target = String(800_000 + chat);
    const admitted = await runtime.admit({
      conversation: { id: conversationId },
      idempotencyKey: id,
      fingerprint: id,
      parts: [{ type: "text", text: `earlier message ${n}` }],
      context: { channel: options.channel, target, surface: `${options.channel}:dm` },
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
    if (!acquired) throw new Error(`history reply ${n} was not acquired`);
    const text = `earlier answer ${n}`;
    await runtime.commitTerminal({
      fence: acquired.fence,
      state: "completed",
      assistantParts: [{ type: "text", text }],
      delivery: {
        runId: acquired.run.id,
        conversationId,
        channel: options.channel,
        account: "history",
        target,
        state: "completed",
        text,
      },
      nowMs: Date.now(),
    });
  };
  // Chats in parallel, so admissions share their group commits and filling stays quick.
  const rounds = Math.ceil(options.replies / options.conversations);
  for (let round = 0; round < rounds; round++) {
    const chats = Math.min(options.conversations, options.replies - round * options.conversations);
    await Promise.all(Array.from({ length: chats }, (_, chat) => reply(chat)));
    const due = await outbox.nextDeliverable(Date.now(), { limit: chats, channels: [options.channel] });
    for (const record of due) {
      await outbox.markSending(record.id, Date.now());
      await outbox.markDelivered(record.id, { messageIds: [`sent-${record.id}`] }, Date.now());
    }
  }
  stores.close();
}
