/** Turns an argument vector into one command's run and an exit code. No process globals here. */
import { parseArgs } from "node:util";
import packageJson from "../../package.json" with { type: "json" };
import { isSwitchboardError } from "../errors.ts";
import { didYouMean } from "../util/suggest.ts";
import { ACCESS_COMMANDS, ACCESS_GROUP } from "./commands/access.ts";
import { APPROVALS_COMMANDS, APPROVALS_GROUP } from "./commands/approvals.ts";
import { BUDGETS_COMMANDS, BUDGETS_GROUP } from "./commands/budgets.ts";
import { CONFIG_COMMANDS, CONFIG_GROUP } from "./commands/config.ts";
import { CONVERSATIONS_COMMANDS, CONVERSATIONS_GROUP } from "./commands/conversations.ts";
import { DB_COMMANDS, DB_GROUP } from "./commands/db.ts";
import { OUTBOX_COMMANDS, OUTBOX_GROUP } from "./commands/outbox.ts";
import { PROCESS_COMMANDS } from "./commands/process.ts";
import { RUNS_COMMANDS, RUNS_GROUP } from "./commands/runs.ts";
import { SCHEDULES_COMMANDS, SCHEDULES_GROUP } from "./commands/schedules.ts";
import { SEARCH_COMMANDS } from "./commands/search.ts";
import { EXIT, type ExitCode, exitCodeFor } from "./exit-codes.ts";
import { commandHelp, groupHelp, shortUsage, topLevelHelp } from "./help.ts";
import { type CliIo, type CommandSpec, type GroupSpec, type OptionSpec, ParsedCommand } from "./spec.ts";
import { CliUsageError } from "./usage-error.ts";

export const VERSION = packageJson.version;

export const GROUPS: readonly GroupSpec[] = [
  OUTBOX_GROUP,
  APPROVALS_GROUP,
  ACCESS_GROUP,
  BUDGETS_GROUP,
  SCHEDULES_GROUP,
  RUNS_GROUP,
  CONVERSATIONS_GROUP,
  DB_GROUP,
  CONFIG_GROUP,
];

export const COMMANDS: readonly CommandSpec[] = [
  ...PROCESS_COMMANDS,
  ...OUTBOX_COMMANDS,
  ...APPROVALS_COMMANDS,
  ...ACCESS_COMMANDS,
  ...BUDGETS_COMMANDS,
  ...SCHEDULES_COMMANDS,
  ...RUNS_COMMANDS,
  ...CONVERSATIONS_COMMANDS,
  ...SEARCH_COMMANDS,
  ...DB_COMMANDS,
  ...CONFIG_COMMANDS,
];

const TOP_WORDS = [
  ...COMMANDS.filter((c) => c.path.length === 1).map((c) => c.path[0]!),
  ...GROUPS.map((g) => g.name),
];
const isHelp = (arg: string | undefined) => arg === "--help" || arg === "-h";

/** Runs `switchboard <argv>`; resolves with the exit code after the command has finished. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  const topHelp = () => topLevelHelp(VERSION, GROUPS, COMMANDS);
  try {
    const [first, ...rest] = argv;
    if (first === undefined) throw new CliUsageError("Missing command.", shortUsage());
    if (isHelp(first)) return done(io, topHelp());
    if (first === "--version") return done(io, `switchboard ${VERSION}\n`);
    if (first.startsWith("-")) {
      throw new CliUsageError(
        `Unknown option '${first}' before the command.${didYouMean(first, ["--help", "--version"])}`,
        shortUsage(),
      );
    }
    const group = GROUPS.find((g) => g.name === first);
    if (group) return await runGroup(group, rest, io);
    const command = COMMANDS.find((c) => c.path.length === 1 && c.path[0] === first);
    if (!command) {
      throw new CliUsageError(`Unknown command '${first}'.${didYouMean(first, TOP_WORDS)}`, shortUsage());
    }
    return await runCommand(command, rest, io);
  } catch (error) {
    return fail(io, error);
  }
}

function done(io: CliIo, text: string): ExitCode {
  io.stdout(text);
  return EXIT.ok;
}

async function runGroup(group: GroupSpec, argv: readonly string[], io: CliIo): Promise<ExitCode> {
  const members = COMMANDS.filter((c) => c.path[0] === group.name);
  const names = members.map((c) => c.path[1]!);
  const [sub, ...rest] = argv;
  if (isHelp(sub)) return done(io, groupHelp(group, COMMANDS));
  if (sub === undefined || sub.startsWith("-")) {
    throw new CliUsageError(
      `'switchboard ${group.name}' needs a subcommand: ${names.join(", ")}.`,
      groupHelp(group, COMMANDS),
    );
  }
  const command = members.find((c) => c.path[1] === sub);
  if (!command) {
    throw new CliUsageError(
      `Unknown subcommand '${sub}' of '${group.name}'.${didYouMean(sub, names)}`,
      groupHelp(group, COMMANDS),
    );
  }
  return runCommand(command, rest, io);
}

async function runCommand(spec: CommandSpec, argv: readonly string[], io: CliIo): Promise<ExitCode> {
  const help = commandHelp(spec);
  // --help wins over anything else on the line, even a flag this command does not know.
  if (argv.some(isHelp)) return done(io, help);
  const { values, positionals } = parseCommandLine(spec, argv, help);
  const name = `'switchboard ${spec.path.join(" ")}'`;
  if (positionals.length < spec.args.length) {
    const missing = spec.args[positionals.length]!;
    throw new CliUsageError(`${name} needs ${missing.name}: ${missing.description}`, help);
  }
  if (positionals.length > spec.args.length) {
    throw new CliUsageError(`Unexpected argument '${positionals[spec.args.length]}' for ${name}.`, help);
  }
  await spec.run(new ParsedCommand(spec, positionals, values, help), io);
  return EXIT.ok;
}

function parseCommandLine(spec: CommandSpec, argv: readonly string[], help: string) {
  const options = Object.fromEntries(
    Object.entries(spec.options).map(([name, option]: [string, OptionSpec]) => [
      name,
      option.short ? { type: option.type, short: option.short } : { type: option.type },
    ]),
  );
  try {
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : String(error);
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      const flag = /'(-[^']*)'/.exec(message)?.[1] ?? "?";
      const known = Object.keys(spec.options).map((n) => `--${n}`);
      const bare = flag.split("=")[0]!;
      throw new CliUsageError(
        `Unknown option '${bare}' for 'switchboard ${spec.path.join(" ")}'.${didYouMean(bare, known)}`,
        help,
      );
    }
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" || code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
      throw new CliUsageError(message.split("\n")[0]!, help);
    }
    throw error;
  }
}

/** One message on stderr (plus the usage for usage errors) and the matching exit code. */
function fail(io: CliIo, error: unknown): ExitCode {
  if (error instanceof CliUsageError) {
    io.stderr(`Error: ${error.message}\n\n${error.usage}`);
  } else if (isSwitchboardError(error)) {
    io.stderr(`Error: ${error.message}\n`);
  } else {
    const detail = io.env.SWITCHBOARD_DEBUG && error instanceof Error ? `\n${error.stack}` : "";
    io.stderr(`Error: ${error instanceof Error ? error.message : String(error)}${detail}\n`);
  }
  return exitCodeFor(error);
}
