/** Read-only looks into a running gateway's SQLite file, and small checks shared by these suites. */
import { Database } from "bun:sqlite";

export interface StoredCounts {
  runs: number;
  messages: number;
  receipts: number;
}

/** Row counts of the tables a message that reached the agent would have written to. */
export function storedCounts(dbPath: string): StoredCounts {
  const db = new Database(dbPath, { readonly: true });
  try {
    db.exec("PRAGMA busy_timeout = 2000");
    const count = (table: string) =>
      (db.query(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    return { runs: count("runs"), messages: count("messages"), receipts: count("ingress_receipts") };
  } finally {
    db.close();
  }
}

/** GET /healthz answers 200. */
export async function isHealthy(gatewayUrl: string): Promise<boolean> {
  const response = await fetch(`${gatewayUrl}/healthz`);
  await response.body?.cancel();
  return response.status === 200;
}
