/** Quantiles of reply latencies, and per-stage medians from switchboard's /metrics histograms. */

/** The `q` quantile of the values (nulls, replies that never came, left out); NaN when none. */
export function quantile(values: (number | null)[], q: number): number {
  const sorted = values.filter((v) => v !== null).sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** Cumulative bucket counts of one stage from Prometheus text. */
function stageBuckets(text: string, stage: string): [number, number][] {
  const pattern = new RegExp(
    `^switchboard_reply_stage_ms_bucket\\{stage="${stage}",le="([^"]+)"\\} (\\d+)$`,
    "gm",
  );
  return [...text.matchAll(pattern)].map((m) => [m[1] === "+Inf" ? Infinity : Number(m[1]), Number(m[2])]);
}

/** The median of the observations between two scrapes, interpolated linearly within its bucket. */
export function stageMedian(before: string, after: string, stage: string): number | null {
  const a = stageBuckets(after, stage);
  const b = new Map(stageBuckets(before, stage));
  const delta = a.map(([le, n]): [number, number] => [le, n - (b.get(le) ?? 0)]);
  const total = delta.at(-1)?.[1] ?? 0;
  if (total === 0) return null;
  let lower = 0;
  let below = 0;
  for (const [le, cumulative] of delta) {
    if (cumulative >= total / 2) {
      if (!Number.isFinite(le)) return lower;
      return lower + ((le - lower) * (total / 2 - below)) / Math.max(1, cumulative - below);
    }
    lower = le;
    below = cumulative;
  }
  return null;
}
