import { describe, expect, test } from "bun:test";
import { shouldCollect, startIdleCollector } from "../../src/gateway/idle-collector.ts";
import { FakeClock } from "../support/fake-clock.ts";

function collectorWith(clock: FakeClock) {
  let busy = false;
  let collections = 0;
  const collector = startIdleCollector({
    clock,
    busy: () => busy,
    collect: () => {
      collections += 1;
    },
    checkIntervalMs: 1000,
    minIntervalMs: 10_000,
  });
  return {
    collector,
    setBusy: (value: boolean) => {
      busy = value;
    },
    collections: () => collections,
  };
}

describe("the idle collector", () => {
  test("collects once when work ends and the gateway is quiet, not while it is busy", async () => {
    const clock = new FakeClock();
    const { setBusy, collections, collector } = collectorWith(clock);
    await clock.advance(5000);
    expect(collections()).toBe(0); // no work yet: nothing to collect

    setBusy(true);
    await clock.advance(3000);
    expect(collections()).toBe(0);

    setBusy(false);
    await clock.advance(1000);
    expect(collections()).toBe(1);
    await clock.advance(30_000);
    expect(collections()).toBe(1); // quiet with no new work: once is enough
    collector.stop();
  });

  test("work finished between two looks counts, and collections are at least minIntervalMs apart", async () => {
    const clock = new FakeClock();
    const { collections, collector } = collectorWith(clock);
    collector.noteWork();
    await clock.advance(1000);
    expect(collections()).toBe(1);

    collector.noteWork();
    await clock.advance(5000);
    expect(collections()).toBe(1);
    await clock.advance(5000);
    expect(collections()).toBe(2);
    collector.stop();
  });

  test("stops looking once stopped", async () => {
    const clock = new FakeClock();
    const { collections, collector } = collectorWith(clock);
    collector.stop();
    collector.noteWork();
    await clock.advance(20_000);
    expect(collections()).toBe(0);
  });

  test("the decision: only after work, only when quiet, only after the interval", () => {
    const after = { workSeen: true, lastCollectedMs: 0 };
    expect(shouldCollect(after, false, 10_000, 10_000)).toBe(true);
    expect(shouldCollect(after, true, 10_000, 10_000)).toBe(false);
    expect(shouldCollect(after, false, 9_999, 10_000)).toBe(false);
    expect(shouldCollect({ workSeen: false, lastCollectedMs: 0 }, false, 50_000, 10_000)).toBe(false);
  });
});
