/**
 * The leases a chaos run leaves, read from the store once the run settled (the last gateway still
 * running): runs and schedule occurrences that name an owner, and on PostgreSQL the sessions
 * holding the gateway lock. checkLeases (invariants.ts) finds the ones a dead process still holds.
 */
import type { ChaosDatabase } from "./database.ts";

export interface LeaseRow {
  table: "runs" | "schedule_occurrences";
  /** The run id, or `<schedule id>@<slot>`. */
  id: string;
  owner: string;
  state: string;
  /** When the lease ends unless renewed; null: the row names an owner with no expiry. */
  expiresAtMs: number | null;
}

export interface LeaseSnapshot {
  /** When the rows were read (wall clock, the same clock the gateways write). */
  readAtMs: number;
  rows: LeaseRow[];
  /** PostgreSQL: the server sessions holding the gateway lock (the one active gateway's, at most). */
  gatewayLockHolders: string[];
}

const num = (value: number | string | null): number | null => (value === null ? null : Number(value));

export async function readLeases(database: ChaosDatabase): Promise<LeaseSnapshot> {
  const readAtMs = Date.now();
  const runs = await database.read<{
    id: string;
    owner: string | null;
    state: string;
    lease_expires_at_ms: number | string | null;
  }>(
    "SELECT id, owner, state, lease_expires_at_ms FROM runs WHERE owner IS NOT NULL OR lease_expires_at_ms IS NOT NULL",
  );
  const occurrences = await database.read<{
    schedule_id: string;
    scheduled_for_ms: number | string;
    lease_owner: string | null;
    state: string;
    lease_expires_at_ms: number | string | null;
  }>(
    "SELECT schedule_id, scheduled_for_ms, lease_owner, state, lease_expires_at_ms FROM schedule_occurrences WHERE state = 'claimed'",
  );
  const gatewayLockHolders =
    database.engine === "postgres"
      ? (
          await database.read<{ session: string }>(
            `SELECT l.pid::text || '@' || a.backend_start::text AS session
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'advisory' AND l.objid = hashtext('switchboard:gateway')::oid AND l.granted
               AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          )
        ).map((r) => r.session)
      : [];
  return {
    readAtMs,
    rows: [
      ...runs.map(
        (r): LeaseRow => ({
          table: "runs",
          id: r.id,
          owner: r.owner ?? "(none)",
          state: r.state,
          expiresAtMs: num(r.lease_expires_at_ms),
        }),
      ),
      ...occurrences.map(
        (o): LeaseRow => ({
          table: "schedule_occurrences",
          id: `${o.schedule_id}@${o.scheduled_for_ms}`,
          owner: o.lease_owner ?? "(none)",
          state: o.state,
          expiresAtMs: num(o.lease_expires_at_ms),
        }),
      ),
    ],
    gatewayLockHolders,
  };
}
