import { describe, expect, test } from "bun:test";
import { DeliveryRateLimiter, RATE_WINDOW_MARGIN_MS, type RateLane } from "../../outbox/rate-limiter.ts";
import { FakeClock } from "../support/fake-clock.ts";

/** The margin every window adds to the platform's. */
const M = RATE_WINDOW_MARGIN_MS;

const lane = (chat: string, perChatIntervalMs = 1000, perAccountPerSecond = 30): RateLane => ({
  chatKey: chat,
  accountKey: "account",
  limits: { perChatIntervalMs, perAccountPerSecond },
});

async function acquireTimes(
  clock: FakeClock,
  limiter: DeliveryRateLimiter,
  lanes: RateLane[],
): Promise<number[]> {
  const t0 = clock.now();
  const times: number[] = [];
  const all = Promise.all(
    lanes.map(async (l) => {
      const permit = await limiter.acquire(l);
      times.push(clock.now() - t0);
      permit.ended(); // an instant call
    }),
  );
  await clock.runUntil(() => times.length === lanes.length, "all acquired");
  await all;
  return times.sort((a, b) => a - b);
}

describe("delivery rate limiter", () => {
  test("one call per chat interval, plus the margin", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    expect(await acquireTimes(clock, limiter, [lane("a"), lane("a"), lane("a"), lane("b")])).toEqual([
      0,
      0,
      1000 + M,
      2 * (1000 + M),
    ]);
  });

  test("the account allows one second's worth in any second (a sliding window, like the platforms)", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    const chats = ["a", "b", "c", "d", "e"].map((chat) => lane(chat, 0, 2));
    // A token bucket would allow a third call at 500 ms: three in one second, answered 429.
    expect(await acquireTimes(clock, limiter, chats)).toEqual([0, 0, 1000 + M, 1000 + M, 2 * (1000 + M)]);
  });

  test("a call's window counts from when it ended, so network delay cannot squeeze two calls into one", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    const permit = await limiter.acquire(lane("a"));
    await clock.advance(300); // the call took 300 ms; the platform counted it somewhere in between
    permit.ended();
    expect(await acquireTimes(clock, limiter, [lane("a")])).toEqual([1000 + M]);
  });

  test("a call in flight longer than the window still holds its slot until it ends", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    const slow = await limiter.acquire(lane("a", 0, 1));
    let next: number | null = null;
    void limiter.acquire(lane("b", 0, 1)).then(() => {
      next = clock.now();
    });
    // The platform may count the slow call at any moment until it answers.
    await clock.advance(2500);
    expect(next).toBeNull();
    const endedAtMs = clock.now();
    slow.ended();
    await clock.runUntil(() => next !== null, "second call");
    expect(next! - endedAtMs).toBe(1000 + M);
  });

  test("sub-millisecond rounding: a call is never timed less than a window after the last one ended", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    // The clock reads 0 ms when the call really ended at 0.9 ms; the platform counted it up to then.
    (await limiter.acquire(lane("a"))).ended();
    const times = await acquireTimes(clock, limiter, [lane("a")]);
    expect(times[0]! - 0.9).toBeGreaterThan(1000);
  });

  test("held chats: a full chat window or a block, with when each frees up; idle chats are forgotten", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    const t0 = clock.now();
    (await limiter.acquire(lane("a"))).ended();
    limiter.block("b", t0 + 4000);
    expect(limiter.heldChats(t0)).toEqual(
      new Map([
        ["a", t0 + 1000 + M],
        ["b", t0 + 4000],
      ]),
    );
    expect(limiter.heldChats(t0 + 1000 + M)).toEqual(new Map([["b", t0 + 4000]]));
    expect(limiter.heldChats(t0 + 4000)).toEqual(new Map());
  });

  test("a blocked chat waits until the platform's time; other chats do not", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    limiter.block("a", clock.now() + 4000);
    expect(await acquireTimes(clock, limiter, [lane("a", 0), lane("b", 0)])).toEqual([0, 4000]);
  });

  test("zero limits mean unlimited", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    expect(await acquireTimes(clock, limiter, [lane("a", 0, 0), lane("a", 0, 0), lane("a", 0, 0)])).toEqual([
      0, 0, 0,
    ]);
  });

  test("a shutdown aborts the wait", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    (await limiter.acquire(lane("a"))).ended();
    const stop = new AbortController();
    const waiting = limiter.acquire(lane("a"), stop.signal);
    stop.abort(new Error("stopping"));
    await expect(waiting).rejects.toThrow("stopping");
  });
});
