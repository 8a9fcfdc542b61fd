import type { Database } from "bun:sqlite";
import { latencySummary, type StoreGauges } from "../backend.ts";

/**
 * Migration 21: runs and outbox records counted by state as they change, so a scrape reads a few
 * rows. Counting at scrape time scanned both tables: 0.23 s at 200,000 rows each, during which
 * bun:sqlite (synchronous) held the event loop and every reply in flight waited. A migration
 * that rebuilds `runs` or `outbox` must create these triggers again.
 */
export const STATE_COUNTS_SQL = `
CREATE TABLE state_counts (
  tbl TEXT NOT NULL,
  state TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (tbl, state)
) WITHOUT ROWID;
${countedByState("runs")}
${countedByState("outbox")}
`;

function countedByState(table: "runs" | "outbox"): string {
  const add = (row: "new" | "old", delta: 1 | -1) =>
    `INSERT INTO state_counts (tbl, state, n) VALUES ('${table}', ${row}.state, ${delta})
       ON CONFLICT (tbl, state) DO UPDATE SET n = n + ${delta};`;
  return `
INSERT INTO state_counts (tbl, state, n) SELECT '${table}', state, count(*) FROM ${table} WHERE true GROUP BY state;
CREATE TRIGGER ${table}_counted_insert AFTER INSERT ON ${table} BEGIN
  ${add("new", 1)}
END;
CREATE TRIGGER ${table}_counted_update AFTER UPDATE OF state ON ${table} WHEN old.state IS NOT new.state BEGIN
  ${add("old", -1)}
  ${add("new", 1)}
END;
CREATE TRIGGER ${table}_counted_delete AFTER DELETE ON ${table} BEGIN
  ${add("old", -1)}
END;`;
}

/** Gauges read at scrape time: runs and outbox records by state, delivery latency, ambiguity age. */
export function storeGauges(db: Database): StoreGauges {
  // The newest delivered records by id (time-ordered), read backwards from the primary key:
  // ordering by delivery time sorted every delivered record.
  const latencies = db
    .query(
      `SELECT updated_at_ms - created_at_ms AS ms FROM outbox WHERE state = 'delivered'
       ORDER BY id DESC LIMIT 1000`,
    )
    .all() as Array<{ ms: number }>;
  const counts = db.query("SELECT tbl, state, n FROM state_counts WHERE n <> 0").all() as Array<{
    tbl: "runs" | "outbox";
    state: string;
    n: number;
  }>;
  const byState = (table: "runs" | "outbox") =>
    Object.fromEntries(counts.filter((r) => r.tbl === table).map((r) => [r.state, r.n]));
  // The open-records index holds the ambiguous ones; `state = 'ambiguous'` alone scanned the table.
  const oldest = db
    .query(
      `SELECT MIN(updated_at_ms) AS at FROM outbox
       WHERE state IN ('pending', 'sending', 'ambiguous') AND state = 'ambiguous'`,
    )
    .get() as { at: number | null };
  return {
    runs: byState("runs"),
    outbox: byState("outbox"),
    deliveryLatencyMs: latencySummary(latencies.map((r) => r.ms)),
    oldestAmbiguousSinceMs: oldest.at,
  };
}
