import { SQL } from "bun";
import { isSwitchboardError, SwitchboardError } from "../../errors.ts";
import { type Clock, systemClock } from "../../util/clock.ts";
import type { StoreBackend } from "../backend.ts";
import { createPostgresAccessStore } from "./access.ts";
import { readBlobReferences, readConversationBlobIds } from "./blob-references.ts";
import { PostgresBlobStore } from "./blobs.ts";
import { createPostgresBudgetStore } from "./budgets.ts";
import { type GatewayLock, takeGatewayLock } from "./gateway-lock.ts";
import { storeGauges } from "./metrics.ts";
import { createPostgresOperatorQueries } from "./operator-queries.ts";
import { PostgresOutboxRepository } from "./outbox.ts";
import { PostgresRuntimeStore } from "./runtime-store.ts";
import { createPostgresScheduleRepository } from "./schedules.ts";
import { MIGRATIONS, migrate, schemaVersion } from "./schema.ts";
import { backfillSearchIndex, createPostgresSearch } from "./search.ts";
import { createPostgresSlackInstallations } from "./slack-installations.ts";
import { migratePostgresWebSessionIds } from "./web-session-ids.ts";

/** The channel an operator change is announced on, so a running gateway acts on it at once. */
const CHANGES_CHANNEL = "switchboard_changes";

export interface PostgresOpenOptions {
  /** Create or migrate the schema (the gateway, the terminal chat); else require this build's. */
  migrate: boolean;
  /** Times the gateway lock's checks and the standby's waits. Default the system clock. */
  clock?: Clock;
}

/**
 * Switchboard on a PostgreSQL server: one connection pool for the runtime, outbox and schedules.
 * The operator CLI opens it without migrating, and only a database whose schema is this build's.
 */
export async function openPostgresBackend(
  url: string,
  options: PostgresOpenOptions = { migrate: true },
): Promise<StoreBackend> {
  const sql = new SQL(url, { adapter: "postgres" });
  const location = withoutPassword(url);
  let lock: GatewayLock | null = null;
  try {
    if (options.migrate) {
      await migrate(sql);
      await backfillSearchIndex(sql);
    } else await requireCurrentSchema(sql, location);
  } catch (error) {
    await sql.close();
    if (isSwitchboardError(error)) throw error;
    throw new Error(
      `Cannot open the PostgreSQL database at ${location}: ${(error as Error).message}. ` +
        "Check that the server runs and that SWITCHBOARD_DATABASE_URL names the right host, port, user and database.",
      { cause: error },
    );
  }
  const schedules = createPostgresScheduleRepository(sql);
  const blobs = new PostgresBlobStore(sql);
  const runtime = new PostgresRuntimeStore(sql);
  return {
    engine: "postgres",
    location,
    runtime,
    state: runtime,
    search: createPostgresSearch(sql),
    access: createPostgresAccessStore(sql),
    budgets: createPostgresBudgetStore(sql),
    slackInstallations: createPostgresSlackInstallations(sql),
    outbox: new PostgresOutboxRepository(sql),
    schedules,
    operator: createPostgresOperatorQueries({ sql, schedules }),
    blobs,
    blobReferences: () => readBlobReferences(sql),
    conversationBlobIds: (conversationId) => readConversationBlobIds(sql, conversationId),
    async becomeActiveGateway(gateway) {
      lock ??= await takeGatewayLock(sql, location, gateway, options.clock ?? systemClock);
      // A put in flight on a dead gateway stopped long before this one took over.
      await blobs.sweepStaging(60_000);
    },
    migrateWebSessionIds: (userIdOf, nowMs) => migratePostgresWebSessionIds(sql, userIdOf, nowMs),
    gauges: () => storeGauges(sql),
    async ping() {
      await sql`SELECT 1`;
    },
    async announceChange() {
      await sql.notify(CHANGES_CHANNEL, "");
    },
    watchExternalCommits(onCommit, onError) {
      let stopped = false;
      const listening = sql.listen(CHANGES_CHANNEL, () => onCommit());
      listening.catch(onError);
      return {
        stop() {
          if (stopped) return;
          stopped = true;
          void listening.then((handle) => handle.unlisten()).catch(() => {});
        },
      };
    },
    async close() {
      lock?.release();
      await sql.close();
    },
  };
}

async function requireCurrentSchema(sql: SQL, location: string): Promise<void> {
  const version = await schemaVersion(sql);
  const expected = MIGRATIONS.length;
  if (version === expected) return;
  throw new SwitchboardError(
    "schema_unsupported",
    version === 0
      ? `${location} has no switchboard schema. Start the gateway once with SWITCHBOARD_DATABASE_URL pointing at it; it creates the schema.`
      : version < expected
        ? `${location} has schema version ${version}; this switchboard expects ${expected}. Back it up (pg_dump), then start the gateway once: it migrates on start.`
        : `${location} has schema version ${version}, newer than this switchboard (${expected}). Upgrade switchboard.`,
    { details: { schemaVersion: version, expectedVersion: expected } },
  );
}

function withoutPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}
