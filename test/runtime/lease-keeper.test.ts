import { expect, test } from "bun:test";
import { isSwitchboardError } from "../../src/errors.ts";
import { keepLease, RENEWAL_WARNING_INTERVAL_MS, renewalIntervalMs } from "../../src/runtime/lease-keeper.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { recordingLogger } from "../support/logger.ts";

const fence = { runId: "run_1", fencingToken: 4 };

function setup(leaseMs: number, renewLease: () => Promise<boolean>) {
  const clock = new FakeClock();
  const logger = recordingLogger();
  let failures = 0;
  const lease = keepLease({
    store: { renewLease },
    clock,
    logger,
    fence,
    leaseMs,
    expiresAtMs: clock.now() + leaseMs,
    onRenewalFailed: () => failures++,
  });
  return { clock, logger, lease, failures: () => failures };
}

test("every failed renewal is counted; the warning comes at most once per 30 s and says how many it covers", async () => {
  // Renewals every 30 s, failing for a minute before the lease expires.
  const leaseMs = 90_000;
  const { clock, logger, lease, failures } = setup(leaseMs, () => Promise.reject(new Error("timeout")));
  expect(renewalIntervalMs(leaseMs)).toBe(30_000);
  await clock.advance(RENEWAL_WARNING_INTERVAL_MS * 2);
  expect(failures()).toBe(2);
  const warnings = logger.records.filter((r) => r.event === "run.lease_renewal_failed");
  expect(warnings.map((w) => w.failures)).toEqual([1, 1]);
  await clock.advance(leaseMs - RENEWAL_WARNING_INTERVAL_MS * 2 - 1);
  expect(lease.signal.aborted).toBe(false);
  await clock.advance(1);
  expect(lease.signal.aborted).toBe(true);
  expect(isSwitchboardError(lease.signal.reason, "fence_lost")).toBe(true);
  expect(() => lease.assertHeld()).toThrow("expired while its renewals failed");
});

test("failures within 30 s of a warning are folded into the next one's count", async () => {
  // Renewals every 10 s: fail (warned), succeed (the lease goes on), fail, fail (warned: 2).
  const answers = [false, true, false, false];
  const { clock, logger, lease, failures } = setup(30_000, async () => {
    if (answers.shift()) return true;
    throw new Error("timeout");
  });
  await clock.advance(40_000);
  expect(failures()).toBe(3);
  const warnings = logger.records.filter((r) => r.event === "run.lease_renewal_failed");
  expect(warnings.map((w) => w.failures)).toEqual([1, 2]);
  expect(lease.signal.aborted).toBe(false);
});

test("a renewal that never answers does not hold the lease past its expiry", async () => {
  const { clock, lease, logger } = setup(3_000, () => new Promise<boolean>(() => {}));
  await clock.advance(2_999);
  expect(lease.signal.aborted).toBe(false);
  await clock.advance(1);
  expect(lease.signal.aborted).toBe(true);
  expect(logger.records.filter((r) => r.event === "run.lease_lost")).toMatchObject([
    { runId: "run_1", fencingToken: 4, reason: "expired" },
  ]);
});

test("an answer that arrives after stop() (the run ended) neither aborts nor logs", async () => {
  let answer: (held: boolean) => void = () => {};
  const { clock, lease, logger } = setup(3_000, () => new Promise<boolean>((resolve) => (answer = resolve)));
  await clock.advance(1_000);
  lease.stop();
  answer(false);
  await clock.advance(10_000);
  expect(lease.signal.aborted).toBe(false);
  expect(logger.records).toEqual([]);
});
