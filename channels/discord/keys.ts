import { SwitchboardError } from "../../src/errors.ts";

/**
 * Conversation keys and reply targets: the only place that knows their shape.
 *   DM            dc:<account>:dm:<user_id>
 *   guild channel dc:<account>:ch:<channel_id>             (per-user: …:user:<user_id>)
 *   thread        dc:<account>:thread:<thread_id>
 *   reply target  dc:<channel_id>   (a DM channel, a guild text channel or a thread)
 *                 dc:<channel_id>:i:<interaction_id>   (the answer to a slash command, which
 *                 goes as the interaction's response while its token works, else to the channel)
 */

const SNOWFLAKE = /^\d{1,20}$/;
const TARGET = /^dc:(\d{1,20})(?::i:(\d{1,20}))?$/;

export type ConversationScope =
  | { kind: "dm"; userId: string }
  | { kind: "channel"; channelId: string; userId?: string }
  | { kind: "thread"; threadId: string };

export function conversationKey(account: string, scope: ConversationScope): string {
  switch (scope.kind) {
    case "dm":
      return `dc:${account}:dm:${scope.userId}`;
    case "channel":
      return scope.userId === undefined
        ? `dc:${account}:ch:${scope.channelId}`
        : `dc:${account}:ch:${scope.channelId}:user:${scope.userId}`;
    case "thread":
      return `dc:${account}:thread:${scope.threadId}`;
  }
}

/** The bot user id a conversation key belongs to; null for a key of another shape. */
export function accountOfDiscordKey(key: string): string | null {
  return /^dc:(\d{1,21}):(?:dm|ch|thread):/.exec(key)?.[1] ?? null;
}

export function encodeTarget(channelId: string): string {
  if (!SNOWFLAKE.test(channelId))
    throw new Error(`Discord channel id must be a snowflake, got "${channelId}".`);
  return `dc:${channelId}`;
}

/** The reply target of a slash command's answer: its channel, and the interaction it answers. */
export function encodeInteractionTarget(channelId: string, interactionId: string): string {
  if (!SNOWFLAKE.test(interactionId))
    throw new Error(`Discord interaction id must be a snowflake, got "${interactionId}".`);
  return `${encodeTarget(channelId)}:i:${interactionId}`;
}

/** The interaction a reply target answers, or undefined for a plain channel target. */
export function interactionOf(target: string): string | undefined {
  return TARGET.exec(target)?.[2];
}

/** The channel id inside a reply target; a target from another adapter is `input_invalid`. */
export function decodeTarget(target: string): string {
  const channelId = TARGET.exec(target)?.[1];
  if (channelId === undefined) {
    throw new SwitchboardError(
      "input_invalid",
      `"${target}" is not a Discord reply target (expected "dc:<channel_id>"); it was made by another adapter or corrupted.`,
    );
  }
  return channelId;
}
