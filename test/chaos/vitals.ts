/**
 * How the gateway fared under a chaos run, besides the invariants: reply times (a user's post to
 * the platform accepting the answer) and the active gateway's resident memory over time.
 */
import { readFileSync } from "node:fs";
import type { ChaosDatabase } from "./database.ts";

const ANSWER_MARKER = /\ba-([a-z]\d{5})\b/;

export interface ReplyTimes {
  /** Answers delivered whose input the driver posted (the marker names it). */
  count: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

export interface RssSample {
  atMs: number;
  mb: number;
}

/** The value at quantile `q` (0..1) of `sorted` (ascending), nearest rank. */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] ?? null;
}

/**
 * From each delivered record that answers a posted input (`a-<id>`), the time from the post to
 * the `delivered` entry of its history: queueing behind kills, restarts and faults included.
 */
export function replyTimesOf(
  records: ReadonlyArray<{ markdown: string; history: string }>,
  postedAtMs: ReadonlyMap<string, number>,
): ReplyTimes {
  const times: number[] = [];
  for (const record of records) {
    const id = ANSWER_MARKER.exec(record.markdown)?.[1];
    const posted = id === undefined ? undefined : postedAtMs.get(id);
    if (posted === undefined) continue;
    const history = JSON.parse(record.history) as Array<{ action: string; atMs: number }>;
    const delivered = history.find((h) => h.action === "delivered")?.atMs;
    if (delivered !== undefined && delivered >= posted) times.push(delivered - posted);
  }
  times.sort((a, b) => a - b);
  return {
    count: times.length,
    p50Ms: quantile(times, 0.5),
    p99Ms: quantile(times, 0.99),
    maxMs: times.at(-1) ?? null,
  };
}

export async function readReplyTimes(
  database: ChaosDatabase,
  posted: ReadonlyArray<{ id: string; sentAtMs: number }>,
): Promise<ReplyTimes> {
  const records = await database.read<{ markdown: string; history: string }>(
    "SELECT markdown, history FROM outbox WHERE state = 'delivered'",
  );
  return replyTimesOf(records, new Map(posted.map((p) => [p.id, p.sentAtMs])));
}

/** The resident set of process `pid` in MB (Linux /proc), or null when it is gone. */
export function rssMbOf(pid: number): number | null {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8")
      .split("\n")
      .find((l) => l.startsWith("VmRSS:"));
    const kb = line ? Number(line.replace(/[^0-9]/g, "")) : Number.NaN;
    return Number.isFinite(kb) ? Math.round(kb / 1024) : null;
  } catch {
    return null;
  }
}

/** min / median / max of the samples, and a short series (about `points` evenly picked samples). */
export function summarizeRss(samples: readonly RssSample[], startedAtMs: number, points = 8): string {
  if (samples.length === 0) return "no samples";
  const sorted = samples.map((s) => s.mb).sort((a, b) => a - b);
  const step = Math.max(1, Math.ceil(samples.length / points));
  const series = samples
    .filter((_, i) => i % step === 0 || i === samples.length - 1)
    .map((s) => `${Math.round((s.atMs - startedAtMs) / 60_000)}m:${s.mb}`)
    .join(" ");
  return `min ${sorted[0]} / median ${quantile(sorted, 0.5)} / max ${sorted.at(-1)} MB over ${samples.length} samples; ${series}`;
}
