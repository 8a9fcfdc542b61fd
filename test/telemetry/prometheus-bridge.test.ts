import { expect, test } from "bun:test";
import { DataPointType, type HistogramMetricData, type MetricData } from "@opentelemetry/sdk-metrics";
import { createMetrics } from "../../src/gateway/metrics.ts";
import { parseExposition, toMetricData } from "../../src/telemetry/prometheus-bridge.ts";

function exported(): MetricData[] {
  const metrics = createMetrics();
  metrics.inboundAccepted("telegram", "default");
  metrics.inboundAccepted("telegram", "default");
  metrics.inboundAccepted("slack", "default");
  metrics.inboundIgnored("telegram", "default", "flood limit");
  for (const ms of [0.3, 0.3, 4, 12_000]) metrics.replyStage("admit", ms);
  metrics.stepLatency(40);
  const text = metrics.render(
    {
      runs: { completed: 5, queued: 1 },
      outbox: { delivered: 4 },
      deliveryLatencyMs: { p50: 12, p99: 80, count: 4 },
      oldestAmbiguousSinceMs: null,
    },
    { lanes: 2, nowMs: 1_000, active: true },
  );
  return toMetricData(parseExposition(text), [0, 0], [1, 0]);
}

const named = (data: MetricData[], name: string) => data.find((m) => m.descriptor.name === name)!;

test("counters are cumulative monotonic sums with the same names, labels and values", () => {
  const accepted = named(exported(), "switchboard_inbound_accepted_total");
  expect(accepted.dataPointType).toBe(DataPointType.SUM);
  expect(accepted.dataPoints.map((p) => [p.attributes, p.value])).toEqual([
    [{ channel: "telegram", account: "default" }, 2],
    [{ channel: "slack", account: "default" }, 1],
  ]);
  expect(named(exported(), "switchboard_inbound_ignored_total").dataPoints[0]!.attributes).toEqual({
    channel: "telegram",
    account: "default",
    reason: "flood limit",
  });
});

test("histograms keep their bounds, per-bucket counts, sum and count", () => {
  const stages = named(exported(), "switchboard_reply_stage_ms") as HistogramMetricData;
  expect(stages.dataPointType).toBe(DataPointType.HISTOGRAM);
  const admit = stages.dataPoints.find((p) => p.attributes.stage === "admit")!;
  expect(admit.value.count).toBe(4);
  expect(admit.value.sum).toBeCloseTo(12_004.6);
  const { boundaries, counts } = admit.value.buckets;
  expect(counts).toHaveLength(boundaries.length + 1);
  expect(counts[boundaries.indexOf(0.5)]).toBe(2);
  expect(counts[boundaries.indexOf(4)]).toBe(1);
  expect(counts[boundaries.indexOf(25)]).toBe(0);
  // 12 s is above the last bound (10 s): the overflow bucket.
  expect(counts.at(-1)).toBe(1);
});

test("gauges and a summary's quantiles become gauges", () => {
  const data = exported();
  expect(named(data, "switchboard_runs").dataPoints.map((p) => [p.attributes, p.value])).toEqual([
    [{ state: "completed" }, 5],
    [{ state: "queued" }, 1],
  ]);
  expect(named(data, "switchboard_runtime_lanes").dataPoints[0]!.value).toBe(2);
  const latency = named(data, "switchboard_delivery_latency_ms");
  expect(latency.dataPointType).toBe(DataPointType.GAUGE);
  expect(latency.dataPoints.map((p) => [p.attributes, p.value])).toEqual([
    [{ quantile: "0.5" }, 12],
    [{ quantile: "0.99" }, 80],
  ]);
  expect(named(data, "switchboard_delivery_latency_ms_count").dataPoints[0]!.value).toBe(4);
});
