/**
 * The chat commands as Discord application commands (slash commands): one bulk overwrite per
 * application, in one guild (development: changes show at once) or globally, set at start only
 * when it differs from what the last start set (a hash kept in the gateway's database).
 */
import {
  ApplicationCommandOptionType,
  ApplicationCommandType,
  InteractionContextType,
  Locale,
  type REST,
  type RESTPutAPIApplicationCommandsJSONBody,
  Routes,
} from "discord.js";
import type { Logger } from "../../src/util/log.ts";
import { type CommandMenu, type CommandSpec, type DroppedCommand, menuHash } from "../commands.ts";
import type { ChannelStateStore } from "../module.ts";

/** Discord's limits on chat-input commands. */
export const DISCORD_MENU_LIMITS = {
  maxCommands: 100,
  maxDescriptionChars: 100,
  maxOptions: 25,
  maxChoices: 25,
} as const;
const NAME = /^[-_\p{Ll}\p{N}]{1,32}$/u;
const LOCALES = new Set<string>(Object.values(Locale));

const CONTEXTS = { dm: InteractionContextType.BotDM, group: InteractionContextType.Guild } as const;

const tooLong = (text: string) => text.length < 1 || text.length > DISCORD_MENU_LIMITS.maxDescriptionChars;

/**
 * The bulk-overwrite body for `menu`, and what was left out (each with why): a name Discord
 * refuses, a description or an option out of bounds, or past the 100th command. Translations
 * in a language Discord does not know or out of bounds are left out of the command. Pure.
 */
export function discordCommands(menu: readonly CommandSpec[]): {
  body: RESTPutAPIApplicationCommandsJSONBody;
  dropped: DroppedCommand[];
} {
  const dropped: DroppedCommand[] = [];
  const body: RESTPutAPIApplicationCommandsJSONBody = [];
  for (const command of menu) {
    const problem = !NAME.test(command.name)
      ? "its name is not 1–32 lowercase letters, digits, - and _"
      : tooLong(command.description)
        ? `its description has ${command.description.length} characters; Discord takes 1–100`
        : command.arguments.length > DISCORD_MENU_LIMITS.maxOptions
          ? `it has ${command.arguments.length} arguments; Discord takes 25`
          : command.arguments.some((a) => !NAME.test(a.name) || tooLong(a.description))
            ? "an argument's name or description is out of Discord's bounds"
            : null;
    if (problem === null && body.length >= DISCORD_MENU_LIMITS.maxCommands)
      dropped.push({ name: command.name, reason: "past Discord's 100 commands" });
    else if (problem !== null) dropped.push({ name: command.name, reason: problem });
    else body.push(toApplicationCommand(command));
  }
  return { body, dropped };
}

function toApplicationCommand(command: CommandSpec): RESTPutAPIApplicationCommandsJSONBody[number] {
  const localizations = Object.entries(command.descriptions ?? {}).filter(
    ([code, text]) => LOCALES.has(code) && !tooLong(text),
  );
  // Discord wants required options before optional ones; the list gives them in that order.
  const options = command.arguments.map((argument) => ({
    type: ApplicationCommandOptionType.String as const,
    name: argument.name,
    description: argument.description,
    required: argument.required,
    ...(argument.autocomplete ? { autocomplete: true } : {}),
  }));
  return {
    type: ApplicationCommandType.ChatInput,
    name: command.name,
    description: command.description,
    ...(localizations.length > 0 ? { description_localizations: Object.fromEntries(localizations) } : {}),
    ...(options.length > 0 ? { options } : {}),
    contexts: command.places.map((place) => CONTEXTS[place]),
  };
}

/**
 * Up to 25 autocomplete choices from `values` for what the user typed: names starting with it
 * first, then those containing it, each in list order. Pure.
 */
export function autocompleteChoices(
  values: readonly string[],
  typed: string,
): Array<{ name: string; value: string }> {
  const needle = typed.trim().toLowerCase();
  const starts = values.filter((v) => v.toLowerCase().startsWith(needle));
  const contains = values.filter((v) => !starts.includes(v) && v.toLowerCase().includes(needle));
  return [...starts, ...contains]
    .slice(0, DISCORD_MENU_LIMITS.maxChoices)
    .map((value) => ({ name: value.slice(0, 100), value: value.slice(0, 100) }));
}

export interface RegisterDiscordOptions {
  rest: REST;
  applicationId: string;
  /** DISCORD_COMMANDS_GUILD: register in this guild only; absent: globally. */
  guildId: string | undefined;
  menu: CommandMenu;
  /** Where the last registration's hash is kept; absent: the commands are set at every start. */
  state?: ChannelStateStore;
  nowMs: number;
  logger: Logger;
}

/**
 * Overwrites the application's commands when they differ from the stored hash, then stores the
 * new one. Never throws: a failure is logged and the bot runs without a change to its commands.
 */
export async function registerDiscordCommands(options: RegisterDiscordOptions): Promise<void> {
  const { rest, applicationId, guildId, state, logger } = options;
  const { body, dropped } = discordCommands(options.menu.commands);
  const scope = guildId === undefined ? "global" : `guild:${guildId}`;
  if (dropped.length > 0) {
    logger.warn("discord.commands_dropped", {
      dropped,
      hint: "these commands still work typed, but are not in Discord's command list",
    });
  }
  const stateName = `discord:${applicationId}:commands:${scope}`;
  const hash = menuHash(body);
  try {
    if ((await state?.loadChannelState(stateName)) === hash) {
      logger.info("discord.commands_unchanged", { scope });
      return;
    }
    const route =
      guildId === undefined
        ? Routes.applicationCommands(applicationId)
        : Routes.applicationGuildCommands(applicationId, guildId);
    await rest.put(route, { body });
    await state?.saveChannelState(stateName, hash, options.nowMs);
    logger.info("discord.commands_registered", { scope, commands: body.length });
  } catch (error) {
    logger.warn("discord.commands_failed", {
      scope,
      error: error instanceof Error ? error.message : String(error),
      hint:
        guildId === undefined
          ? "the bot runs without updated slash commands; typed commands work, and the next start tries again"
          : "check DISCORD_COMMANDS_GUILD names a server the bot is in (with the applications.commands scope)",
    });
  }
}
