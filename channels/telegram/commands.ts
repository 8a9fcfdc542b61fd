/**
 * The bot's command menu on Telegram: one setMyCommands per scope (private chats, groups) and per
 * language a description is given in, within the Bot API's limits, set at start only when it
 * differs from what the last start set (a hash kept in the gateway's database).
 */
import type { Api } from "grammy";
import type { BotCommand, BotCommandScope, LanguageCode } from "grammy/types";
import { type CommandMenu, type CommandPlace, type DroppedCommand, menuHash } from "../commands.ts";
import type { ChannelStateStore } from "../module.ts";
import type { GrammySignal } from "./deadline.ts";
import type { TelegramEventSink } from "./events.ts";

/** The Bot API's limits on one menu. */
export const TELEGRAM_MENU_LIMITS = { maxCommands: 100, maxDescriptionChars: 256 } as const;
const NAME = /^[a-z0-9_]{1,32}$/;

const SCOPES: Record<CommandPlace, "all_private_chats" | "all_group_chats"> = {
  dm: "all_private_chats",
  group: "all_group_chats",
};

/** One setMyCommands call: a scope, a language ("" for every other language) and its list. */
export interface TelegramMenuCall {
  scope: "all_private_chats" | "all_group_chats";
  languageCode: string;
  commands: BotCommand[];
}

const descriptionProblem = (text: string) =>
  text.length < 1 || text.length > TELEGRAM_MENU_LIMITS.maxDescriptionChars
    ? `its description has ${text.length} characters; Telegram takes 1–${TELEGRAM_MENU_LIMITS.maxDescriptionChars}`
    : null;

/**
 * The calls that set `menu` on Telegram (none for a scope with no command), and the commands left out (each once, with why): a name
 * Telegram refuses, a description out of bounds, or past the 100th command of a scope. A
 * translation out of bounds falls back to the default description. Pure.
 */
export function telegramMenu(menu: CommandMenu["commands"]): {
  calls: TelegramMenuCall[];
  dropped: DroppedCommand[];
} {
  const dropped = new Map<string, string>();
  const valid = menu.filter((command) => {
    const problem = !NAME.test(command.name)
      ? "its name is not 1–32 of a-z, 0-9 and _"
      : descriptionProblem(command.description);
    if (problem !== null) dropped.set(command.name, problem);
    return problem === null;
  });
  // Telegram's language_code is a two-letter ISO 639-1 code: "pt-BR" is registered as "pt".
  const languages = [
    ...new Set(
      valid.flatMap((c) => Object.keys(c.descriptions ?? {}).map((code) => code.slice(0, 2).toLowerCase())),
    ),
  ].filter((code) => /^[a-z]{2}$/.test(code));
  const calls: TelegramMenuCall[] = [];
  for (const place of ["dm", "group"] as const) {
    const here = valid.filter((c) => c.places.includes(place));
    for (const command of here.slice(TELEGRAM_MENU_LIMITS.maxCommands))
      dropped.set(command.name, `past Telegram's ${TELEGRAM_MENU_LIMITS.maxCommands} commands per menu`);
    const kept = here.slice(0, TELEGRAM_MENU_LIMITS.maxCommands);
    if (kept.length === 0) continue;
    for (const languageCode of ["", ...languages]) {
      calls.push({
        scope: SCOPES[place],
        languageCode,
        commands: kept.map((c) => {
          const translated = Object.entries(c.descriptions ?? {}).find(
            ([code]) => code.slice(0, 2).toLowerCase() === languageCode,
          )?.[1];
          const description =
            translated !== undefined && descriptionProblem(translated) === null ? translated : c.description;
          return { command: c.name, description };
        }),
      });
    }
  }
  return { calls, dropped: [...dropped].map(([name, reason]) => ({ name, reason })) };
}

/** What the last successful registration set, kept in the channel state. */
interface Registered {
  hash: string;
  /** `<scope>/<language>` of every list set, so a language no longer given is deleted. */
  keys: string[];
}

const keyOf = (call: Pick<TelegramMenuCall, "scope" | "languageCode">) =>
  `${call.scope}/${call.languageCode}`;

export interface RegisterOptions {
  api: Api;
  menu: CommandMenu;
  /** Where the last registration's hash is kept; absent: the menu is set at every start. */
  state?: ChannelStateStore;
  /** The channel-state name, per bot (`telegram:<bot id>:commands`). */
  stateName: string;
  nowMs: number;
  call<T>(method: string, run: (signal: GrammySignal) => Promise<T>): Promise<T>;
  onEvent: TelegramEventSink;
}

/**
 * Sets the menu when it differs from the stored hash, then stores the new one. Never throws: a
 * failure is reported (`commands_failed`) and the bot runs without a menu change.
 */
export async function registerTelegramMenu(options: RegisterOptions): Promise<void> {
  const { api, state, onEvent } = options;
  const { calls, dropped } = telegramMenu(options.menu.commands);
  if (dropped.length > 0) {
    onEvent({
      kind: "commands_dropped",
      dropped,
      hint: "these commands still work typed, but are not in Telegram's menu",
    });
  }
  const hash = menuHash(calls);
  try {
    const stored = await state?.loadChannelState(options.stateName);
    const previous = stored ? (JSON.parse(stored) as Registered) : null;
    if (previous?.hash === hash) {
      onEvent({ kind: "commands_unchanged" });
      return;
    }
    const keys = calls.map(keyOf);
    for (const call of calls) {
      const scope: BotCommandScope = { type: call.scope };
      await options.call("setMyCommands", (signal) =>
        api.setMyCommands(
          call.commands,
          {
            scope,
            ...(call.languageCode === "" ? {} : { language_code: call.languageCode as LanguageCode }),
          },
          signal,
        ),
      );
    }
    const gone = (previous?.keys ?? []).filter((key) => !keys.includes(key));
    for (const key of gone) {
      const [scope, languageCode] = key.split("/") as [TelegramMenuCall["scope"], string];
      await options.call("deleteMyCommands", (signal) =>
        api.deleteMyCommands(
          {
            scope: { type: scope },
            ...(languageCode === "" ? {} : { language_code: languageCode as LanguageCode }),
          },
          signal,
        ),
      );
    }
    await state?.saveChannelState(
      options.stateName,
      JSON.stringify({ hash, keys } satisfies Registered),
      options.nowMs,
    );
    onEvent({ kind: "commands_registered", calls: calls.length + gone.length });
  } catch (error) {
    onEvent({
      kind: "commands_failed",
      error: error instanceof Error ? error.message : String(error),
      hint: "the bot runs without an updated command menu; typed commands work, and the next start tries again",
    });
  }
}
