/**
 * The chat a reply target is in, as bindings name chats (`match.chat`): a Telegram topic's or a
 * Slack or Matrix thread's target is in the chat that holds it. What a target alone cannot tell
 * stays as the target says: a Discord thread's target names the thread, not its parent channel.
 */
import { decodeTarget as discordChannel } from "../../channels/discord/keys.ts";
import { decodeTarget as matrixTarget } from "../../channels/matrix/keys.ts";
import { decodeReplyTarget as slackTarget } from "../../channels/slack/keys.ts";
import { decodeTarget as telegramTarget } from "../../channels/telegram/target.ts";
import type { ChannelName } from "../../channels/types.ts";

/** The chat of `target` on `channel`; a target its channel did not make is its own chat (its send fails). */
export function chatOfTarget(channel: ChannelName, target: string): string {
  try {
    switch (channel) {
      case "telegram":
        return String(telegramTarget(target).chatId);
      case "discord":
        return discordChannel(target);
      case "slack":
        return slackTarget(target).channel;
      case "matrix":
        return matrixTarget(target).roomId;
      default:
        return target;
    }
  } catch {
    return target;
  }
}
