/**
 * Property tests for the schedule chat commands: any text a user can type is parsed without
 * throwing, every refusal comes with an example that itself parses, whatever is accepted is
 * usable, and durations survive a trip through formatDuration.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { formatDuration, parseDurationMs } from "../../schedules/duration.ts";
import { type CommandContext, parseScheduleCommand, SCHEDULE_COMMANDS } from "../../schedules/parse.ts";
import { hostileString } from "./support/mutate.ts";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
const DAY_MS = 86_400_000;

/** Now lies in 2026, before the 2026-12-01 of the /at example. */
const context: fc.Arbitrary<CommandContext> = fc.record({
  nowMs: fc.integer({ min: Date.parse("2026-01-01T00:00:00Z"), max: Date.parse("2026-11-30T00:00:00Z") }),
  timezone: fc.constantFrom(
    null,
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kathmandu",
    "Pacific/Chatham",
  ),
});

const word = fc.oneof(
  hostileString,
  fc.stringMatching(/^\d{1,25}[dhms]?(\d{1,4}[hms])?$/),
  fc.stringMatching(/^\d{4}-\d{2}-\d{2}([T ]\d{1,2}:\d{2}(:\d{2})?(Z|[+-]\d{2}:?\d{2})?)?$/),
  fc.stringMatching(/^\d{1,2}:\d{2}$/),
  fc.constantFrom("*", "*/5", "0", "9", "1-5", "MON-FRI", "60", "32", "Europe/Berlin", "Mars/Olympus"),
);

/** `/in`, `/at@bot`, `/EVERY` … followed by zero to eight words and odd whitespace. */
const commandText = fc
  .tuple(
    fc.constantFrom(...SCHEDULE_COMMANDS, "In", "EVERY"),
    fc.constantFrom("", "@switchboard_bot"),
    fc.array(word, { maxLength: 8 }),
    fc.constantFrom(" ", "  ", "\n", "\t"),
  )
  .map(([name, mention, words, gap]) => `/${name}${mention}${words.length > 0 ? gap : ""}${words.join(gap)}`);

describe("parseScheduleCommand", () => {
  test("never throws; refusals carry an example that parses; accepted commands are usable", () => {
    fc.assert(
      fc.property(fc.oneof(commandText, fc.string({ unit: "binary" })), context, (text, ctx) => {
        const parsed = parseScheduleCommand(text, ctx);
        if (parsed === null) return;
        if (!parsed.ok) {
          expect(parsed.error.length).toBeGreaterThan(0);
          const example = parseScheduleCommand(parsed.example, { ...ctx, timezone: "Europe/Berlin" });
          expect(example?.ok).toBe(true);
          return;
        }
        const { command } = parsed;
        if (command.type === "cancel") expect(command.id).toMatch(/^\S+$/);
        if (command.type !== "create") return;
        expect(command.prompt.trim()).toBe(command.prompt);
        expect(command.prompt.length).toBeGreaterThan(0);
        const { when } = command;
        switch (when.kind) {
          case "after":
            expect(Number.isSafeInteger(when.delayMs)).toBe(true);
            expect(when.delayMs).toBeGreaterThan(0);
            expect(when.delayMs).toBeLessThanOrEqual(366 * DAY_MS);
            break;
          case "at":
            expect(Number.isSafeInteger(when.atMs)).toBe(true);
            expect(when.atMs).toBeGreaterThan(ctx.nowMs);
            break;
          case "interval":
            expect(Number.isSafeInteger(when.intervalMs)).toBe(true);
            expect(when.intervalMs).toBeGreaterThan(0);
            break;
          case "cron":
            expect(when.expression.split(" ")).toHaveLength(5);
            break;
        }
      }),
      { numRuns: RUNS },
    );
  });

  test("text that is not a schedule command is left alone", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), context, (text, ctx) => {
        fc.pre(!/^\s*\/[a-z]/i.test(text));
        expect(parseScheduleCommand(text, ctx)).toBeNull();
      }),
      { numRuns: RUNS },
    );
  });
});

describe("durations", () => {
  test("whole seconds survive formatDuration → parseDurationMs", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 * 366 * 86_400 }), (seconds) => {
        expect(parseDurationMs(formatDuration(seconds * 1000))).toBe(seconds * 1000);
      }),
      { numRuns: RUNS },
    );
  });

  test("a parsed duration formats to a canonical text that parses to the same value", () => {
    const part = (unit: string) =>
      fc.option(
        fc.stringMatching(/^\d{1,6}$/).map((n) => `${n}${unit}`),
        { nil: "" },
      );
    fc.assert(
      fc.property(part("d"), part("h"), part("m"), part("s"), fc.boolean(), (d, h, m, s, upper) => {
        const text = upper ? `${d}${h}${m}${s}`.toUpperCase() : `${d}${h}${m}${s}`;
        const ms = parseDurationMs(text);
        if (ms === null) return;
        const canonical = formatDuration(ms);
        expect(parseDurationMs(canonical)).toBe(ms);
        expect(formatDuration(parseDurationMs(canonical) ?? 0)).toBe(canonical);
      }),
      { numRuns: RUNS },
    );
  });
});
