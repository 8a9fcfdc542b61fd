import { dirname, join } from "node:path";
import { type Clock, systemClock } from "../../util/clock.ts";
import type { StoreBackend } from "../backend.ts";
import { DirectoryBlobStore } from "../blob-directory.ts";
import { readBlobReferences, readConversationBlobIds } from "./blob-references.ts";
import { watchExternalCommits } from "./external-commits.ts";
import { claimGatewayFile, type GatewayClaim } from "./gateway-claim.ts";
import { openSqliteStores } from "./index.ts";
import { storeGauges } from "./metrics.ts";
import { migrateSqliteWebSessionIds } from "./web-session-ids.ts";

/** How soon a gateway notices an operator's change made on the file by another process. */
const EXTERNAL_COMMIT_CHECK_MS = 1000;

/** The embedded default: one SQLite file (created and migrated as needed) for one gateway process. */
/**
 * `blobDir`: where media blobs live; default `blobs/` beside the database file. `clock` times the
 * file claim's heartbeat and the external-commit checks. `cacheBytes`: SQLite's page cache
 * (default SQLITE_CACHE_BYTES_DEFAULT).
 */
export function openSqliteBackend(
  path: string,
  blobDir?: string,
  clock: Clock = systemClock,
  cacheBytes?: number,
): StoreBackend {
  const stores = openSqliteStores(path, cacheBytes === undefined ? {} : { cacheBytes });
  const blobs = new DirectoryBlobStore(blobDir ?? join(dirname(path), "blobs"));
  const { db } = stores;
  let claim: GatewayClaim | null = null;
  return {
    engine: "sqlite",
    location: path,
    runtime: stores.runtime,
    state: stores.runtime,
    search: stores.search,
    access: stores.access,
    budgets: stores.budgets,
    slackInstallations: stores.slackInstallations,
    outbox: stores.outbox,
    schedules: stores.schedules,
    operator: stores.operator,
    blobs,
    blobReferences: () => readBlobReferences(db),
    conversationBlobIds: async (conversationId) => readConversationBlobIds(db, conversationId),
    // A standby needs PostgreSQL (the configuration refuses it here), so a claimed file refuses.
    becomeActiveGateway: async () => {
      claim ??= await claimGatewayFile(db, path, clock);
      // Only the active gateway puts blobs, so a temp file now is one a dead process left.
      await blobs.sweepTemp();
    },
    migrateWebSessionIds: async (userIdOf, nowMs) => migrateSqliteWebSessionIds(db, userIdOf, nowMs),
    gauges: async () => storeGauges(db),
    ping: async () => {
      db.query("SELECT 1").get();
    },
    announceChange: async () => {},
    watchExternalCommits: (onCommit, onError) =>
      watchExternalCommits(db, { intervalMs: EXTERNAL_COMMIT_CHECK_MS, onCommit, onError, clock }),
    close: async () => {
      claim?.release();
      claim = null;
      stores.close();
    },
  };
}
