import type { ReservedSQL, SQL } from "bun";
import { SwitchboardError } from "../../errors.ts";
import { type Clock, systemClock, type Timer } from "../../util/clock.ts";
import type { ActiveGatewayOptions } from "../backend.ts";

/** A server session, named by pid and start time: a pid alone can be reused by another session. */
const SESSION_SQL =
  "pg_backend_pid()::text || '@' || (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())::text";
/** Held by the one active gateway process on a database, for as long as its connection lives. */
const TRY_LOCK_SQL = `SELECT pg_try_advisory_lock(hashtext('switchboard:gateway')) AS held, ${SESSION_SQL} AS session`;
/** How often the holder checks the lock's connection, and takes the lock again after it died. */
const CHECK_MS = 2000;
/** A check that takes longer counts as a dead connection. */
const CHECK_TIMEOUT_MS = 1500;
/** How often a standby tries for the lock. */
const STANDBY_POLL_MS = 1000;
/**
 * A standby that gets the lock waits this long before it acts. The lock is free either because
 * the holder died or because only its lock connection did; in the second case the holder notices
 * within one check (plus its timeout) and exits, and must be gone before this one takes over its
 * runs and sends.
 */
const TAKEOVER_DELAY_MS = CHECK_MS + CHECK_TIMEOUT_MS + 500;

export interface GatewayLock {
  release(): void;
}

/**
 * Takes the gateway lock on its own connection. Without `standby` it throws naming the other
 * gateway when the lock is held; with it, it waits until the lock is free (the active gateway
 * stopped or died), then waits out the takeover delay. A session lock dies with its connection (a
 * server restart, a terminated backend), so the holder checks the connection every few seconds
 * and takes the lock again on a new one; `onLost` hears when another gateway took it in between
 * (two gateways now share the database: this one must stop).
 */
export async function takeGatewayLock(
  sql: SQL,
  location: string,
  options: ActiveGatewayOptions,
  clock: Clock = systemClock,
): Promise<GatewayLock> {
  // Server sessions that held the lock for this gateway. A connection whose check timed out goes
  // back to the pool and may hold the lock still: that is not another gateway's.
  const ownSessions = new Set<string>();
  const take = async () => {
    const taken = await tryLock(sql);
    if (taken === null) return null;
    ownSessions.add(taken.session);
    return taken.connection;
  };
  let connection: ReservedSQL | null = await take();
  if (connection === null) {
    if (!options.standby) throw heldElsewhere(location);
    const taken = await waitForLock(sql, options.standby, clock);
    ownSessions.add(taken.session);
    connection = taken.connection;
  }
  let checking = false;
  const timer = clock.every(
    CHECK_MS,
    async () => {
      if (checking) return;
      checking = true;
      try {
        if (connection !== null && (await alive(connection, clock))) return;
        connection?.release();
        connection = null;
        // The server may still be down: the next check tries again.
        connection = await take().catch(() => null);
        if (connection === null && (await lockedByOther(sql, ownSessions))) {
          timer.cancel();
          options.onLost(heldElsewhere(location));
        }
      } finally {
        checking = false;
      }
    },
    { unref: true },
  );
  return {
    release() {
      timer.cancel();
      connection?.release();
      connection = null;
    },
  };
}

async function waitForLock(
  sql: SQL,
  standby: NonNullable<ActiveGatewayOptions["standby"]>,
  clock: Clock,
): Promise<Held> {
  await standby.onWaiting();
  for (;;) {
    await pause(STANDBY_POLL_MS, standby.signal, clock);
    // A server that is down now may be back at the next try.
    const taken = await tryLock(sql).catch(() => null);
    if (taken === null) continue;
    try {
      await pause(TAKEOVER_DELAY_MS, standby.signal, clock);
    } catch (error) {
      // The lock goes with the pool, which the caller closes.
      taken.connection.release();
      throw error;
    }
    return taken;
  }
}

/** Resolves after `ms`, or rejects as soon as `signal` aborts. */
async function pause(ms: number, signal: AbortSignal, clock: Clock): Promise<void> {
  try {
    await clock.sleep(ms, signal);
  } catch {
    throw new SwitchboardError("runtime_closed", "The standby gateway was stopped before it became active.");
  }
}

/** A connection holding the lock, and its server session. */
interface Held {
  connection: ReservedSQL;
  session: string;
}

async function tryLock(sql: SQL): Promise<Held | null> {
  const connection = await sql.reserve();
  try {
    const [row] = (await connection.unsafe(TRY_LOCK_SQL)) as Array<{ held: boolean; session: string }>;
    if (row?.held) return { connection, session: row.session };
  } catch (error) {
    connection.release();
    throw error;
  }
  connection.release();
  return null;
}

async function alive(connection: ReservedSQL, clock: Clock): Promise<boolean> {
  let timer: Timer | undefined;
  try {
    return await Promise.race([
      connection.unsafe("SELECT 1").then(() => true),
      new Promise<boolean>((resolve) => {
        timer = clock.setTimer(CHECK_TIMEOUT_MS, () => resolve(false));
      }),
    ]);
  } catch {
    return false;
  } finally {
    timer?.cancel();
  }
}

/** True when the server answers and says a session other than `ownSessions` holds the lock. */
async function lockedByOther(sql: SQL, ownSessions: ReadonlySet<string>): Promise<boolean> {
  try {
    const rows = (await sql.unsafe(
      `SELECT l.pid::text || '@' || a.backend_start::text AS session
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.objid = hashtext('switchboard:gateway')::oid AND l.granted
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    )) as Array<{ session: string }>;
    return rows.some((row) => !ownSessions.has(row.session));
  } catch {
    return false;
  }
}

function heldElsewhere(location: string): SwitchboardError {
  return new SwitchboardError(
    "config_invalid",
    `Another switchboard gateway is already active on ${location}. Stop the other one, give this one its own database, or set SWITCHBOARD_STANDBY=on to run this one as a standby that takes over when the active gateway stops.`,
  );
}
