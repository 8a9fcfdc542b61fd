/** The soak's figures besides the invariants: reply times, RSS summaries and the kill cadence. */
import { describe, expect, test } from "bun:test";
import { killCadence } from "./driver.ts";
import { KILL_POINTS } from "./supervisor.ts";
import { quantile, replyTimesOf, summarizeRss } from "./vitals.ts";

const history = (...entries: Array<[string, number]>) =>
  JSON.stringify(entries.map(([action, atMs]) => ({ action, atMs })));

describe("chaos vitals", () => {
  test("reply time: from the post to the record's delivered entry, answers of posted inputs only", () => {
    const posted = new Map([
      ["q00001", 1_000],
      ["q00002", 2_000],
    ]);
    const times = replyTimesOf(
      [
        {
          markdown: "a-q00001 alpha",
          history: history(["enqueued", 1_100], ["sending", 1_200], ["delivered", 1_500]),
        },
        {
          markdown: "a-q00002 bravo",
          history: history(["sending", 2_100], ["ambiguous", 2_200], ["delivered", 9_000]),
        },
        // Not a posted input (a child's result), and a notice without a marker.
        { markdown: "a-y00009 charlie", history: history(["delivered", 3_000]) },
        { markdown: "Stopped.", history: history(["delivered", 3_000]) },
      ],
      posted,
    );
    expect(times).toEqual({ count: 2, p50Ms: 500, p99Ms: 7_000, maxMs: 7_000 });
    expect(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.5)).toBe(5);
    expect(quantile([], 0.99)).toBeNull();
  });

  test("RSS: min, median and max, and a short series by minute", () => {
    const samples = [150, 170, 160, 180].map((mb, i) => ({ atMs: 60_000 * (i + 1), mb }));
    expect(summarizeRss(samples, 0, 8)).toBe(
      "min 150 / median 160 / max 180 MB over 4 samples; 1m:150 2m:170 3m:160 4m:180",
    );
    expect(summarizeRss([], 0)).toBe("no samples");
  });

  test("a death every 12 s over 30 minutes: over 100 of them, each kill point several times", () => {
    const windowMs = 29 * 60_000;
    const cadence = killCadence({ killEveryMs: 12_000, randomKills: 0, killPointRounds: 0 }, windowMs);
    expect(cadence.killPointRounds).toBeGreaterThanOrEqual(4);
    // Each armed restart is a SIGKILL by the driver and then one at its point.
    const deaths = cadence.randomKills + 2 * cadence.killPointRounds * KILL_POINTS.length;
    expect(deaths).toBeGreaterThanOrEqual(100);
    expect(killCadence({ randomKills: 3, killPointRounds: 1 }, windowMs)).toEqual({
      randomKills: 3,
      killPointRounds: 1,
    });
  });
});
