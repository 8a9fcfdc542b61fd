import type { Database } from "bun:sqlite";
import { hostname } from "node:os";
import { SwitchboardError } from "../../errors.ts";
import { type Clock, systemClock } from "../../util/clock.ts";
import {
  type Claim,
  type HolderVerdict,
  judgeHolder,
  readBootId,
  readProcStat,
  sightProcess,
} from "./claim-holder.ts";

/** How often the gateway working on a file refreshes its claim. */
const HEARTBEAT_MS = 2000;
/** How often a start that cannot judge the holder looks at its heartbeat again. */
const RECHECK_MS = 250;
const CLAIM_KEY = "gateway";

export interface GatewayClaim {
  release(): void;
}

/**
 * Claims a SQLite file for this gateway process, or throws naming the gateway already working on
 * it. At start a gateway takes over every send and lease a dead process left, which would break a
 * live one's. The claim is a row in switchboard's meta table, refreshed every few seconds. Its
 * holder is judged by pid, process start time and state (a zombie is dead, a reused pid is not
 * the holder); when it cannot be judged (another host, no procfs), the start waits to see whether
 * the heartbeat moves on (alive) or goes stale (dead), so a killed gateway never blocks a restart.
 */
export async function claimGatewayFile(
  db: Database,
  path: string,
  clock: Clock = systemClock,
): Promise<GatewayClaim> {
  const write = db.query(
    `INSERT INTO switchboard_meta (key, value) VALUES (?, ?)
     ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
  );
  const here = { pid: process.pid, host: hostname(), bootId: readBootId() };
  const startedAtMs = Date.now();
  const procStart = readProcStat(process.pid)?.start;
  const claim = (nowMs: number) =>
    JSON.stringify({
      ...here,
      bootId: here.bootId ?? undefined,
      startedAtMs,
      heartbeatAtMs: nowMs,
      procStart,
    } satisfies Claim);
  // The heartbeat of an unjudgeable holder as first seen: a later, different one proves it alive.
  let firstBeat: number | null = null;
  for (;;) {
    const outcome = db
      .transaction((): { taken: true } | { taken: false; holder: Claim; verdict: HolderVerdict } => {
        const row = db.query("SELECT value FROM switchboard_meta WHERE key = ?").get(CLAIM_KEY) as {
          value: string;
        } | null;
        const holder = row ? parseClaim(row.value) : null;
        const verdict = holder ? judgeHolder(holder, here, Date.now(), sightProcess) : "dead";
        if (!holder || verdict === "dead" || verdict === "self") {
          write.run(CLAIM_KEY, claim(Date.now()));
          return { taken: true };
        }
        return { taken: false, holder, verdict };
      })
      .immediate();
    if (outcome.taken) break;
    const { holder, verdict } = outcome;
    firstBeat ??= holder.heartbeatAtMs;
    if (verdict === "alive" || holder.heartbeatAtMs !== firstBeat) throw fileTaken(holder, path);
    await clock.sleep(RECHECK_MS);
  }
  const timer = clock.every(
    HEARTBEAT_MS,
    () => {
      try {
        write.run(CLAIM_KEY, claim(Date.now()));
      } catch {
        // Another process holds the write lock beyond the busy timeout: the next beat tries again.
      }
    },
    { unref: true },
  );
  return {
    release() {
      timer.cancel();
      db.query("DELETE FROM switchboard_meta WHERE key = ? AND json_extract(value, '$.pid') = ?").run(
        CLAIM_KEY,
        process.pid,
      );
    },
  };
}

function fileTaken(holder: Claim, path: string): SwitchboardError {
  return new SwitchboardError(
    "config_invalid",
    `Another switchboard gateway (pid ${holder.pid} on ${holder.host}) is already running on ${path}. ` +
      "Stop it first: one gateway process works on a SQLite file. For a standby that takes over when the active gateway stops, keep the data on PostgreSQL (SWITCHBOARD_DATABASE_URL) and set SWITCHBOARD_STANDBY=on.",
  );
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
