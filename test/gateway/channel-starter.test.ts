import { describe, expect, test } from "bun:test";
import { channelRetryDelayMs } from "../../src/gateway/channel-starter.ts";

describe("a channel that cannot start", () => {
  test("is tried again after 1 s, doubling up to a minute", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map(channelRetryDelayMs)).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ]);
  });
});
