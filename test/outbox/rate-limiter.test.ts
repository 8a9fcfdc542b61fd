import { describe, expect, test } from "bun:test";
import { DeliveryRateLimiter, type RateLane } from "../../outbox/rate-limiter.ts";
import { FakeClock } from "./support/fake-clock.ts";

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
      await limiter.acquire(l);
      times.push(clock.now() - t0);
    }),
  );
  await clock.runUntil(() => times.length === lanes.length, "all acquired");
  await all;
  return times.sort((a, b) => a - b);
}

describe("delivery rate limiter", () => {
  test("one call per chat interval", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    expect(await acquireTimes(clock, limiter, [lane("a"), lane("a"), lane("a"), lane("b")])).toEqual([
      0, 0, 1000, 2000,
    ]);
  });

  test("the account allows one second's worth in any second (a sliding window, like the platforms)", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    const chats = ["a", "b", "c", "d", "e"].map((chat) => lane(chat, 0, 2));
    // A token bucket would allow a third call at 500 ms: three in one second, answered 429.
    expect(await acquireTimes(clock, limiter, chats)).toEqual([0, 0, 1000, 1000, 2000]);
  });

  test("a call's window counts from when it ended, so network delay cannot squeeze two calls into one", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    const permit = await limiter.acquire(lane("a"));
    await clock.advance(300); // the call took 300 ms; the platform counted it somewhere in between
    permit.ended();
    expect(await acquireTimes(clock, limiter, [lane("a")])).toEqual([1000]);
  });

  test("held chats: a full chat window or a block, with when each frees up; idle chats are forgotten", async () => {
    const clock = new FakeClock();
    const limiter = new DeliveryRateLimiter(clock);
    const t0 = clock.now();
    (await limiter.acquire(lane("a"))).ended();
    limiter.block("b", t0 + 4000);
    expect(limiter.heldChats(t0)).toEqual(
      new Map([
        ["a", t0 + 1000],
        ["b", t0 + 4000],
      ]),
    );
    expect(limiter.heldChats(t0 + 1000)).toEqual(new Map([["b", t0 + 4000]]));
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
    await limiter.acquire(lane("a"));
    const stop = new AbortController();
    const waiting = limiter.acquire(lane("a"), stop.signal);
    stop.abort(new Error("stopping"));
    await expect(waiting).rejects.toThrow("stopping");
  });
});
