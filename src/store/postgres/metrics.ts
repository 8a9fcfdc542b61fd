import type { SQL } from "bun";
import { latencySummary, type StoreGauges } from "../backend.ts";
import type { Integer } from "../rows.ts";

const byState = (rows: Array<{ state: string; n: Integer }>) =>
  Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));

/** Gauges read at scrape time: runs and outbox records by state, delivery latency, ambiguity age. */
export async function storeGauges(sql: SQL): Promise<StoreGauges> {
  const [runs, outbox, latencies, [oldest]] = await Promise.all([
    sql`SELECT state, count(*) AS n FROM runs GROUP BY state`,
    sql`SELECT state, count(*) AS n FROM outbox GROUP BY state`,
    // The newest delivered records by id (time-ordered), backwards along the primary key; by
    // delivery time it sorted every delivered record.
    sql`SELECT updated_at_ms - created_at_ms AS ms FROM outbox WHERE state = 'delivered'
        ORDER BY id DESC LIMIT 1000`,
    sql`SELECT MIN(updated_at_ms) AS at FROM outbox WHERE state = 'ambiguous'`,
  ]);
  return {
    runs: byState(runs),
    outbox: byState(outbox),
    deliveryLatencyMs: latencySummary((latencies as Array<{ ms: Integer }>).map((r) => Number(r.ms))),
    oldestAmbiguousSinceMs: oldest?.at == null ? null : Number(oldest.at),
  };
}
