import { describe, expect, test } from "bun:test";
import { createTypingIndicator } from "../../outbox/typing.ts";
import { silentLogger } from "../../src/util/log.ts";
import { FakeClock, settle } from "../support/fake-clock.ts";
import { recordingLogger } from "../support/logger.ts";
import { FakeAdapter, unavailable } from "./support/fake-adapter.ts";

describe("typing indicator", () => {
  test("shows typing now and every 4 s until stopped, through a failed call", async () => {
    const clock = new FakeClock();
    const adapter = new FakeAdapter({ clock });
    adapter.fail("typing", unavailable());
    const logger = recordingLogger();
    const t0 = clock.now();
    const indicator = createTypingIndicator(adapter, "chat-a", { clock, logger });
    await clock.advance(10_000);
    indicator.stop();
    await clock.advance(20_000);
    expect(adapter.calls.map((c) => [c.op, c.target, c.atMs - t0, c.outcome])).toEqual([
      ["typing", "chat-a", 0, "error"],
      ["typing", "chat-a", 4000, "ok"],
      ["typing", "chat-a", 8000, "ok"],
    ]);
    expect(logger.records).toEqual([
      expect.objectContaining({ level: "warn", event: "outbox.typing_failed", channel: adapter.channel }),
    ]);
  });

  test("does nothing for a platform without typing", async () => {
    const clock = new FakeClock();
    const adapter = new FakeAdapter({ clock, without: ["typing"] });
    const indicator = createTypingIndicator(adapter, "chat-a", { clock, logger: silentLogger });
    await settle();
    indicator.stop();
    expect(adapter.calls).toEqual([]);
    expect(clock.nextTimerInMs()).toBeNull();
  });
});
