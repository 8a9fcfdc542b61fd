/**
 * The chat commands as a channel registers them in the platform's native menu (Telegram's
 * setMyCommands, Discord's application commands, Slack's slash commands). The gateway defines the
 * one list (src/gateway/command-list.ts) and hands it to adapters; an adapter maps it into the
 * platform's shape and limits. The text parser and the help text read the same list.
 */
import { createHash } from "node:crypto";

/** Where a command applies: in a direct chat with the bot, in a group (channel, thread). */
export type CommandPlace = "dm" | "group";

/** One argument of a command, in the order the text form takes them. */
export interface CommandArgument {
  /** Lowercase, [a-z0-9_-], at most 32 characters (Discord's option name rule). */
  readonly name: string;
  /** At most 100 characters (Discord's limit). */
  readonly description: string;
  /** Discord wants required arguments before optional ones; the list gives them in that order. */
  readonly required: boolean;
  /** Suggestions come from a live list the adapter asks for (`CommandMenu.choices`). */
  readonly autocomplete?: "models";
}

export interface CommandSpec {
  /** Lowercase [a-z0-9_], 1–32 characters: valid on every platform as is. */
  readonly name: string;
  /** One line for menus: 1–100 characters (Discord's limit; Telegram allows 256). */
  readonly description: string;
  /** The description in other languages, by IETF language code ("de", "pt-BR"). */
  readonly descriptions?: Readonly<Record<string, string>>;
  readonly arguments: readonly CommandArgument[];
  readonly places: readonly CommandPlace[];
  /**
   * The name Slack registers it under when Slack reserves ours (Slack's own `/status`); the
   * adapter maps it back. Absent: the same name.
   */
  readonly slackName?: string;
}

/** What an adapter is given to register: the list and the live choices its autocomplete offers. */
export interface CommandMenu {
  readonly commands: readonly CommandSpec[];
  /** The current values for an argument's `autocomplete` (the pickable model names). */
  choices(source: NonNullable<CommandArgument["autocomplete"]>): readonly string[];
}

/** A command left out of a platform's menu, and why (for the start-up warning). */
export interface DroppedCommand {
  name: string;
  reason: string;
}

/**
 * Hex SHA-256 of what an adapter registers (its platform payload, JSON): stored in the channel
 * state so a restart with an unchanged list registers nothing.
 */
export function menuHash(payload: unknown): string {
  return createHash("sha256").update(JSON.stringify(payload)).digest("hex");
}

/**
 * The text a native command stands for, as a user would have typed it: `/name arg1 arg2 rest`,
 * so the one text parser handles native and typed commands alike. Empty arguments are left out.
 */
export function commandText(name: string, values: readonly string[]): string {
  const parts = values.map((value) => value.trim()).filter((value) => value !== "");
  return [`/${name}`, ...parts].join(" ");
}
