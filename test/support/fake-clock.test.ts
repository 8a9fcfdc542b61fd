import { describe, expect, test } from "bun:test";
import { MAX_TIMER_DELAY_MS } from "../../src/util/clock.ts";
import { FakeClock } from "./fake-clock.ts";

const T0 = Date.parse("2026-06-01T10:00:00Z");

describe("FakeClock", () => {
  test("advance fires due timers and sleeps in due order, set order on ties, each at its own time", async () => {
    const clock = new FakeClock(T0);
    const fired: string[] = [];
    const mark = (name: string) => () => fired.push(`${name}@${clock.now() - T0}`);
    clock.setTimer(300, mark("c"));
    clock.setTimer(100, mark("a"));
    clock.setTimer(100, mark("b"));
    void clock.sleep(200).then(mark("sleep"));
    clock.setTimer(1000, mark("later"));
    await clock.advance(500);
    expect(fired).toEqual(["a@100", "b@100", "sleep@200", "c@300"]);
    expect(clock.now()).toBe(T0 + 500);
    expect(clock.pendingAt()).toEqual([T0 + 1000]);
    expect(clock.nextTimerInMs()).toBe(500);
  });

  test("async work a timer starts settles before the next timer fires", async () => {
    const clock = new FakeClock(T0);
    const log: string[] = [];
    clock.setTimer(10, () => {
      void (async () => {
        await Promise.resolve();
        await new Promise((resolve) => setImmediate(resolve));
        log.push("first done");
      })();
    });
    clock.setTimer(20, () => log.push("second"));
    await clock.advance(20);
    expect(log).toEqual(["first done", "second"]);
  });

  test("a timer set by a firing timer fires in the same advance when it is due by then", async () => {
    const clock = new FakeClock(T0);
    const fired: number[] = [];
    clock.setTimer(100, () => {
      fired.push(clock.now() - T0);
      clock.setTimer(50, () => fired.push(clock.now() - T0));
    });
    await clock.advance(149);
    expect(fired).toEqual([100]);
    await clock.advance(1);
    expect(fired).toEqual([100, 150]);
  });

  test("every fires once per interval until cancelled", async () => {
    const clock = new FakeClock(T0);
    const at: number[] = [];
    const timer = clock.every(1000, () => at.push(clock.now() - T0));
    await clock.advance(3500);
    expect(at).toEqual([1000, 2000, 3000]);
    timer.cancel();
    await clock.advance(5000);
    expect(at).toEqual([1000, 2000, 3000]);
    expect(clock.pendingAt()).toEqual([]);
  });

  test("an interval that cancels itself from its callback stops", async () => {
    const clock = new FakeClock(T0);
    let fires = 0;
    const timer = clock.every(10, () => {
      fires += 1;
      if (fires === 2) timer.cancel();
    });
    await clock.advance(100);
    expect(fires).toBe(2);
  });

  test("cancel stops a timer; refresh restarts its countdown and re-arms a fired one", async () => {
    const clock = new FakeClock(T0);
    let cancelledFired = false;
    clock
      .setTimer(10, () => {
        cancelledFired = true;
      })
      .cancel();
    const fired: number[] = [];
    const idle = clock.setTimer(100, () => fired.push(clock.now() - T0));
    await clock.advance(60);
    idle.refresh();
    await clock.advance(60);
    expect(fired).toEqual([]);
    await clock.advance(40);
    expect(fired).toEqual([160]);
    idle.refresh();
    await clock.advance(100);
    expect(fired).toEqual([160, 260]);
    idle.cancel();
    idle.refresh();
    await clock.advance(1000);
    expect(fired).toEqual([160, 260]);
    expect(cancelledFired).toBe(false);
  });

  test("delays are clamped as setTimeout clamps them", async () => {
    const clock = new FakeClock(T0);
    let negative = false;
    clock.setTimer(-50, () => {
      negative = true;
    });
    clock.setTimer(MAX_TIMER_DELAY_MS * 10, () => {});
    clock.every(0, () => {}).cancel();
    expect(clock.pendingAt()).toEqual([T0, T0 + MAX_TIMER_DELAY_MS]);
    await clock.advance(0);
    expect(negative).toBe(true);
  });

  test("an aborted sleep rejects with the signal's reason and leaves no timer behind", async () => {
    const clock = new FakeClock(T0);
    const abort = new AbortController();
    const sleeping = clock.sleep(1000, abort.signal);
    abort.abort(new Error("stopped"));
    await expect(sleeping).rejects.toThrow("stopped");
    expect(clock.pendingAt()).toEqual([]);
    await expect(clock.sleep(10, abort.signal)).rejects.toThrow("stopped");
  });

  test("runUntil fires timers until the condition holds, and names it when time runs out", async () => {
    const clock = new FakeClock(T0);
    let ticks = 0;
    clock.every(1000, () => {
      ticks += 1;
    });
    await clock.runUntil(() => ticks === 3, "three ticks");
    expect(clock.now()).toBe(T0 + 3000);
    await expect(clock.runUntil(() => false, "never", 5000)).rejects.toThrow(
      "5000 ms of fake time passed, and still not: never",
    );
    const empty = new FakeClock(T0);
    await expect(empty.runUntil(() => false, "a timer")).rejects.toThrow(
      "Nothing left to run, and still not: a timer",
    );
  });

  test("with instantSleeps, sleeps end at the next turn without moving time, and are recorded", async () => {
    const clock = new FakeClock(T0, { instantSleeps: true });
    await clock.sleep(500);
    await clock.sleep(1000);
    expect(clock.now()).toBe(T0);
    expect(clock.requestedSleepsMs).toEqual([500, 1000]);
    let fired = false;
    clock.setTimer(10, () => {
      fired = true;
    });
    await clock.sleep(60_000);
    expect(fired).toBe(false);
    await clock.advance(10);
    expect(fired).toBe(true);
  });
});
