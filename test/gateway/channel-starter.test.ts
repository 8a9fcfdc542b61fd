import { describe, expect, test } from "bun:test";
import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import { ChannelStarter, channelRetryDelayMs } from "../../src/gateway/channel-starter.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { recordingLogger } from "../support/logger.ts";

/**
 * An adapter whose client starts at most once, like discord.js: a second start() on it fails
 * whatever the platform does. It starts when `platformUp()` says so.
 */
function onceOnlyAdapter(serial: number, platformUp: () => boolean) {
  const state = { serial, starts: 0, stopped: false, connected: false };
  const adapter = {
    channel: "discord" as const,
    async start() {
      state.starts += 1;
      if (state.starts > 1) throw new Error("start() can be called once");
      if (!platformUp()) throw new Error("connect ECONNREFUSED 127.0.0.1:1");
      state.connected = true;
    },
    async stop() {
      state.stopped = true;
      state.connected = false;
    },
    isConnected: () => state.connected,
  } as unknown as ChannelAdapter;
  return { adapter, state };
}

describe("a channel that cannot start", () => {
  test("is tried again after 1 s, doubling up to a minute", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map(channelRetryDelayMs)).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ]);
  });

  test("is tried again with a fresh adapter each time, which replaces the failed one, until it starts", async () => {
    const clock = new FakeClock();
    const logger = recordingLogger();
    let up = false;
    const made: Array<ReturnType<typeof onceOnlyAdapter>> = [];
    const make = () => {
      const next = onceOnlyAdapter(made.length, () => up);
      made.push(next);
      return next.adapter;
    };
    const adapters = new Map<ChannelName, ChannelAdapter>([["discord", make()]]);
    const starter = new ChannelStarter({
      adapters,
      factories: new Map([["discord", make]]),
      startOne: (_name, adapter) => adapter.start(async () => ({ kind: "ignored", reason: "test" })),
      logger,
      clock,
    });

    await starter.startAll();
    expect(starter.check("discord", adapters.get("discord")!)).toMatchObject({ ok: false, degraded: true });
    expect(made.map((m) => m.state)).toMatchObject([
      { serial: 0, starts: 1, stopped: true },
      { serial: 1, starts: 0, stopped: false },
    ]);
    // The failed adapter is out of the map at once: sends and readiness see the fresh one.
    expect(adapters.get("discord")).toBe(made[1]!.adapter);

    await clock.advance(1000);
    expect(made.map((m) => m.state.starts)).toEqual([1, 1, 0]);
    up = true;
    await clock.advance(1999);
    expect(made[2]!.state.starts).toBe(0);
    await clock.advance(1);

    expect(made.map((m) => m.state.starts)).toEqual([1, 1, 1]);
    expect(adapters.get("discord")).toBe(made[2]!.adapter);
    expect(starter.check("discord", made[2]!.adapter)).toEqual({ ok: true });
    expect(logger.records.filter((r) => r.event === "channel.start_failed").map((r) => r.retryInMs)).toEqual([
      1000, 2000,
    ]);
    expect(JSON.stringify(logger.records)).not.toContain("called once");
    expect(logger.records.find((r) => r.event === "channel.recovered")).toMatchObject({ attempts: 3 });
    expect(clock.nextTimerInMs()).toBeNull();
  });

  test("stop() ends the retries", async () => {
    const clock = new FakeClock();
    const made: Array<ReturnType<typeof onceOnlyAdapter>> = [];
    const make = () => {
      const next = onceOnlyAdapter(made.length, () => false);
      made.push(next);
      return next.adapter;
    };
    const starter = new ChannelStarter({
      adapters: new Map<ChannelName, ChannelAdapter>([["discord", make()]]),
      factories: new Map([["discord", make]]),
      startOne: (_name, adapter) => adapter.start(async () => ({ kind: "ignored", reason: "test" })),
      logger: recordingLogger(),
      clock,
    });
    await starter.startAll();
    starter.stop();
    await clock.advance(120_000);
    expect(made.map((m) => m.state.starts)).toEqual([1, 0]);
    expect(clock.nextTimerInMs()).toBeNull();
  });
});
