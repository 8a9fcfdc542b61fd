import { expect, test } from "bun:test";
import { createMetrics } from "../../src/gateway/metrics.ts";

const gauges = { runs: {}, outbox: {}, deliveryLatencyMs: null, oldestAmbiguousSinceMs: null };
const live = { lanes: 0, nowMs: 0, active: true };

test("failed lease renewals are counted in switchboard_lease_renewal_failures_total", () => {
  const metrics = createMetrics();
  expect(metrics.render(gauges, live)).not.toContain("switchboard_lease_renewal_failures_total");
  metrics.leaseRenewalFailed();
  metrics.leaseRenewalFailed();
  const lines = metrics.render(gauges, live).split("\n");
  expect(lines).toContain("# TYPE switchboard_lease_renewal_failures_total counter");
  expect(lines).toContain("switchboard_lease_renewal_failures_total 2");
});
