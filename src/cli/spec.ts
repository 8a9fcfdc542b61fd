/** How a command is declared: its words, arguments, flags and handler. Help and parsing read this. */
import { didYouMean } from "../util/suggest.ts";
import { CliUsageError } from "./usage-error.ts";

export interface OptionSpec {
  type: "string" | "boolean";
  /** Placeholder shown in help for a string option (`--state S`). */
  valueName?: string;
  short?: string;
  description: string;
}

export interface ArgSpec {
  name: string;
  description: string;
}

/** Where the command's output goes and what it may read; injected so tests can run it in-process. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
}

export interface CommandSpec {
  /** `["outbox", "resolve"]`; a single word for top-level commands (`["start"]`). */
  path: readonly string[];
  /** The usage line after `switchboard` (`outbox resolve ID --delivered|--failed [--note N]`). */
  synopsis: string;
  summary: string;
  /** Longer explanation printed by --help. */
  details?: string;
  args: readonly ArgSpec[];
  options: Readonly<Record<string, OptionSpec>>;
  /** Resolves when the command succeeded (exit 0); throws otherwise (see exit-codes.ts). */
  run(command: ParsedCommand, io: CliIo): Promise<void>;
}

export interface GroupSpec {
  name: string;
  summary: string;
}

export const HELP_OPTION: Record<string, OptionSpec> = {
  help: { type: "boolean", short: "h", description: "Show this help." },
};

export const JSON_OPTION: Record<string, OptionSpec> = {
  json: { type: "boolean", description: "Print the result as one JSON document (logs stay on stderr)." },
};

/** Where operator data comes from: the database file, or a running gateway's operator API. */
export const SOURCE_OPTIONS: Record<string, OptionSpec> = {
  db: {
    type: "string",
    valueName: "PATH",
    description:
      "SQLite database file. Default: $SWITCHBOARD_DB, else ./data/switchboard.sqlite (with $SWITCHBOARD_DATABASE_URL set, that PostgreSQL database instead).",
  },
  url: {
    type: "string",
    valueName: "URL",
    description:
      "Call the running gateway's operator API instead of the file (token: $SWITCHBOARD_OPERATOR_TOKEN). Default: $SWITCHBOARD_URL.",
  },
};

export const ACTOR_OPTION: Record<string, OptionSpec> = {
  actor: {
    type: "string",
    valueName: "NAME",
    description:
      "Who you are in the record's history, as operator:NAME. Default: $USER, else $LOGNAME, else cli.",
  },
};

/** A command line parsed against its spec: positionals by position, flags by name, with checks. */
export class ParsedCommand {
  constructor(
    readonly spec: CommandSpec,
    private readonly positionals: readonly string[],
    private readonly values: Readonly<Record<string, string | boolean | undefined>>,
    /** The command's help, for usage errors raised while reading its flags. */
    readonly help: string,
  ) {}

  /** The positional argument at `index` (presence was checked against the spec). */
  arg(index: number): string {
    const value = this.positionals[index];
    if (value === undefined) throw new Error(`${this.spec.path.join(" ")} has no argument ${index}`);
    return value;
  }

  string(name: string): string | undefined {
    const value = this.values[name];
    return typeof value === "string" ? value : undefined;
  }

  flag(name: string): boolean {
    return this.values[name] === true;
  }

  /** The option's value when it is one of `allowed`; a usage error naming the closest otherwise. */
  choice<T extends string>(name: string, allowed: readonly T[]): T | undefined {
    const value = this.string(name);
    if (value === undefined) return undefined;
    if ((allowed as readonly string[]).includes(value)) return value as T;
    throw this.usageError(
      `--${name} '${value}' is not one of ${allowed.join(", ")}.${didYouMean(value, allowed)}`,
    );
  }

  /** The option as an integer within `min..max`; undefined when absent. */
  integer(name: string, range: { min: number; max: number }): number | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!/^-?\d+$/.test(raw) || value < range.min || value > range.max) {
      throw this.usageError(
        `--${name} must be a whole number from ${range.min} to ${range.max}, not '${raw}'.`,
      );
    }
    return value;
  }

  usageError(message: string): CliUsageError {
    return new CliUsageError(message, this.help);
  }
}
