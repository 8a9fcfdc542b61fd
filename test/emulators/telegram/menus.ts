/**
 * The bot's command menus (setMyCommands, getMyCommands, deleteMyCommands): one list per scope and
 * language, validated as the Bot API does (at most 100 commands, names 1–32 of [a-z0-9_],
 * descriptions 1–256 characters).
 */
import { type ApiAnswer, apiError, ok, type Params } from "./bot-api.ts";

export interface BotCommand {
  command: string;
  description: string;
}

/** The scope types the emulator understands (the chat-specific ones need a chat_id). */
const SCOPES = new Set([
  "default",
  "all_private_chats",
  "all_group_chats",
  "all_chat_administrators",
  "chat",
  "chat_administrators",
  "chat_member",
]);

const badRequest = (detail: string) => apiError(400, `Bad Request: ${detail}`);

/** `<scope type>[:<chat_id>[:<user_id>]]/<language code or "">`. */
function menuKey(scope: Record<string, unknown>, language: string): string {
  const parts = [scope.type, scope.chat_id, scope.user_id].filter((p) => p !== undefined).join(":");
  return `${parts}/${language}`;
}

export class BotCommandMenus {
  private readonly menus = new Map<string, BotCommand[]>();

  /** The list a scope and language show now; undefined when none was set. */
  get(scopeType: string, language = ""): BotCommand[] | undefined {
    return this.menus.get(menuKey({ type: scopeType }, language));
  }

  /** Every stored list by key (`all_private_chats/de`), for tests and docs. */
  all(): Record<string, BotCommand[]> {
    return Object.fromEntries(this.menus);
  }

  setMyCommands(params: Params): ApiAnswer {
    const where = this.where(params);
    if ("ok" in where) return where;
    const commands = params.commands;
    if (!Array.isArray(commands)) return badRequest('field "commands" must be an Array');
    if (commands.length > 100) return badRequest("BOT_COMMANDS_TOO_MUCH");
    for (const entry of commands as Array<Record<string, unknown>>) {
      const name = entry?.command;
      const description = entry?.description;
      if (typeof name !== "string" || !/^[a-z0-9_]{1,32}$/.test(name))
        return badRequest("BOT_COMMAND_INVALID");
      if (typeof description !== "string" || description.length < 1 || description.length > 256)
        return badRequest("BOT_COMMAND_DESCRIPTION_INVALID");
    }
    this.menus.set(
      where.key,
      (commands as BotCommand[]).map(({ command, description }) => ({ command, description })),
    );
    return ok(true);
  }

  getMyCommands(params: Params): ApiAnswer {
    const where = this.where(params);
    if ("ok" in where) return where;
    return ok(this.menus.get(where.key) ?? []);
  }

  deleteMyCommands(params: Params): ApiAnswer {
    const where = this.where(params);
    if ("ok" in where) return where;
    this.menus.delete(where.key);
    return ok(true);
  }

  private where(params: Params): { key: string } | ApiAnswer {
    const scope = (params.scope ?? { type: "default" }) as Record<string, unknown>;
    if (typeof scope !== "object" || scope === null || !SCOPES.has(String(scope.type)))
      return badRequest("can't parse BotCommandScope");
    const language = params.language_code ?? "";
    if (typeof language !== "string" || (language !== "" && !/^[a-z]{2}$/.test(language)))
      return badRequest("invalid language code specified");
    return { key: menuKey(scope, language) };
  }
}
