import { describe, expect, test } from "bun:test";
import { createTypingIndicator } from "../../outbox/typing.ts";
import { FakeAdapter, unavailable } from "./support/fake-adapter.ts";
import { FakeClock, settle } from "./support/fake-clock.ts";

describe("typing indicator", () => {
  test("shows typing now and every 4 s until stopped, through a failed call", async () => {
    const clock = new FakeClock();
    const adapter = new FakeAdapter({ clock });
    adapter.fail("typing", unavailable());
    const warnings: string[] = [];
    const t0 = clock.now();
    const indicator = createTypingIndicator(adapter, "chat-a", {
      clock,
      logger: { info: () => {}, warn: (message) => warnings.push(message) },
    });
    await clock.advance(10_000);
    indicator.stop();
    await clock.advance(20_000);
    expect(adapter.calls.map((c) => [c.op, c.target, c.atMs - t0, c.outcome])).toEqual([
      ["typing", "chat-a", 0, "error"],
      ["typing", "chat-a", 4000, "ok"],
      ["typing", "chat-a", 8000, "ok"],
    ]);
    expect(warnings).toHaveLength(1);
  });

  test("does nothing for a platform without typing", async () => {
    const clock = new FakeClock();
    const adapter = new FakeAdapter({ clock, capabilities: { typing: false } });
    const indicator = createTypingIndicator(adapter, "chat-a", { clock });
    await settle();
    indicator.stop();
    expect(adapter.calls).toEqual([]);
    expect(clock.nextTimerInMs()).toBeNull();
  });
});
