import type { Database } from "bun:sqlite";
import type { StoreGauges } from "../backend.ts";

/** Gauges read at scrape time: runs and outbox records by state, recent delivery latency. */
export function storeGauges(db: Database): StoreGauges {
  const toRecord = (rows: Array<{ state: string; n: number }>) =>
    Object.fromEntries(rows.map((r) => [r.state, r.n]));
  const latencies = (
    db
      .query(
        `SELECT updated_at_ms - created_at_ms AS ms FROM outbox WHERE state = 'delivered'
         ORDER BY updated_at_ms DESC LIMIT 1000`,
      )
      .all() as Array<{ ms: number }>
  )
    .map((r) => r.ms)
    .sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return {
    runs: toRecord(
      db.query("SELECT state, count(*) AS n FROM runs GROUP BY state").all() as Array<{
        state: string;
        n: number;
      }>,
    ),
    outbox: toRecord(
      db.query("SELECT state, count(*) AS n FROM outbox GROUP BY state").all() as Array<{
        state: string;
        n: number;
      }>,
    ),
    deliveryLatencyMs:
      latencies.length === 0 ? null : { p50: at(0.5), p99: at(0.99), count: latencies.length },
  };
}
