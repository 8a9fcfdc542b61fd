import { describe, expect, test } from "bun:test";
import { formatDuration, parseDurationMs } from "../../schedules/duration.ts";
import { formatScheduleCreated, formatScheduleList } from "../../schedules/format.ts";
import { type CommandContext, parseScheduleCommand } from "../../schedules/parse.ts";
import type { Schedule } from "../../schedules/types.ts";

// Monday 2026-11-30 10:15 in Berlin (09:15Z).
const berlin: CommandContext = { nowMs: Date.parse("2026-11-30T09:15:00Z"), timezone: "Europe/Berlin" };
const noZone: CommandContext = { nowMs: berlin.nowMs, timezone: null };

function ok(text: string, context = berlin) {
  const parsed = parseScheduleCommand(text, context);
  if (!parsed?.ok) throw new Error(`expected ${text} to parse, got ${JSON.stringify(parsed)}`);
  return parsed.command;
}

function refused(text: string, context = berlin) {
  const parsed = parseScheduleCommand(text, context);
  if (parsed === null || parsed.ok)
    throw new Error(`expected ${text} to be refused, got ${JSON.stringify(parsed)}`);
  return parsed;
}

describe("durations", () => {
  test("d, h, m, s in that order, combined", () => {
    expect(parseDurationMs("10m")).toBe(600_000);
    expect(parseDurationMs("2h30m")).toBe(9_000_000);
    expect(parseDurationMs("45s")).toBe(45_000);
    expect(parseDurationMs("1d")).toBe(86_400_000);
    expect(parseDurationMs("1D2H")).toBe(93_600_000);
    for (const bad of ["", "10", "m", "0m", "30m2h", "1.5h", "10 m", "-5m"])
      expect(parseDurationMs(bad)).toBeNull();
    expect(formatDuration(9_000_000)).toBe("2h30m");
    expect(formatDuration(86_400_000 + 45_000)).toBe("1d45s");
  });
});

describe("/in", () => {
  test("delay and prompt; the prompt keeps its line breaks", () => {
    expect(ok("/in 2h30m check the oven\nand the lights")).toEqual({
      type: "create",
      when: { kind: "after", delayMs: 9_000_000 },
      timezone: "Europe/Berlin",
      prompt: "check the oven\nand the lights",
    });
    expect(ok("/in@switchboard_bot 45s ping", noZone)).toMatchObject({
      when: { delayMs: 45_000 },
      timezone: undefined,
    });
  });

  test("bad input says what was wrong and shows an example", () => {
    expect(refused("/in ten minutes call")).toEqual({
      ok: false,
      error: '"ten" is not a duration; use numbers with d, h, m or s, like 10m, 2h30m, 45s or 1d.',
      example: "/in 2h30m check the oven",
    });
    expect(refused("/in 10m").error).toBe("Say what should happen in 10m.");
    expect(refused("/in").error).toBe("Say how long to wait, then what to do.");
    expect(refused("/in 400d far away").error).toContain("the limit is 366d");
  });
});

describe("/at", () => {
  test("ISO and space-separated date-times are read in the conversation's zone", () => {
    const expected = Date.parse("2026-12-01T08:00:00Z"); // 09:00 CET
    expect(ok("/at 2026-12-01T09:00 call mum")).toMatchObject({
      when: { kind: "at", atMs: expected },
      prompt: "call mum",
    });
    expect(ok("/at 2026-12-01 09:00 call mum")).toMatchObject({
      when: { atMs: expected },
      prompt: "call mum",
    });
    expect(ok("/at 2026-12-01T09:00:30 x")).toMatchObject({ when: { atMs: expected + 30_000 } });
  });

  test("an explicit offset needs no zone", () => {
    expect(ok("/at 2026-12-01T09:00+02:00 x", noZone)).toMatchObject({
      when: { atMs: Date.parse("2026-12-01T07:00:00Z") },
    });
    expect(ok("/at 2026-12-01T09:00Z x", noZone)).toMatchObject({
      when: { atMs: Date.parse("2026-12-01T09:00:00Z") },
    });
  });

  test("a time of day is its next occurrence: later today, or tomorrow once it passed", () => {
    expect(ok("/at 11:00 stand-up")).toMatchObject({ when: { atMs: Date.parse("2026-11-30T10:00:00Z") } });
    expect(ok("/at 09:00 stand-up")).toMatchObject({ when: { atMs: Date.parse("2026-12-01T08:00:00Z") } });
    expect(ok("/at 10:15 now-ish")).toMatchObject({ when: { atMs: Date.parse("2026-12-01T09:15:00Z") } });
  });

  test("a local time in a DST gap moves forward by the gap", () => {
    const beforeGap: CommandContext = {
      nowMs: Date.parse("2026-03-28T12:00:00Z"),
      timezone: "Europe/Berlin",
    };
    expect(ok("/at 2026-03-29 02:30 x", beforeGap)).toMatchObject({
      when: { atMs: Date.parse("2026-03-29T01:30:00Z") }, // 03:30 CEST
    });
  });

  test("refusals", () => {
    expect(refused("/at 2026-12-01 09:00 x", noZone).error).toContain("Set it first with /tz");
    expect(refused("/at 09:00 x", noZone).error).toContain("/tz Europe/Berlin");
    expect(refused("/at 2026-02-30 09:00 x").error).toBe('"2026-02-30 09:00" is not a real date and time.');
    expect(refused("/at 25:00 x").error).toBe('"25:00" is not a time of day.');
    expect(refused("/at 2026-01-01 09:00 x").error).toBe("2026-01-01 09:00 is in the past.");
    expect(refused("/at tomorrow x").error).toContain("use 2026-12-01 09:00, 2026-12-01T09:00 or 09:00");
    expect(refused("/at 2026-12-01 09:00").example).toBe("/at 2026-12-01 09:00 call mum");
  });
});

describe("/every", () => {
  test("a duration makes an interval, five fields a cron expression", () => {
    expect(ok("/every 1d water the plants")).toEqual({
      type: "create",
      when: { kind: "interval", intervalMs: 86_400_000 },
      timezone: "Europe/Berlin",
      prompt: "water the plants",
    });
    expect(ok("/every 0 9 * * 1-5 summarise my inbox")).toEqual({
      type: "create",
      when: { kind: "cron", expression: "0 9 * * 1-5" },
      timezone: "Europe/Berlin",
      prompt: "summarise my inbox",
    });
  });

  test("refusals", () => {
    expect(refused("/every 1d x", noZone).error).toContain("time zone");
    expect(refused("/every 61 9 * * * x").error).toBe(
      '"61 9 * * *" is not a valid cron expression: Invalid value for minute: 61.',
    );
    expect(refused("/every 0 9 * * 1-5").error).toContain("neither a duration");
    expect(refused("/every 10x do it").error).toBe(
      '"10x" is not a duration; use numbers with d, h, m or s, like 30m or 1d.',
    );
    expect(refused("/every").example).toBe("/every 0 9 * * 1-5 summarise my inbox");
  });
});

describe("other commands", () => {
  test("/schedules, /cancel, /tz", () => {
    expect(ok("/schedules")).toEqual({ type: "list" });
    expect(ok("/cancel sch_123 please")).toEqual({ type: "cancel", id: "sch_123" });
    expect(refused("/cancel").error).toContain("/schedules lists their ids");
    expect(ok("/tz america/new_york")).toEqual({ type: "set-timezone", timezone: "America/New_York" });
    expect(refused("/tz Berlin").error).toBe(
      '"Berlin" is not an IANA time zone (like Europe/Berlin or America/New_York).',
    );
  });

  test("other text and other commands are not ours", () => {
    expect(parseScheduleCommand("in 10m do it", berlin)).toBeNull();
    expect(parseScheduleCommand("/start", berlin)).toBeNull();
    expect(parseScheduleCommand("/internal 10m", berlin)).toBeNull();
  });
});

function schedule(overrides: Partial<Schedule> & Pick<Schedule, "kind" | "spec" | "timezone">): Schedule {
  return {
    id: "sch_1",
    conversationId: "conv_1",
    replyTarget: "tg:1",
    channel: "telegram",
    createdBy: "user",
    prompt: "summarise my inbox",
    missedPolicy: "once",
    maxAttempts: 10,
    state: "active",
    nextAtMs: Date.parse("2026-12-07T08:00:00Z"),
    attempts: 0,
    retryAtMs: null,
    lastError: null,
    lastFiredAtMs: null,
    version: 1,
    createdAtMs: 0,
    updatedAtMs: 0,
    ...overrides,
  } as Schedule;
}

describe("formatting", () => {
  test("/schedules lists id, timing, next run in the conversation's zone and the prompt", () => {
    const list = formatScheduleList(
      [
        schedule({
          kind: "every",
          spec: { type: "cron", expression: "0 9 * * 1-5" },
          timezone: "Europe/Berlin",
        }),
        schedule({
          id: "sch_2",
          kind: "every",
          spec: { type: "interval", intervalMs: 9_000_000, anchorMs: 0 },
          timezone: "UTC",
          state: "paused",
          prompt: `a very long prompt ${"x".repeat(100)}`,
        }),
        schedule({
          id: "sch_3",
          kind: "at",
          spec: { type: "at", atMs: Date.parse("2026-12-07T08:00:00Z") },
          timezone: null,
          attempts: 2,
          retryAtMs: Date.parse("2026-12-07T08:00:03Z"),
        }),
      ],
      "Europe/Berlin",
    );
    expect(list.split("\n")).toEqual([
      "Schedules (times in Europe/Berlin):",
      "sch_1 · cron 0 9 * * 1-5 (Europe/Berlin) · next Mon 2026-12-07 09:00 · summarise my inbox",
      `sch_2 · every 2h30m · paused · a very long prompt ${"x".repeat(40)}…`,
      "sch_3 · once · next Mon 2026-12-07 09:00 (retrying; 2 attempts failed) · summarise my inbox",
    ]);
    expect(formatScheduleList([], null)).toContain("No schedules.");
  });

  test("the creation reply names the id, the first run and how to cancel", () => {
    const created = schedule({ kind: "at", spec: { type: "at", atMs: 0 }, timezone: null });
    expect(formatScheduleCreated(created, "America/New_York")).toBe(
      "Scheduled sch_1 (once, first run Mon 2026-12-07 03:00 America/New_York). Cancel with /cancel sch_1.",
    );
  });
});
