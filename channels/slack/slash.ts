/**
 * A Slack slash command as an input: the text a user would have typed (`/model smart`), so the
 * one text parser runs it, in the conversation a message in that channel (or thread) belongs to,
 * under the command's trigger_id as its update key (a redelivered envelope is a duplicate), with
 * the channel or thread it came from as the reply target. Pure and SDK-free: the same function
 * serves Socket Mode and HTTP.
 */
import { z } from "zod";
import { type CommandMenu, type CommandSpec, commandText } from "../commands.ts";
import type { InboundMessage, SurfaceKind } from "../types.ts";
import {
  channelConversationKey,
  dmConversationKey,
  encodeReplyTarget,
  type ReplyTarget,
  threadConversationKey,
} from "./keys.ts";
import type { ParseContext } from "./parse.ts";

const slackId = z.string().min(1).max(255);

const slashCommandSchema = z
  .object({
    command: z.string().regex(/^\/[^\s/]{1,32}$/),
    text: z.string().max(4000).default(""),
    user_id: slackId,
    user_name: z.string().max(255).optional(),
    channel_id: z.string().regex(/^[CDG][A-Z0-9]+$/),
    team_id: slackId.optional(),
    trigger_id: slackId,
    thread_ts: z
      .string()
      .regex(/^\d+\.\d+$/)
      .optional(),
  })
  .loose();

/** True for a slash command body (Bolt hands it to `app.command` listeners). */
export function isSlashCommand(body: unknown): boolean {
  return (
    typeof body === "object" && body !== null && typeof (body as { command?: unknown }).command === "string"
  );
}

/** The name a command is registered under on Slack (Slack keeps `/status` for itself). */
export function slackCommandName(spec: CommandSpec): string {
  return spec.slackName ?? spec.name;
}

export type SlashParse =
  | { kind: "message"; message: InboundMessage }
  | { kind: "skip"; reason: "malformed_command" | "unknown_command" | "own_message" };

export function parseSlashCommand(body: unknown, menu: CommandMenu, context: ParseContext): SlashParse {
  const parsed = slashCommandSchema.safeParse(body);
  if (!parsed.success) return { kind: "skip", reason: "malformed_command" };
  const command = parsed.data;
  const spec = menu.commands.find((c) => `/${slackCommandName(c)}` === command.command.toLowerCase());
  if (spec === undefined) return { kind: "skip", reason: "unknown_command" };
  if (command.user_id === context.botUserId) return { kind: "skip", reason: "own_message" };
  const channel = command.channel_id;
  const threadTs = command.thread_ts;
  let conversationKey: string;
  let target: ReplyTarget;
  let surface: SurfaceKind;
  if (channel.startsWith("D")) {
    conversationKey = dmConversationKey(context.account, command.user_id);
    target = threadTs === undefined ? { channel } : { channel, threadTs };
    surface = "dm";
  } else if (threadTs !== undefined) {
    conversationKey = threadConversationKey(context.account, channel, threadTs);
    target = { channel, threadTs };
    surface = "thread";
  } else {
    conversationKey = channelConversationKey(context.account, channel);
    target = { channel };
    surface = "group";
  }
  const name = command.user_name || undefined;
  return {
    kind: "message",
    message: {
      channel: "slack",
      account: context.account,
      updateKey: `command:${command.trigger_id}`,
      principal:
        name === undefined
          ? { id: command.user_id, isBot: false }
          : { id: command.user_id, name, isBot: false },
      conversationKey,
      ...(surface === "thread" ? { roomKey: channelConversationKey(context.account, channel) } : {}),
      replyTarget: encodeReplyTarget(target),
      surface,
      where: { chat: channel, team: command.team_id ?? context.account.split(":")[0]! },
      // Slack hands over the rest of the line as one string; the text parser splits it.
      text: commandText(spec.name, [command.text]),
      addressedToBot: true,
      attachments: [],
      receivedAtMs: context.receivedAtMs,
    },
  };
}
