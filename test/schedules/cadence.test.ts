import { describe, expect, test } from "bun:test";
import { cronExpressionProblem, nextSlotAfter, shortestGapMs } from "../../schedules/cadence.ts";
import { canonicalTimeZone, formatInZone, wallTimeToInstantMs } from "../../schedules/timezone.ts";
import type { RecurringSpec } from "../../schedules/types.ts";

function slots(spec: RecurringSpec, timezone: string, fromIso: string, count: number): string[] {
  const out: string[] = [];
  let after = Date.parse(fromIso);
  for (let i = 0; i < count; i++) {
    const next = nextSlotAfter(spec, timezone, after);
    if (next === null) break;
    out.push(new Date(next).toISOString());
    after = next;
  }
  return out;
}

const cron = (expression: string): RecurringSpec => ({ type: "cron", expression });

describe("cron slots across DST (documented in schedules/cadence.ts)", () => {
  test("Europe/Berlin spring gap 2026-03-29: a fixed 02:30 or 02:00 job runs at 03:00 CEST", () => {
    expect(slots(cron("30 2 * * *"), "Europe/Berlin", "2026-03-28T00:00:00Z", 3)).toEqual([
      "2026-03-28T01:30:00.000Z",
      "2026-03-29T01:00:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ]);
    expect(slots(cron("0 2 * * *"), "Europe/Berlin", "2026-03-28T12:00:00Z", 2)).toEqual([
      "2026-03-29T01:00:00.000Z",
      "2026-03-30T00:00:00.000Z",
    ]);
  });

  test("Europe/Berlin repeat 2026-10-25: a fixed job runs once, at the first 02:30; a wildcard job runs on both", () => {
    expect(slots(cron("30 2 * * *"), "Europe/Berlin", "2026-10-24T12:00:00Z", 2)).toEqual([
      "2026-10-25T00:30:00.000Z", // 02:30 CEST
      "2026-10-26T01:30:00.000Z", // 02:30 CET next day
    ]);
    expect(slots(cron("*/30 2 * * *"), "Europe/Berlin", "2026-10-24T23:59:00Z", 4)).toEqual([
      "2026-10-25T00:00:00.000Z", // 02:00 CEST
      "2026-10-25T00:30:00.000Z", // 02:30 CEST
      "2026-10-25T01:00:00.000Z", // 02:00 CET
      "2026-10-25T01:30:00.000Z", // 02:30 CET
    ]);
  });

  test("America/New_York spring gap 2026-03-08 and repeat 2026-11-01", () => {
    expect(slots(cron("30 2 * * *"), "America/New_York", "2026-03-07T00:00:00Z", 3)).toEqual([
      "2026-03-07T07:30:00.000Z", // 02:30 EST
      "2026-03-08T07:00:00.000Z", // 02:30 missing: 03:00 EDT
      "2026-03-09T06:30:00.000Z", // 02:30 EDT
    ]);
    expect(slots(cron("30 1 * * *"), "America/New_York", "2026-10-31T00:00:00Z", 3)).toEqual([
      "2026-10-31T05:30:00.000Z",
      "2026-11-01T05:30:00.000Z", // first 01:30 (EDT) only
      "2026-11-02T06:30:00.000Z",
    ]);
    expect(slots(cron("0 2 * * *"), "America/New_York", "2026-10-31T12:00:00Z", 2)).toEqual([
      "2026-11-01T07:00:00.000Z", // 02:00 EST: after the repeat, 02:00 exists once
      "2026-11-02T07:00:00.000Z",
    ]);
  });

  test("weekday expressions follow the zone's calendar", () => {
    expect(slots(cron("0 9 * * 1-5"), "America/New_York", "2026-10-30T14:00:00Z", 2)).toEqual([
      "2026-11-02T14:00:00.000Z",
      "2026-11-03T14:00:00.000Z",
    ]);
  });
});

describe("interval slots", () => {
  test("stay on anchor + k × interval, whatever the reference time, across DST", () => {
    const anchorMs = Date.parse("2026-03-29T00:00:00Z");
    const spec: RecurringSpec = { type: "interval", intervalMs: 3_600_000, anchorMs };
    expect(nextSlotAfter(spec, "Europe/Berlin", anchorMs - 5)).toBe(anchorMs);
    expect(nextSlotAfter(spec, "Europe/Berlin", anchorMs)).toBe(anchorMs + 3_600_000);
    expect(nextSlotAfter(spec, "Europe/Berlin", anchorMs + 5 * 3_600_000 + 1)).toBe(anchorMs + 6 * 3_600_000);
    expect(shortestGapMs(spec, "Europe/Berlin", anchorMs)).toBe(3_600_000);
  });
});

describe("cron validation and spacing", () => {
  test("explains what is wrong", () => {
    expect(cronExpressionProblem("0 9 * * 1-5")).toBeNull();
    expect(cronExpressionProblem("0 9 * *")).toContain("this one has 4");
    expect(cronExpressionProblem("0 25 * * *")).toContain("hour");
  });

  test("the shortest gap finds the tightest pair of slots", () => {
    expect(shortestGapMs(cron("0,1 9 * * *"), "UTC", Date.parse("2026-06-01T00:00:00Z"))).toBe(60_000);
    expect(shortestGapMs(cron("0 9 * * *"), "UTC", Date.parse("2026-06-01T00:00:00Z"))).toBe(86_400_000);
  });
});

describe("time zones", () => {
  test("canonical names; unknown and padded names are rejected", () => {
    expect(canonicalTimeZone("europe/berlin")).toBe("Europe/Berlin");
    expect(canonicalTimeZone("Mars/Olympus")).toBeNull();
    expect(canonicalTimeZone(" UTC")).toBeNull();
    expect(canonicalTimeZone("")).toBeNull();
  });

  test("wall time → instant: a gap moves forward by its length, a repeat is its first occurrence", () => {
    const at = (iso: string, tz: string) => {
      const [date, time] = iso.split("T") as [string, string];
      const [year, month, day] = date.split("-").map(Number) as [number, number, number];
      const [hour, minute] = time.split(":").map(Number) as [number, number];
      return new Date(wallTimeToInstantMs({ year, month, day, hour, minute }, tz)).toISOString();
    };
    expect(at("2026-03-29T02:30", "Europe/Berlin")).toBe("2026-03-29T01:30:00.000Z"); // 03:30 CEST
    expect(at("2026-10-25T02:30", "Europe/Berlin")).toBe("2026-10-25T00:30:00.000Z"); // 02:30 CEST
    expect(at("2026-03-08T02:30", "America/New_York")).toBe("2026-03-08T07:30:00.000Z"); // 03:30 EDT
    expect(at("2026-11-01T01:30", "America/New_York")).toBe("2026-11-01T05:30:00.000Z"); // 01:30 EDT
    expect(at("2026-07-01T09:00", "Asia/Kolkata")).toBe("2026-07-01T03:30:00.000Z");
    expect(formatInZone(Date.parse("2026-12-07T08:00:00Z"), "Europe/Berlin")).toBe("Mon 2026-12-07 09:00");
  });
});
