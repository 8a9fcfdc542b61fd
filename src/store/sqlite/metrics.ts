import type { Database } from "bun:sqlite";
import { latencySummary, type StoreGauges } from "../backend.ts";

const byState = (rows: Array<{ state: string; n: number }>) =>
  Object.fromEntries(rows.map((r) => [r.state, r.n]));

/** Gauges read at scrape time: runs and outbox records by state, delivery latency, ambiguity age. */
export function storeGauges(db: Database): StoreGauges {
  const latencies = db
    .query(
      `SELECT updated_at_ms - created_at_ms AS ms FROM outbox WHERE state = 'delivered'
       ORDER BY updated_at_ms DESC LIMIT 1000`,
    )
    .all() as Array<{ ms: number }>;
  const counts = (table: "runs" | "outbox") =>
    byState(
      db.query(`SELECT state, count(*) AS n FROM ${table} GROUP BY state`).all() as Array<{
        state: string;
        n: number;
      }>,
    );
  const oldest = db.query("SELECT MIN(updated_at_ms) AS at FROM outbox WHERE state = 'ambiguous'").get() as {
    at: number | null;
  };
  return {
    runs: counts("runs"),
    outbox: counts("outbox"),
    deliveryLatencyMs: latencySummary(latencies.map((r) => r.ms)),
    oldestAmbiguousSinceMs: oldest.at,
  };
}
