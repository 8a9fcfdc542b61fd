import { readFileSync } from "node:fs";

/** A claim not refreshed for this long is a dead gateway's, whatever its pid names now. */
export const STALE_MS = 10_000;

/** What the claims row of a SQLite file says about the gateway working on it. */
export interface Claim {
  pid: number;
  host: string;
  startedAtMs: number;
  heartbeatAtMs: number;
  /** The holder's start time in clock ticks since boot (/proc/<pid>/stat field 22), when known. */
  procStart?: number;
  /** The kernel's boot id when the claim was made: ticks since boot mean nothing across a reboot. */
  bootId?: string;
}

/** What this host can see of a process by its pid. */
export type ProcessSighting =
  | { kind: "absent" }
  | { kind: "zombie" }
  | { kind: "running"; procStart: number }
  /** Exists, but this host has no procfs to say which process it is. */
  | { kind: "exists" };

export interface Here {
  pid: number;
  host: string;
  bootId: string | null;
}

/**
 * Whether a claim's holder still works on the file: `alive` refuses a start, `dead` (or `self`)
 * lets it take the file over, `unknown` means only a heartbeat can tell (another host, no procfs,
 * a claim written before start times were recorded).
 */
export type HolderVerdict = "self" | "alive" | "dead" | "unknown";

export function judgeHolder(
  holder: Claim,
  here: Here,
  nowMs: number,
  sight: (pid: number) => ProcessSighting,
): HolderVerdict {
  if (holder.host === here.host && holder.pid === here.pid) return "self";
  if (nowMs - holder.heartbeatAtMs >= STALE_MS) return "dead";
  if (holder.host !== here.host) return "unknown";
  if (holder.bootId && here.bootId && holder.bootId !== here.bootId) return "dead";
  const seen = sight(holder.pid);
  switch (seen.kind) {
    case "absent":
    case "zombie":
      return "dead";
    case "running":
      if (holder.procStart === undefined) return "unknown";
      // The same pid started at another time is another process that reused the number.
      return seen.procStart === holder.procStart ? "alive" : "dead";
    case "exists":
      return "unknown";
  }
}

/** Looks a pid up in /proc (Linux); without procfs, falls back to signal 0. */
export function sightProcess(pid: number): ProcessSighting {
  const stat = readProcStat(pid);
  if (stat)
    return stat.state === "Z" || stat.state === "X"
      ? { kind: "zombie" }
      : { kind: "running", procStart: stat.start };
  if (hasProcfs()) return { kind: "absent" };
  try {
    process.kill(pid, 0);
    return { kind: "exists" };
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM" ? { kind: "exists" } : { kind: "absent" };
  }
}

/** State and start time of a process from /proc/<pid>/stat, or null when there is no such entry. */
export function readProcStat(pid: number): { state: string; start: number } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may itself hold spaces or parentheses.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  const start = Number(fields[19]);
  if (!state || !Number.isFinite(start)) return null;
  return { state, start };
}

export function readBootId(): string | null {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || null;
  } catch {
    return null;
  }
}

function hasProcfs(): boolean {
  return readProcStat(process.pid) !== null;
}
