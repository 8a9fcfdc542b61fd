import type { Database } from "bun:sqlite";
import { hostname } from "node:os";
import { SwitchboardError } from "../../errors.ts";

/** How often the gateway working on a file refreshes its claim. */
const HEARTBEAT_MS = 2000;
/** A claim not refreshed for this long is a dead gateway's, even if its pid now names another process. */
const STALE_MS = 10_000;
const CLAIM_KEY = "gateway";

interface Claim {
  pid: number;
  host: string;
  startedAtMs: number;
  heartbeatAtMs: number;
}

export interface GatewayClaim {
  release(): void;
}

/**
 * Claims a SQLite file for this gateway process, or throws naming the gateway already working on
 * it. At start a gateway takes over every send and lease a dead process left, which would break a
 * live one's. The claim is a row in switchboard's meta table, refreshed every few seconds; it is
 * another gateway's while that process lives (checked by pid on the same host) and has refreshed
 * it recently, so a SIGKILLed gateway never blocks the next start.
 */
export function claimGatewayFile(db: Database, path: string): GatewayClaim {
  const write = db.query(
    `INSERT INTO switchboard_meta (key, value) VALUES (?, ?)
     ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
  );
  const startedAtMs = Date.now();
  const claim = (nowMs: number) =>
    JSON.stringify({ pid: process.pid, host: hostname(), startedAtMs, heartbeatAtMs: nowMs } satisfies Claim);
  db.transaction(() => {
    const row = db.query("SELECT value FROM switchboard_meta WHERE key = ?").get(CLAIM_KEY) as {
      value: string;
    } | null;
    const holder = row ? parseClaim(row.value) : null;
    if (holder && holdsFile(holder, startedAtMs)) {
      throw new SwitchboardError(
        "config_invalid",
        `Another switchboard gateway (pid ${holder.pid} on ${holder.host}) is already running on ${path}. ` +
          "Stop it first: one gateway process works on a SQLite file. For a standby that takes over when the active gateway stops, keep the data on PostgreSQL (SWITCHBOARD_DATABASE_URL) and set SWITCHBOARD_STANDBY=on.",
      );
    }
    write.run(CLAIM_KEY, claim(startedAtMs));
  }).immediate();
  const timer = setInterval(() => {
    try {
      write.run(CLAIM_KEY, claim(Date.now()));
    } catch {
      // Another process holds the write lock beyond the busy timeout: the next beat tries again.
    }
  }, HEARTBEAT_MS);
  timer.unref?.();
  return {
    release() {
      clearInterval(timer);
      db.query("DELETE FROM switchboard_meta WHERE key = ? AND json_extract(value, '$.pid') = ?").run(
        CLAIM_KEY,
        process.pid,
      );
    },
  };
}

function holdsFile(holder: Claim, nowMs: number): boolean {
  if (holder.pid === process.pid && holder.host === hostname()) return false;
  if (nowMs - holder.heartbeatAtMs >= STALE_MS) return false;
  // On another host (a shared disk) only the heartbeat can tell.
  return holder.host !== hostname() || processExists(holder.pid);
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function parseClaim(value: string): Claim | null {
  try {
    const parsed = JSON.parse(value) as Partial<Claim>;
    if (
      typeof parsed.pid === "number" &&
      typeof parsed.host === "string" &&
      typeof parsed.heartbeatAtMs === "number" &&
      typeof parsed.startedAtMs === "number"
    )
      return parsed as Claim;
  } catch {
    // Unreadable: nobody's claim.
  }
  return null;
}
