/**
 * Prometheus metrics kept in process: counters and fixed-bucket histograms, plus gauges read at
 * scrape time. Label values are channel names, states and reasons: never user content.
 */
import type { UsageRow } from "../budgets/store.ts";
import type { StoreGauges } from "../store/backend.ts";

type Labels = Record<string, string>;

const BUCKETS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000];
/** The reply stages are mostly well under 5 ms, so their buckets start at a quarter millisecond. */
const STAGE_BUCKETS_MS = [
  0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 5, 7.5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000,
];

class Histogram {
  readonly counts: number[];
  sum = 0;
  total = 0;
  constructor(readonly buckets: readonly number[]) {
    this.counts = new Array<number>(buckets.length + 1).fill(0);
  }
  /**
   * The `q` quantile (0..1) estimated as Prometheus' histogram_quantile does: linear within the
   * bucket the rank falls in; above the last bound, that bound. Null before any observation.
   */
  quantile(q: number): number | null {
    if (this.total === 0) return null;
    const rank = q * this.total;
    let cumulative = 0;
    for (let i = 0; i < this.counts.length; i += 1) {
      const inBucket = this.counts[i]!;
      if (cumulative + inBucket >= rank && inBucket > 0) {
        if (i === this.buckets.length) return this.buckets.at(-1)!;
        const lower = i === 0 ? 0 : this.buckets[i - 1]!;
        const upper = this.buckets[i]!;
        return lower + ((upper - lower) * (rank - cumulative)) / inBucket;
      }
      cumulative += inBucket;
    }
    return this.buckets.at(-1)!;
  }
  observe(valueMs: number): void {
    const i = this.buckets.findIndex((b) => valueMs <= b);
    this.counts[i === -1 ? this.buckets.length : i]! += 1;
    this.sum += valueMs;
    this.total += 1;
  }
}

/**
 * The stages of one reply, each timed from the end of the one before:
 * - `receive`: the platform's answer carrying the update arrived (long poll, webhook, socket
 *   event) → ingress got the parsed message;
 * - `admit`: ingress got it → admitted (T1 committed);
 * - `to_model`: admitted → model request sent;
 * - `model`: each model call, request sent → its stream finished;
 * - `to_terminal`: model finished → terminal committed (T2);
 * - `to_send`: T2 → the first send started;
 * - `send`: send started → the platform answered.
 */
export const REPLY_STAGES = [
  "receive",
  "admit",
  "to_model",
  "model",
  "to_terminal",
  "to_send",
  "send",
] as const;
export type ReplyStage = (typeof REPLY_STAGES)[number];

/** p50 and p99 in ms, and how many observations they come from. */
export interface Quantiles {
  p50: number;
  p99: number;
  count: number;
}

/** What this process's latency histograms show so far (since it started). */
export interface LatencySnapshot {
  /** `switchboard_step_latency_ms`: one model step. */
  step: Quantiles | null;
  /** `switchboard_reply_stage_ms` by stage. */
  stages: Record<ReplyStage, Quantiles | null>;
}

export interface Metrics {
  /** `account`: the account's name (`default` for the one the channel's variables configure). */
  inboundAccepted(channel: string, account: string): void;
  inboundDuplicate(channel: string, account: string): void;
  inboundIgnored(channel: string, account: string, reason: string): void;
  stepLatency(ms: number): void;
  scheduleLateness(ms: number): void;
  /** One reply spent `ms` in `stage`. */
  replyStage(stage: ReplyStage, ms: number): void;
  /** The platform answered a delivery 429 (our limiter should never let that happen). */
  outboxRateLimited(channel: string, account: string): void;
  /** A run's lease renewal failed with an error (the database did not answer it). */
  leaseRenewalFailed(): void;
  render(gauges: StoreGauges, process: ProcessGauges): string;
  /** p50/p99 of the step and reply-stage histograms, for the console's dashboard. */
  latency(): LatencySnapshot;
}

/** This process's state at scrape time. */
export interface ProcessGauges {
  /** Conversations holding an executor lane (those with work). */
  lanes: number;
  /** The scrape's time, for ages. */
  nowMs: number;
  /** False while this process waits as a standby for the active gateway to stop. */
  active: boolean;
  /** Configured MCP servers and whether each is connected. */
  mcpServers?: ReadonlyArray<{ name: string; up: boolean }>;
  /** Model usage today and this month (budgets' zone), the heaviest users and conversations. */
  usage?: Record<"user" | "conversation", Record<"day" | "month", readonly UsageRow[]>>;
}

export function createMetrics(): Metrics {
  const counters = new Map<string, { help: string; values: Map<string, number> }>();
  /** By name, then by formatted labels. */
  const histograms = new Map<string, { help: string; byLabels: Map<string, Histogram> }>();
  const count = (name: string, help: string, labels: Labels) => {
    const entry = counters.get(name) ?? { help, values: new Map() };
    counters.set(name, entry);
    const key = formatLabels(labels);
    entry.values.set(key, (entry.values.get(key) ?? 0) + 1);
  };
  const observe = (name: string, help: string, ms: number, labels: Labels = {}, buckets = BUCKETS_MS) => {
    const entry = histograms.get(name) ?? { help, byLabels: new Map() };
    histograms.set(name, entry);
    const key = formatLabels(labels);
    let histogram = entry.byLabels.get(key);
    if (!histogram) {
      histogram = new Histogram(buckets);
      entry.byLabels.set(key, histogram);
    }
    histogram.observe(ms);
  };
  return {
    inboundAccepted: (channel, account) =>
      count(
        "switchboard_inbound_accepted_total",
        "Inbound messages accepted (admitted or handled as a command).",
        { channel, account },
      ),
    inboundDuplicate: (channel, account) =>
      count(
        "switchboard_inbound_duplicates_total",
        "Inbound updates recognised as duplicates (no second run).",
        { channel, account },
      ),
    inboundIgnored: (channel, account, reason) =>
      count("switchboard_inbound_ignored_total", "Inbound updates ignored before the model.", {
        channel,
        account,
        reason,
      }),
    stepLatency: (ms) => observe("switchboard_step_latency_ms", "Duration of one model step.", ms),
    scheduleLateness: (ms) =>
      observe("switchboard_schedule_lateness_ms", "How late schedule occurrences fired.", ms),
    replyStage: (stage, ms) =>
      observe(
        "switchboard_reply_stage_ms",
        "Time a reply spent in each stage: receive (platform answer to ingress), admit (ingress to T1 committed), to_model (to the model request), model (each model call), to_terminal (model finished to T2 committed), to_send (T2 to the send), send (the platform call).",
        ms,
        { stage },
        STAGE_BUCKETS_MS,
      ),
    outboxRateLimited: (channel, account) =>
      count(
        "switchboard_outbox_rate_limited_total",
        "Deliveries the platform answered 429 (the account then waits retry_after). Should stay 0.",
        { channel, account },
      ),
    leaseRenewalFailed: () =>
      count(
        "switchboard_lease_renewal_failures_total",
        "Run lease renewals that failed with an error; a run whose lease expires before one succeeds stops. Alert on a rising rate.",
        {},
      ),
    latency() {
      const quantiles = (histogram: Histogram | undefined): Quantiles | null =>
        histogram && histogram.total > 0
          ? { p50: histogram.quantile(0.5)!, p99: histogram.quantile(0.99)!, count: histogram.total }
          : null;
      const stages = histograms.get("switchboard_reply_stage_ms")?.byLabels;
      return {
        step: quantiles(histograms.get("switchboard_step_latency_ms")?.byLabels.get("")),
        stages: Object.fromEntries(
          REPLY_STAGES.map((stage) => [stage, quantiles(stages?.get(formatLabels({ stage })))]),
        ) as Record<ReplyStage, Quantiles | null>,
      };
    },
    render(gauges, live) {
      const lines: string[] = [];
      const memory = process.memoryUsage();
      for (const [name, help, value] of [
        ["process_resident_memory_bytes", "Resident set size of the gateway process.", memory.rss],
        ["switchboard_js_heap_used_bytes", "JavaScript heap in use.", memory.heapUsed],
        [
          "switchboard_gateway_active",
          "1 when this process is the database's active gateway; 0 while it waits as a standby.",
          live.active ? 1 : 0,
        ],
        [
          "switchboard_runtime_lanes",
          "Conversations with an executor lane (work in this process).",
          live.lanes,
        ],
        [
          "switchboard_outbox_oldest_ambiguous_seconds",
          "How long the oldest ambiguous reply has waited for an operator (0: none). Alert on this.",
          gauges.oldestAmbiguousSinceMs === null
            ? 0
            : Math.max(0, Math.round((live.nowMs - gauges.oldestAmbiguousSinceMs) / 1000)),
        ],
      ] as const) {
        lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name} ${value}`);
      }
      if (live.mcpServers && live.mcpServers.length > 0) {
        const name = "switchboard_mcp_server_up";
        lines.push(
          `# HELP ${name} 1 when the MCP server is connected and its tools are offered; 0 when down.`,
        );
        lines.push(`# TYPE ${name} gauge`);
        for (const server of live.mcpServers)
          lines.push(`${name}${formatLabels({ server: server.name })} ${server.up ? 1 : 0}`);
      }
      if (live.usage) lines.push(...usageLines(live.usage));
      if (gauges.deliveryLatencyMs) {
        const name = "switchboard_delivery_latency_ms";
        const { p50, p99, count } = gauges.deliveryLatencyMs;
        lines.push(
          `# HELP ${name} Time from an answer's outbox record to its delivery, over the last ${count} delivered replies.`,
          `# TYPE ${name} summary`,
          `${name}{quantile="0.5"} ${p50}`,
          `${name}{quantile="0.99"} ${p99}`,
          `${name}_count ${count}`,
        );
      }
      for (const [name, { help, values }] of counters) {
        lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
        for (const [labels, value] of values) lines.push(`${name}${labels} ${value}`);
      }
      for (const [name, help, byState] of [
        ["switchboard_runs", "Runs by state.", gauges.runs],
        ["switchboard_outbox_records", "Outbox records by state.", gauges.outbox],
      ] as const) {
        lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
        for (const [state, value] of Object.entries(byState))
          lines.push(`${name}${formatLabels({ state })} ${value}`);
      }
      for (const [name, { help, byLabels }] of histograms) {
        lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
        for (const [labels, histogram] of byLabels) {
          const withLe = (le: string) => (labels ? `${labels.slice(0, -1)},le="${le}"}` : `{le="${le}"}`);
          let cumulative = 0;
          histogram.buckets.forEach((bound, i) => {
            cumulative += histogram.counts[i]!;
            lines.push(`${name}_bucket${withLe(String(bound))} ${cumulative}`);
          });
          lines.push(
            `${name}_bucket${withLe("+Inf")} ${histogram.total}`,
            `${name}_sum${labels} ${histogram.sum}`,
            `${name}_count${labels} ${histogram.total}`,
          );
        }
      }
      return `${lines.join("\n")}\n`;
    },
  };
}

function formatLabels(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, "_")}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/**
 * Tokens and cost per user and per conversation. A cost is written only when every run in the
 * window reported one (unavailable is not zero); the runs without one are counted instead.
 */
function usageLines(usage: NonNullable<ProcessGauges["usage"]>): string[] {
  const lines: string[] = [];
  const series = [
    [
      "switchboard_usage_tokens",
      "Model tokens (input + output) used, per user or conversation and period (day, month in the budgets' time zone).",
      (r: UsageRow) => r.tokens,
    ],
    [
      "switchboard_usage_cost_usd",
      "Model cost in US dollars, where every run reported one.",
      (r: UsageRow) => (r.costUnknownRuns > 0 ? null : r.costUsd),
    ],
    [
      "switchboard_usage_cost_unknown_runs",
      "Runs whose model reported no cost (their cost is not in switchboard_usage_cost_usd).",
      (r: UsageRow) => r.costUnknownRuns,
    ],
  ] as const;
  for (const [name, help, value] of series) {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const by of ["user", "conversation"] as const) {
      for (const period of ["day", "month"] as const) {
        for (const row of usage[by][period]) {
          const v = value(row);
          if (v !== null) lines.push(`${name}${formatLabels({ [by]: row.key, period })} ${v}`);
        }
      }
    }
  }
  return lines;
}
