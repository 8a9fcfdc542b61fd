import type { ChannelName } from "../../channels/types.ts";
import { readRunContext } from "../run-context.ts";
import type { RunRecord, RuntimeStore } from "../runtime/store.ts";

/**
 * The conversation's queued and running runs that answer the person's message `messageId` on
 * `channel` (their context replies to it), in durable order. A correction's run answers the same
 * message, so after an edit this finds the run for the newest text last. Empty when the message's
 * answer is finished, or it never started one.
 */
export async function activeRunsAnswering(
  store: Pick<RuntimeStore, "listActiveRuns">,
  conversationId: string,
  channel: ChannelName,
  messageId: string,
): Promise<RunRecord[]> {
  const runs = await store.listActiveRuns(conversationId);
  return runs.filter((run) => {
    const context = readRunContext(run.context);
    return context?.channel === channel && context.origin === "user" && context.replyTo === messageId;
  });
}
