import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { readDashboard, startOfUtcDay } from "../../src/gateway/dashboard.ts";
import { createMetrics } from "../../src/gateway/metrics.ts";
import { storeGauges } from "../../src/store/sqlite/metrics.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";

describe("latency quantiles from the histograms", () => {
  test("p50 and p99 interpolate within the bucket, as histogram_quantile does; none before any observation", () => {
    const metrics = createMetrics();
    expect(metrics.latency().step).toBeNull();
    expect(metrics.latency().stages.send).toBeNull();
    // 100 sends: 98 in the 2-3 ms bucket, 2 in the 250-500 ms bucket.
    for (let i = 0; i < 98; i += 1) metrics.replyStage("send", 2.5);
    metrics.replyStage("send", 400);
    metrics.replyStage("send", 400);
    const send = metrics.latency().stages.send!;
    expect(send.count).toBe(100);
    expect(send.p50).toBeCloseTo(2 + (1 * 50) / 98, 5);
    expect(send.p99).toBeCloseTo(250 + (250 * 1) / 2, 5);
    expect(metrics.latency().stages.admit).toBeNull();
    // Above the last bound: the last bound (the histogram knows no more).
    metrics.stepLatency(120_000);
    expect(metrics.latency().step).toEqual({ p50: 60_000, p99: 60_000, count: 1 });
  });
});

describe("readDashboard", () => {
  let dir: ReturnType<typeof tempDir>;
  let seed: Seed;
  beforeEach(async () => {
    dir = tempDir("switchboard-dashboard-");
    seed = await seedDatabase(join(dir.path, "s.sqlite"));
  });
  afterEach(() => {
    seed.stores.close();
    dir.cleanup();
  });

  test("counts runs and replies from the store, usage of today's steps, and readiness as given", async () => {
    const nowMs = seed.clock.now();
    // One step yesterday (not counted) and two today, on the queued run.
    const run = (await seed.stores.runtime.acquireRun({
      runId: seed.queuedRunId,
      owner: "t",
      nowMs,
      leaseMs: 60_000,
    }))!;
    const step = (n: number, atMs: number, usage: object) =>
      seed.stores.runtime.checkpoint({
        fence: run.fence,
        assistantParts: [{ type: "text", text: `step ${n}` }],
        step: {
          step: n,
          model: "m",
          finishReason: "tool-calls",
          usage,
          startedAtMs: atMs - 10,
          finishedAtMs: atMs,
        },
        joinedInputIds: [],
        nowMs,
      });
    await step(0, startOfUtcDay(nowMs) - 1, { inputTokens: 1000, outputTokens: 1000, costUsd: 1 });
    await step(1, nowMs, { inputTokens: 10, outputTokens: 5, costUsd: 0.01 });
    await step(2, nowMs, { inputTokens: 20, outputTokens: 7, costUsd: 0.02 });
    const metrics = createMetrics();
    metrics.replyStage("to_send", 3);
    const dashboard = await readDashboard({
      nowMs: () => nowMs,
      gauges: async () => storeGauges(seed.stores.db),
      latency: () => metrics.latency(),
      readiness: async () => ({
        checks: { database: { ok: true }, "mcp:notes": { ok: false, degraded: true, detail: "down" } },
      }),
      stepUsageSince: (sinceMs) => seed.stores.operator.stepUsageSince(sinceMs),
    });
    expect(dashboard.runs).toEqual({ queued: 0, inFlight: 1, awaitingApproval: 0, failed: 0 });
    expect(dashboard.outbox).toEqual({ waiting: 1, sending: 0, ambiguous: 1, failed: 1 });
    expect(dashboard.oldestAmbiguousSinceMs).toEqual(expect.any(Number));
    expect(dashboard.usageToday).toEqual({
      sinceMs: startOfUtcDay(nowMs),
      steps: 2,
      runs: 1,
      usage: { inputTokens: 30, outputTokens: 12, costUsd: 0.03 },
      costComplete: true,
    });
    expect(dashboard.latency.stages.to_send?.count).toBe(1);
    expect(dashboard.latency.step).toBeNull();
    expect(dashboard.checks["mcp:notes"]).toEqual({ ok: false, degraded: true, detail: "down" });
  });
});
