import type { ReservedSQL, SQL } from "bun";
import { SwitchboardError } from "../../errors.ts";

/** Held by the one gateway process working on a database, for as long as its connection lives. */
const TRY_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtext('switchboard:gateway')) AS held";
/** How often the lock's connection is checked, and the lock taken again after the connection died. */
const CHECK_MS = 5000;

export interface GatewayLock {
  release(): void;
}

/**
 * Takes the gateway lock on its own connection, or throws naming the other gateway. A session
 * lock dies with its connection (a server restart, a terminated backend), so the connection is
 * checked every few seconds and the lock taken again on a new one; `onLost` hears when another
 * gateway took it in between (two gateways now share the database: this one must stop).
 */
export async function takeGatewayLock(
  sql: SQL,
  location: string,
  onLost: (error: SwitchboardError) => void,
): Promise<GatewayLock> {
  let connection: ReservedSQL | null = await tryLock(sql);
  if (connection === null) throw heldElsewhere(location);
  let checking = false;
  const timer = setInterval(async () => {
    if (checking) return;
    checking = true;
    try {
      if (connection !== null && (await alive(connection))) return;
      connection?.release();
      connection = null;
      // The server may still be down: the next check tries again.
      connection = await tryLock(sql).catch(() => null);
      if (connection === null && (await lockedByOther(sql))) {
        clearInterval(timer);
        onLost(heldElsewhere(location));
      }
    } finally {
      checking = false;
    }
  }, CHECK_MS);
  timer.unref?.();
  return {
    release() {
      clearInterval(timer);
      connection?.release();
      connection = null;
    },
  };
}

async function tryLock(sql: SQL): Promise<ReservedSQL | null> {
  const connection = await sql.reserve();
  try {
    const [row] = (await connection.unsafe(TRY_LOCK_SQL)) as Array<{ held: boolean }>;
    if (row?.held) return connection;
  } catch (error) {
    connection.release();
    throw error;
  }
  connection.release();
  return null;
}

async function alive(connection: ReservedSQL): Promise<boolean> {
  try {
    await connection.unsafe("SELECT 1");
    return true;
  } catch {
    return false;
  }
}

/** True when the server answers and says another session holds the lock. */
async function lockedByOther(sql: SQL): Promise<boolean> {
  try {
    const [row] = (await sql.unsafe(
      "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = hashtext('switchboard:gateway')::oid AND granted",
    )) as Array<{ n: string | number }>;
    return Number(row?.n ?? 0) > 0;
  } catch {
    return false;
  }
}

function heldElsewhere(location: string): SwitchboardError {
  return new SwitchboardError(
    "config_invalid",
    `Another switchboard gateway is already running on ${location}. One gateway process per database is supported for now: stop the other one, or give this one its own database.`,
  );
}
