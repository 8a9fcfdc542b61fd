/**
 * Where a command's operator data comes from: the database file (default) or a running gateway's
 * operator API (`--url` / SWITCHBOARD_URL). Commands get an OperatorService either way.
 */
import { isSwitchboardError, SwitchboardError } from "../errors.ts";
import { loadFileConfig, modelNamesOf } from "../gateway/config/index.ts";
import type { BudgetSettings } from "../operator/budgets.ts";
import type { OperatorService } from "../operator/types.ts";
import type { SqliteStores } from "../store/sqlite/index.ts";
import { systemClock } from "../util/clock.ts";
import { createApiOperatorService } from "./api-client.ts";
import { databasePath, missingDatabase, requireDatabaseFile } from "./options.ts";
import type { CliIo, ParsedCommand } from "./spec.ts";

/** How long a CLI change waits for the gateway's write lock before giving up. */
const BUSY_TIMEOUT_MS = 5000;

export type OperatorSession =
  | { mode: "database"; path: string; service: OperatorService; close(): void | Promise<void> }
  | { mode: "api"; url: string; service: OperatorService; close(): void | Promise<void> };

/**
 * An explicit flag wins over the environment: `--db` means the file even when SWITCHBOARD_URL is
 * set; `--url` (or SWITCHBOARD_URL) means the API. Both flags at once is a usage error.
 */
export async function openOperatorSession(command: ParsedCommand, io: CliIo): Promise<OperatorSession> {
  const explicitDb = command.string("db");
  const explicitUrl = command.string("url");
  if (explicitDb !== undefined && explicitUrl !== undefined) {
    throw command.usageError(
      "Give either --db PATH (the database file) or --url URL (a running gateway), not both.",
    );
  }
  const url = explicitUrl ?? (explicitDb === undefined ? io.env.SWITCHBOARD_URL || undefined : undefined);
  if (url !== undefined) {
    const token = io.env.SWITCHBOARD_OPERATOR_TOKEN;
    if (!token) {
      throw new SwitchboardError(
        "config_invalid",
        `API mode (${explicitUrl ? "--url" : "SWITCHBOARD_URL"} is set) needs SWITCHBOARD_OPERATOR_TOKEN: set it to the gateway's operator token, or pass --db PATH to work on the database file.`,
      );
    }
    return { mode: "api", url, service: createApiOperatorService({ baseUrl: url, token }), close: () => {} };
  }
  const databaseUrl =
    explicitDb === undefined ? io.env.SWITCHBOARD_DATABASE_URL?.trim() || undefined : undefined;
  if (databaseUrl !== undefined) return openPostgresSession(databaseUrl, io);
  const path = databasePath(command, io.env);
  requireDatabaseFile(path);
  // Store code loads only in database mode; API mode needs none of it.
  const [{ openExistingStores }, { createOperatorService }] = await Promise.all([
    import("../store/sqlite/operator.ts"),
    import("../operator/service.ts"),
  ]);
  let stores: SqliteStores;
  try {
    stores = openExistingStores(path, { busyTimeoutMs: BUSY_TIMEOUT_MS });
  } catch (error) {
    // Deleted between the check and the open.
    if (isSwitchboardError(error, "not_found")) throw missingDatabase(path);
    throw error;
  }
  return {
    mode: "database",
    path,
    service: createOperatorService({
      stores,
      clock: systemClock,
      modelNames: configuredModelNames(io),
      budgets: configuredBudgets(io),
    }),
    close: () => stores.close(),
  };
}

/**
 * SWITCHBOARD_DATABASE_URL: the gateway's PostgreSQL database. A change is announced on the
 * database, so a running gateway acts on it at once.
 */
async function openPostgresSession(url: string, io: CliIo): Promise<OperatorSession> {
  const [{ openPostgresBackend }, { createOperatorService }] = await Promise.all([
    import("../store/postgres/backend.ts"),
    import("../operator/service.ts"),
  ]);
  const backend = await openPostgresBackend(url, { migrate: false });
  const pendingAnnouncements: Promise<void>[] = [];
  // A gateway that misses the announcement still finds the change at its next wake-up.
  const announce = () => {
    pendingAnnouncements.push(backend.announceChange().catch(() => {}));
  };
  return {
    mode: "database",
    path: backend.location,
    service: createOperatorService({
      stores: backend,
      clock: systemClock,
      onOutboxChanged: announce,
      onSchedulesChanged: announce,
      modelNames: configuredModelNames(io),
      budgets: configuredBudgets(io),
    }),
    close: async () => {
      await Promise.all(pendingAnnouncements);
      await backend.close();
    },
  };
}

/** The names in SWITCHBOARD_CONFIG `models`, read when `set-model` first needs them. */
function configuredModelNames(io: CliIo): () => readonly string[] {
  return () => {
    return modelNamesOf(loadFileConfig(io.env));
  };
}

/** SWITCHBOARD_CONFIG `budgets` and SWITCHBOARD_TIMEZONE, read when a `budgets` command first needs them. */
function configuredBudgets(io: CliIo): () => BudgetSettings {
  return () => ({
    budgets: loadFileConfig(io.env).budgets,
    timezone: io.env.SWITCHBOARD_TIMEZONE?.trim() || "UTC",
  });
}
