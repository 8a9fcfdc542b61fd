import { EXIT_CODES_HELP } from "./exit-codes.ts";
import type { CommandSpec, GroupSpec, OptionSpec } from "./spec.ts";

const INDENT = "  ";

function columns(rows: ReadonlyArray<readonly [string, string]>): string[] {
  const width = Math.max(0, ...rows.map(([left]) => left.length)) + 2;
  return rows.map(([left, right]) => `${INDENT}${left.padEnd(width)}${right}`);
}

function optionLabel(name: string, option: OptionSpec): string {
  const long = option.type === "string" ? `--${name} ${option.valueName ?? "VALUE"}` : `--${name}`;
  return option.short ? `-${option.short}, ${long}` : long;
}

/** `Usage:` line and a pointer to the full help, for usage errors at the top level. */
export function shortUsage(): string {
  return "Usage: switchboard <command> [subcommand] [arguments] [options]\nRun 'switchboard --help' for the list of commands.\n";
}

/** `switchboard --help`: every command with its one-line summary, grouped. */
export function topLevelHelp(
  version: string,
  groups: readonly GroupSpec[],
  commands: readonly CommandSpec[],
) {
  const lines = [
    `switchboard ${version}: operate a switchboard gateway and its database.`,
    "",
    "Usage: switchboard <command> [subcommand] [arguments] [options]",
    "",
    "Commands:",
    ...columns(commands.filter((c) => c.path.length === 1).map((c) => [c.path[0]!, c.summary] as const)),
    ...groups.flatMap((group) => [
      "",
      `${group.name[0]!.toUpperCase()}${group.name.slice(1)}: ${group.summary}`,
      ...commands
        .filter((c) => c.path[0] === group.name)
        .flatMap((c) => [`${INDENT}${c.synopsis}`, `${INDENT.repeat(3)}${c.summary}`]),
    ]),
    "",
    "Options:",
    ...columns([
      ["-h, --help", "Show help; works after any command (switchboard outbox resolve --help)."],
      ["--version", "Print the version."],
    ]),
    "",
    "Environment: SWITCHBOARD_DB (database file), SWITCHBOARD_DATABASE_URL (PostgreSQL instead),",
    "SWITCHBOARD_URL and SWITCHBOARD_OPERATOR_TOKEN (use a running gateway's operator API), USER",
    "(default --actor).",
    "",
    EXIT_CODES_HELP,
  ];
  return `${lines.join("\n")}\n`;
}

/** `switchboard outbox --help`: the group's subcommands. */
export function groupHelp(group: GroupSpec, commands: readonly CommandSpec[]): string {
  const members = commands.filter((c) => c.path[0] === group.name);
  const lines = [
    `switchboard ${group.name}: ${group.summary}`,
    "",
    `Usage: switchboard ${group.name} <${members.map((c) => c.path[1]).join("|")}> [arguments] [options]`,
    "",
    "Subcommands:",
    ...members.flatMap((c) => [`${INDENT}${c.synopsis}`, `${INDENT.repeat(3)}${c.summary}`]),
    "",
    `Run 'switchboard ${group.name} <subcommand> --help' for its options.`,
    "",
    EXIT_CODES_HELP,
  ];
  return `${lines.join("\n")}\n`;
}

/** `switchboard outbox resolve --help`: synopsis, arguments, every option, exit codes. */
export function commandHelp(command: CommandSpec): string {
  const lines = [`Usage: switchboard ${command.synopsis}`, "", command.summary];
  if (command.details) lines.push("", command.details);
  if (command.args.length > 0) {
    lines.push("", "Arguments:", ...columns(command.args.map((a) => [a.name, a.description] as const)));
  }
  lines.push(
    "",
    "Options:",
    ...columns(
      Object.entries(command.options).map(([name, o]) => [optionLabel(name, o), o.description] as const),
    ),
    "",
    EXIT_CODES_HELP,
  );
  return `${lines.join("\n")}\n`;
}
