import type { Client, Message } from "discord.js";
import { SwitchboardError } from "../../src/errors.ts";

/** Catch-up looks at most this many targets: the most recently active ones. */
export const CATCH_UP_MAX_TARGETS = 200;
/** One page per channel: Discord's largest, so a long outage loses what came after these. */
export const CATCH_UP_MAX_MESSAGES_PER_CHANNEL = 100;

/**
 * Up to `limit` messages of `channelId` written right after `afterMessageId`, oldest first.
 * Discord answers `after` with the page that immediately follows, newest first.
 */
export async function fetchMessagesAfter(
  client: Client,
  channelId: string,
  afterMessageId: string,
  limit: number,
): Promise<Message[]> {
  const channel = await client.channels.fetch(channelId);
  if (channel === null || !channel.isTextBased()) {
    throw new SwitchboardError(
      "platform_rejected",
      `Discord channel ${channelId} is not a text channel the bot can read; nothing to catch up there.`,
    );
  }
  const cachedBefore = new Set(channel.messages.cache.keys());
  const page = await channel.messages.fetch({ after: afterMessageId, limit, cache: false });
  // A fetched reply still caches the message it answers (discord.js Message#_patch), and discord.js
  // silently drops a later MESSAGE_CREATE of a cached message. Leave the cache as it was, so a
  // replay behaves the same with or without catch-up and ingress dedupe decides.
  for (const id of [...channel.messages.cache.keys()]) {
    if (!cachedBefore.has(id)) channel.messages.cache.delete(id);
  }
  return [...page.values()].sort((a, b) => compareSnowflakes(a.id, b.id));
}

/** Snowflakes grow with time; as decimal strings they compare by length, then digit by digit. */
export function compareSnowflakes(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
