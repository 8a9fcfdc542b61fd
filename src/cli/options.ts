/** Reading the options most commands share (--db, --actor) without loading any store code. */
import { existsSync } from "node:fs";
import { SwitchboardError } from "../errors.ts";
import { checkActor, type OperatorActor } from "../operator/validate.ts";
import type { CliIo, ParsedCommand } from "./spec.ts";

export const DEFAULT_DB_PATH = "./data/switchboard.sqlite";

/**
 * `--db`, else $SWITCHBOARD_DB, else ./data/switchboard.sqlite. Refused when
 * SWITCHBOARD_DATABASE_URL says the data is on PostgreSQL, so no command silently works on (or
 * creates) an unrelated SQLite file.
 */
export function databasePath(command: ParsedCommand, env: CliIo["env"]): string {
  const explicit = command.string("db");
  if (explicit !== undefined) return explicit;
  if (env.SWITCHBOARD_DATABASE_URL?.trim()) {
    throw new SwitchboardError(
      "config_invalid",
      `\`switchboard ${command.spec.path.join(" ")}\` works on a SQLite file, but SWITCHBOARD_DATABASE_URL puts the data on PostgreSQL. ` +
        "There, use pg_dump for backups; the gateway migrates the schema when it starts. Pass --db PATH to work on a SQLite file.",
    );
  }
  return env.SWITCHBOARD_DB || DEFAULT_DB_PATH;
}

export function missingDatabase(path: string): SwitchboardError {
  return new SwitchboardError(
    "not_found",
    `No database at ${path}. Start the gateway once (npm start) or run \`switchboard db migrate\`.`,
    { details: { path } },
  );
}

/** Throws the "No database at PATH" error unless the file exists; never creates it. */
export function requireDatabaseFile(path: string): void {
  if (!existsSync(path)) throw missingDatabase(path);
}

/**
 * `--actor NAME` (or `operator:NAME`), else $USER or $LOGNAME, else `cli` (a container or a cron
 * job often sets neither), as `operator:NAME`.
 */
export function actorOf(command: ParsedCommand, env: CliIo["env"]): OperatorActor {
  const given = command.string("actor") ?? (env.USER || env.LOGNAME || "cli");
  const actor = given.startsWith("operator:") ? given : `operator:${given}`;
  try {
    return checkActor(actor);
  } catch (error) {
    throw command.usageError(error instanceof Error ? error.message : String(error));
  }
}
