import type { Database } from "bun:sqlite";

/** Current counts for gauges: runs and outbox records by state. Cheap: grouped index scans. */
export function stateCounts(db: Database): { runs: Record<string, number>; outbox: Record<string, number> } {
  const toRecord = (rows: Array<{ state: string; n: number }>) =>
    Object.fromEntries(rows.map((r) => [r.state, r.n]));
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
  };
}
