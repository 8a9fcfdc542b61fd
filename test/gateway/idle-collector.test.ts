import { describe, expect, test } from "bun:test";
import { type MemoryReading, shouldCollect, startIdleCollector } from "../../src/gateway/idle-collector.ts";
import { FakeClock } from "../support/fake-clock.ts";

const MiB = 1024 * 1024;

/** A collector whose memory readings the test sets; a collection brings the heap back to 20 MiB. */
function collectorWith(clock: FakeClock, start: MemoryReading = { heapUsed: 20 * MiB, rss: 100 * MiB }) {
  let busy = false;
  let collections = 0;
  let memory = { ...start };
  const collector = startIdleCollector({
    clock,
    busy: () => busy,
    collect: () => {
      collections += 1;
      memory = { heapUsed: 20 * MiB, rss: memory.rss - 40 * MiB };
    },
    memory: () => memory,
    checkIntervalMs: 1000,
    minIntervalMs: 10_000,
    heapGrowthBytes: 32 * MiB,
    rssGrowthBytes: 64 * MiB,
  });
  return {
    collector,
    setBusy: (value: boolean) => {
      busy = value;
    },
    /** Work that leaves `heapMiB` more heap and `rssMiB` more resident set behind. */
    grow: (heapMiB: number, rssMiB = 0) => {
      memory = { heapUsed: memory.heapUsed + heapMiB * MiB, rss: memory.rss + rssMiB * MiB };
    },
    memory: () => memory,
    collections: () => collections,
  };
}

describe("the idle collector", () => {
  test("collects once when work ends and the gateway is quiet, not while it is busy", async () => {
    const clock = new FakeClock();
    const { setBusy, grow, collections, collector } = collectorWith(clock);
    await clock.advance(5000);
    expect(collections()).toBe(0); // no work yet: nothing to collect

    setBusy(true);
    grow(200, 150);
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
    const { collections, collector, grow } = collectorWith(clock);
    grow(100);
    collector.noteWork();
    await clock.advance(1000);
    expect(collections()).toBe(1);

    grow(100);
    collector.noteWork();
    await clock.advance(5000);
    expect(collections()).toBe(1);
    await clock.advance(5000);
    expect(collections()).toBe(2);
    collector.stop();
  });

  test("paced work that leaves the heap near where it was is not collected after", async () => {
    const clock = new FakeClock();
    const { collections, collector, grow, setBusy } = collectorWith(clock);
    // A reply a second for a minute; JavaScriptCore's own collections keep the heap within a few MB.
    for (let second = 0; second < 60; second += 1) {
      setBusy(true);
      grow(second % 2 === 0 ? 3 : -3, 1);
      await clock.advance(500);
      setBusy(false);
      collector.noteWork();
      await clock.advance(500);
    }
    expect(collections()).toBe(0);
    // Then the heap grows past the threshold above its lowest reading: the next quiet look collects.
    grow(33);
    collector.noteWork();
    await clock.advance(1000);
    expect(collections()).toBe(1);
    collector.stop();
  });

  test("a resident set grown past its threshold is collected even with the heap unchanged", async () => {
    const clock = new FakeClock();
    const { collections, collector, grow } = collectorWith(clock);
    grow(0, 63);
    collector.noteWork();
    await clock.advance(2000);
    expect(collections()).toBe(0);
    grow(0, 1);
    await clock.advance(1000);
    expect(collections()).toBe(1);
    collector.stop();
  });

  test("growth is measured from the readings after the last collection", async () => {
    const clock = new FakeClock();
    const { collections, collector, grow, memory } = collectorWith(clock);
    grow(100);
    collector.noteWork();
    await clock.advance(1000);
    expect(collections()).toBe(1);
    expect(memory().heapUsed).toBe(20 * MiB);
    // 30 MiB over the collection's 20: under the threshold, though far over the reading at start.
    grow(30);
    collector.noteWork();
    await clock.advance(20_000);
    expect(collections()).toBe(1);
    collector.stop();
  });

  test("stops looking once stopped", async () => {
    const clock = new FakeClock();
    const { collections, collector, grow } = collectorWith(clock);
    collector.stop();
    grow(200);
    collector.noteWork();
    await clock.advance(20_000);
    expect(collections()).toBe(0);
  });

  test("the decision: only after work, only when quiet, only after the interval, only after growth", () => {
    const floor = { heapUsed: 20 * MiB, rss: 100 * MiB };
    const thresholds = { heapGrowthBytes: 32 * MiB, rssGrowthBytes: 64 * MiB };
    const grown = { heapUsed: 60 * MiB, rss: 100 * MiB };
    const after = { workSeen: true, lastCollectedMs: 0, floor };
    expect(shouldCollect(after, false, 10_000, 10_000, grown, thresholds)).toBe(true);
    expect(shouldCollect(after, true, 10_000, 10_000, grown, thresholds)).toBe(false);
    expect(shouldCollect(after, false, 9_999, 10_000, grown, thresholds)).toBe(false);
    expect(shouldCollect({ ...after, workSeen: false }, false, 50_000, 10_000, grown, thresholds)).toBe(
      false,
    );
    expect(
      shouldCollect(after, false, 50_000, 10_000, { heapUsed: 51 * MiB, rss: 163 * MiB }, thresholds),
    ).toBe(false);
    expect(
      shouldCollect(after, false, 50_000, 10_000, { heapUsed: 20 * MiB, rss: 164 * MiB }, thresholds),
    ).toBe(true);
  });
});
