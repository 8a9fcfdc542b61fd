/**
 * A slash command as an input: the text a user would have typed (`/in 10m stretch`), so the one
 * text parser runs it, in the conversation a message in that channel belongs to, under the
 * interaction's id as its update key (a redelivered interaction is a duplicate) and with a reply
 * target that names the interaction (its answer goes as the interaction's response).
 */
import type { ChatInputCommandInteraction } from "discord.js";
import { type CommandMenu, commandText } from "../commands.ts";
import type { InboundMessage } from "../types.ts";
import { encodeInteractionTarget } from "./keys.ts";
import { pressToInbound, readPress } from "./parse.ts";

export type SlashParse =
  | { kind: "message"; message: InboundMessage }
  | {
      kind: "skip";
      reason: "unknown_command" | "unsupported_channel" | "own_message" | "bot_author" | "empty";
    };

export function slashToInbound(
  interaction: ChatInputCommandInteraction,
  menu: CommandMenu,
  context: Parameters<typeof pressToInbound>[1],
): SlashParse {
  const spec = menu.commands.find((c) => c.name === interaction.commandName);
  if (spec === undefined) return { kind: "skip", reason: "unknown_command" };
  const facts = readPress(interaction);
  if (facts === null) return { kind: "skip", reason: "unsupported_channel" };
  // The press path decides the conversation, surface and who wrote it; a command has no button.
  const parsed = pressToInbound({ ...facts, customId: `/${spec.name}` }, context);
  if (parsed.kind === "skip") return { kind: "skip", reason: parsed.reason as "own_message" | "bot_author" };
  const { action: _action, messageId: _messageId, ...message } = parsed.message;
  const values = spec.arguments.map((argument) => interaction.options.getString(argument.name) ?? "");
  return {
    kind: "message",
    message: {
      ...message,
      text: commandText(spec.name, values),
      replyTarget: encodeInteractionTarget(facts.channelId, facts.interactionId),
    },
  };
}
