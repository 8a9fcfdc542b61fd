import { SwitchboardError } from "../../errors.ts";
import type { DatabaseCheck } from "../../store/sqlite/operator.ts";

/** The SQLite module, loaded only when a db command runs. */
const sqlite = () => import("../../store/sqlite/operator.ts");

import { fields } from "../format.ts";
import { databasePath, requireDatabaseFile } from "../options.ts";
import { type CommandSpec, type GroupSpec, HELP_OPTION, JSON_OPTION, type OptionSpec } from "../spec.ts";
import { print } from "./shared.ts";

export const DB_GROUP: GroupSpec = { name: "db", summary: "the SQLite database file itself." };

const DB_OPTION: Record<string, OptionSpec> = {
  db: {
    type: "string",
    valueName: "PATH",
    description: "Database file. Default: $SWITCHBOARD_DB, else ./data/switchboard.sqlite.",
  },
};

function describeCheck(check: DatabaseCheck): string {
  const outbox = Object.entries(check.counts.outbox)
    .map(([state, n]) => `${state} ${n}`)
    .join(", ");
  const schema =
    check.schemaVersion === check.expectedVersion
      ? `${check.schemaVersion} (current)`
      : `${check.schemaVersion}, expected ${check.expectedVersion}: run \`switchboard db migrate\`${check.schemaVersion > check.expectedVersion ? " with a newer switchboard" : ""}`;
  return (
    fields([
      ["result", check.ok ? "ok" : "PROBLEMS FOUND"],
      ["schema version", schema],
      ["integrity", check.integrity === "ok" ? "ok" : `${check.integrity.length} problem(s)`],
      ["conversations", String(check.counts.conversations)],
      ["runs", `${check.counts.runs} (${check.counts.activeRuns} active)`],
      ["outbox", outbox],
      ["schedules", String(check.counts.schedules)],
    ]) +
    (check.integrity === "ok"
      ? ""
      : `\nIntegrity problems (restore a backup if they persist):\n${check.integrity.map((p) => `  ${p}`).join("\n")}\n`)
  );
}

export const DB_COMMANDS: CommandSpec[] = [
  {
    path: ["db", "migrate"],
    synopsis: "db migrate [--db PATH] [--json]",
    summary: "Create the database if missing and apply pending schema migrations; prints the schema version.",
    args: [],
    options: { ...DB_OPTION, ...JSON_OPTION, ...HELP_OPTION },
    async run(command, io) {
      const { migrateDatabaseFile } = await sqlite();
      const report = migrateDatabaseFile(databasePath(command, io.env));
      print(command, io, report, (r) =>
        r.fromVersion === r.toVersion
          ? `Database ${r.path} is at schema version ${r.toVersion}; nothing to migrate.\n`
          : `Database ${r.path} is at schema version ${r.toVersion} (was ${r.fromVersion === 0 ? "new" : r.fromVersion}).\n`,
      );
    },
  },
  {
    path: ["db", "backup"],
    synopsis: "db backup PATH [--db PATH] [--json]",
    summary:
      "Write a consistent copy of the database to PATH (safe while the gateway runs; never overwrites).",
    args: [{ name: "PATH", description: "Where to write the copy; must not exist yet." }],
    options: { ...DB_OPTION, ...JSON_OPTION, ...HELP_OPTION },
    async run(command, io) {
      const source = databasePath(command, io.env);
      requireDatabaseFile(source);
      const { backupDatabase, openExistingDatabase } = await sqlite();
      const db = openExistingDatabase(source);
      try {
        const result = backupDatabase(db, command.arg(0));
        print(command, io, result, (r) => `Backed up ${source} to ${r.path} (${r.bytes} bytes).\n`);
      } finally {
        db.close();
      }
    },
  },
  {
    path: ["db", "check"],
    synopsis: "db check [--quick] [--db PATH] [--json]",
    summary:
      "Check the schema version and integrity, and count conversations, runs, outbox records and schedules.",
    details:
      "Exits 0 when everything is ok, 1 when SQLite found integrity problems, 4 when the schema version is not the expected one.",
    args: [],
    options: {
      quick: {
        type: "boolean",
        description: "PRAGMA quick_check instead of the full integrity_check (skips index contents).",
      },
      ...DB_OPTION,
      ...JSON_OPTION,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const path = databasePath(command, io.env);
      requireDatabaseFile(path);
      const { checkDatabase, openExistingDatabase } = await sqlite();
      const db = openExistingDatabase(path);
      try {
        const check = checkDatabase(db, { quick: command.flag("quick") });
        print(command, io, check, describeCheck);
        if (check.integrity !== "ok") {
          throw new Error(
            `${path} failed the integrity check (${check.integrity.length} problem(s) above). Stop the gateway and restore the latest backup.`,
          );
        }
        if (check.schemaVersion !== check.expectedVersion) {
          throw new SwitchboardError(
            "schema_unsupported",
            check.schemaVersion < check.expectedVersion
              ? `${path} is at schema version ${check.schemaVersion}, not ${check.expectedVersion}: run \`switchboard db migrate\`.`
              : `${path} is at schema version ${check.schemaVersion}, newer than this switchboard (${check.expectedVersion}): upgrade switchboard.`,
          );
        }
      } finally {
        db.close();
      }
    },
  },
];
