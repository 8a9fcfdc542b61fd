/**
 * Application commands as Discord stores them: a bulk overwrite (PUT) per application, globally
 * or per guild, validated like Discord (at most 100 chat-input commands; names 1–32 of lowercase
 * letters, digits, - and _; descriptions 1–100; at most 25 options with the same rules; required
 * options first). Every accepted overwrite is recorded in order.
 */
import type { SnowflakeGenerator } from "./snowflake.ts";

export interface RegisteredOption {
  name: string;
  description: string;
  type: number;
  required?: boolean;
  autocomplete?: boolean;
}

export interface RegisteredCommand {
  id: string;
  application_id: string;
  guild_id?: string;
  name: string;
  description: string;
  description_localizations?: Record<string, string>;
  options?: RegisteredOption[];
  contexts?: number[];
  type: number;
  version: string;
}

/** One accepted PUT: where (`global` or a guild id) and the list it set. */
export interface CommandRegistration {
  scope: string;
  commands: RegisteredCommand[];
  atMs: number;
}

const NAME = /^[-_\p{Ll}\p{N}]{1,32}$/u;

/** A 50035 body naming the first bad field, or null when the list is valid. */
export function commandListProblem(body: unknown): { field: string; message: string } | null {
  if (!Array.isArray(body)) return { field: "(body)", message: "Expected an array of commands" };
  if (body.length > 100) return { field: "(body)", message: "Must be 100 or fewer in length." };
  for (const [i, raw] of body.entries()) {
    const command = (raw ?? {}) as Record<string, unknown>;
    if (typeof command.name !== "string" || !NAME.test(command.name))
      return { field: `${i}.name`, message: "Command name is invalid" };
    const description = command.description;
    if (typeof description !== "string" || description.length < 1 || description.length > 100)
      return { field: `${i}.description`, message: "Must be between 1 and 100 in length." };
    const options = (command.options ?? []) as Array<Record<string, unknown>>;
    if (options.length > 25) return { field: `${i}.options`, message: "Must be 25 or fewer in length." };
    let optionalSeen = false;
    for (const [j, option] of options.entries()) {
      if (typeof option.name !== "string" || !NAME.test(option.name))
        return { field: `${i}.options.${j}.name`, message: "Command name is invalid" };
      const text = option.description;
      if (typeof text !== "string" || text.length < 1 || text.length > 100)
        return { field: `${i}.options.${j}.description`, message: "Must be between 1 and 100 in length." };
      if (option.required === true && optionalSeen)
        return {
          field: `${i}.options.${j}.required`,
          message: "Required options must be placed before non-required options",
        };
      if (option.required !== true) optionalSeen = true;
    }
  }
  return null;
}

export class ApplicationCommands {
  readonly registrations: CommandRegistration[] = [];
  private readonly sets = new Map<string, RegisteredCommand[]>();

  constructor(
    private readonly ids: SnowflakeGenerator,
    private readonly applicationId: string,
    private readonly now: () => number,
  ) {}

  /** The commands registered for `scope` (`global` or a guild id), or [] when none. */
  current(scope: string): RegisteredCommand[] {
    return this.sets.get(scope) ?? [];
  }

  /** Replaces the list of `scope` (the body was validated); returns it with ids. */
  overwrite(scope: string, body: Array<Record<string, unknown>>): RegisteredCommand[] {
    const previous = this.current(scope);
    const commands = body.map((command) => ({
      ...(command as unknown as RegisteredCommand),
      id: previous.find((p) => p.name === command.name)?.id ?? this.ids.next(),
      application_id: this.applicationId,
      ...(scope === "global" ? {} : { guild_id: scope }),
      type: typeof command.type === "number" ? command.type : 1,
      version: this.ids.next(),
    }));
    this.sets.set(scope, commands);
    this.registrations.push({ scope, commands, atMs: this.now() });
    return commands;
  }

  /** The registered command `name` a user can run in `guildId` (guild commands first), if any. */
  find(name: string, guildId: string | undefined): RegisteredCommand | undefined {
    const inGuild = guildId === undefined ? undefined : this.current(guildId).find((c) => c.name === name);
    return inGuild ?? this.current("global").find((c) => c.name === name);
  }
}
