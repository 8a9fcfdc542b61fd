import type { StoreBackend } from "../backend.ts";
import { watchExternalCommits } from "./external-commits.ts";
import { claimGatewayFile, type GatewayClaim } from "./gateway-claim.ts";
import { openSqliteStores } from "./index.ts";
import { storeGauges } from "./metrics.ts";

/** How soon a gateway notices an operator's change made on the file by another process. */
const EXTERNAL_COMMIT_CHECK_MS = 1000;

/** The embedded default: one SQLite file (created and migrated as needed) for one gateway process. */
export function openSqliteBackend(path: string): StoreBackend {
  const stores = openSqliteStores(path);
  const { db } = stores;
  let claim: GatewayClaim | null = null;
  return {
    engine: "sqlite",
    location: path,
    runtime: stores.runtime,
    state: stores.runtime,
    search: stores.search,
    outbox: stores.outbox,
    schedules: stores.schedules,
    operator: stores.operator,
    // A standby needs PostgreSQL (the configuration refuses it here), so a claimed file refuses.
    becomeActiveGateway: async () => {
      claim ??= await claimGatewayFile(db, path);
    },
    gauges: async () => storeGauges(db),
    ping: async () => {
      db.query("SELECT 1").get();
    },
    announceChange: async () => {},
    watchExternalCommits: (onCommit, onError) =>
      watchExternalCommits(db, { intervalMs: EXTERNAL_COMMIT_CHECK_MS, onCommit, onError }),
    close: async () => {
      claim?.release();
      claim = null;
      stores.close();
    },
  };
}
