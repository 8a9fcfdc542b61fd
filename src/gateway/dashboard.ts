/**
 * The console's dashboard (`GET /api/dashboard`): one read of what `/metrics` and the store
 * already know. Counts come from the store's gauges, latency from this process's histograms (so
 * they start empty after a restart), usage from the model steps finished since midnight UTC.
 */

import type { Usage } from "../runtime/types.ts";
import type { StoreGauges } from "../store/backend.ts";
import { sumUsage } from "../store/usage.ts";
import type { LatencySnapshot, Quantiles } from "./metrics.ts";
import type { ReadinessCheck } from "./readiness.ts";

export interface Dashboard {
  nowMs: number;
  /** Runs by state now; `failed` counts every failed run kept in the store. */
  runs: { queued: number; inFlight: number; awaitingApproval: number; failed: number };
  outbox: { waiting: number; sending: number; ambiguous: number; failed: number };
  /** When the longest-waiting ambiguous reply became ambiguous; null when none waits. */
  oldestAmbiguousSinceMs: number | null;
  latency: LatencySnapshot & { delivery: Quantiles | null };
  usageToday: { sinceMs: number; steps: number; runs: number; usage: Usage; costComplete: boolean };
  /** The readiness checks: database, each channel, each MCP server. */
  checks: Record<string, ReadinessCheck>;
}

export interface DashboardSources {
  nowMs(): number;
  gauges(): Promise<StoreGauges>;
  latency(): LatencySnapshot;
  readiness(): Promise<{ checks: Record<string, ReadinessCheck> }>;
  stepUsageSince(sinceMs: number): Promise<Array<{ runId: string; usage: Usage }>>;
}

/** Midnight UTC of the day `nowMs` falls in. */
export function startOfUtcDay(nowMs: number): number {
  return nowMs - (nowMs % 86_400_000);
}

export async function readDashboard(sources: DashboardSources): Promise<Dashboard> {
  const nowMs = sources.nowMs();
  const sinceMs = startOfUtcDay(nowMs);
  const [gauges, readiness, steps] = await Promise.all([
    sources.gauges(),
    sources.readiness(),
    sources.stepUsageSince(sinceMs),
  ]);
  const count = (byState: Record<string, number>, ...states: string[]) =>
    states.reduce((sum, state) => sum + (byState[state] ?? 0), 0);
  const total = sumUsage(steps.map((s) => s.usage));
  return {
    nowMs,
    runs: {
      queued: count(gauges.runs, "queued"),
      inFlight: count(gauges.runs, "running", "interrupt_requested"),
      awaitingApproval: count(gauges.runs, "awaiting_approval"),
      failed: count(gauges.runs, "failed"),
    },
    outbox: {
      waiting: count(gauges.outbox, "pending"),
      sending: count(gauges.outbox, "sending"),
      ambiguous: count(gauges.outbox, "ambiguous"),
      failed: count(gauges.outbox, "failed"),
    },
    oldestAmbiguousSinceMs: gauges.oldestAmbiguousSinceMs,
    latency: { ...sources.latency(), delivery: gauges.deliveryLatencyMs },
    usageToday: {
      sinceMs,
      steps: steps.length,
      runs: new Set(steps.map((s) => s.runId)).size,
      usage: total.usage,
      costComplete: total.costComplete,
    },
    checks: readiness.checks,
  };
}
