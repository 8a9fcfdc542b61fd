/**
 * Chat commands for schedules, parsed without side effects:
 *   /in <duration> <prompt>            /in 2h30m check the oven
 *   /at <date-time> <prompt>           /at 2026-12-01 09:00 call mum   (/at 09:00 … = next 09:00)
 *   /every <duration | cron> <prompt>  /every 0 9 * * 1-5 summarise my inbox
 *   /schedules   /cancel <id>   /tz <IANA zone>
 * Local times are read in the conversation's zone; a DST gap moves them forward by the gap and a
 * repeated time means its first occurrence (see wallTimeToInstantMs).
 */
import { cronExpressionProblem } from "./cadence.ts";
import { parseDurationMs } from "./duration.ts";
import type { ScheduleWhen } from "./plan.ts";
import { canonicalTimeZone, toZonedParts, type WallTime, wallTimeToInstantMs } from "./timezone.ts";

export type ScheduleCommand =
  /** Ready for ScheduleService.create (with the conversation and createdBy "user"). */
  | { type: "create"; when: ScheduleWhen; timezone: string | undefined; prompt: string }
  | { type: "list" }
  | { type: "cancel"; id: string }
  | { type: "set-timezone"; timezone: string };

export type CommandParse =
  | { ok: true; command: ScheduleCommand }
  /** The command was recognised but its arguments were wrong: show `error` and `example`. */
  | { ok: false; error: string; example: string };

export interface CommandContext {
  nowMs: number;
  /** The conversation's IANA zone, or null when it never set one with /tz. */
  timezone: string | null;
}

export const SCHEDULE_COMMANDS = ["in", "at", "every", "schedules", "cancel", "tz"] as const;

const MAX_DELAY_MS = 366 * 86_400_000;
const EXAMPLES = {
  in: "/in 2h30m check the oven",
  at: "/at 2026-12-01 09:00 call mum",
  every: "/every 0 9 * * 1-5 summarise my inbox",
  cancel: "/cancel sch_0mpv1f0g0001h381b2d0433",
  tz: "/tz Europe/Berlin",
} as const;

/** The first `count` words of `text`, and the rest with its line breaks intact (prompts keep their layout). */
function takeWords(text: string, count: number): { words: string[]; rest: string } {
  const words: string[] = [];
  let rest = text.trimStart();
  for (let i = 0; i < count; i++) {
    const match = /^(\S+)\s*/.exec(rest);
    if (!match?.[1]) break;
    words.push(match[1]);
    rest = rest.slice(match[0].length);
  }
  return { words, rest: rest.trim() };
}

function refusal(error: string, example: string): CommandParse {
  return { ok: false, error, example };
}

/** Splits `/name@bot rest` into the command name and the rest; null for other text. */
function splitCommand(text: string): { name: string; rest: string } | null {
  const match = /^\/([a-z]+)(?:@\S+)?(?:\s+([\s\S]*))?$/i.exec(text.trim());
  if (!match?.[1]) return null;
  return { name: match[1].toLowerCase(), rest: (match[2] ?? "").trim() };
}

/**
 * Parses one of the schedule commands. Null when `text` is not one of them (let other handlers
 * see it); otherwise a command or a refusal saying what was wrong, with an example.
 */
export function parseScheduleCommand(text: string, context: CommandContext): CommandParse | null {
  const split = splitCommand(text);
  if (!split || !(SCHEDULE_COMMANDS as readonly string[]).includes(split.name)) return null;
  const { rest } = split;
  switch (split.name as (typeof SCHEDULE_COMMANDS)[number]) {
    case "schedules":
      return { ok: true, command: { type: "list" } };
    case "cancel": {
      const id = rest.split(/\s+/)[0] ?? "";
      if (id === "")
        return refusal("Say which schedule to cancel; /schedules lists their ids.", EXAMPLES.cancel);
      return { ok: true, command: { type: "cancel", id } };
    }
    case "tz": {
      if (rest === "") return refusal("Give an IANA time zone name.", EXAMPLES.tz);
      const timezone = canonicalTimeZone(rest);
      if (timezone === null) {
        return refusal(
          `"${rest}" is not an IANA time zone (like Europe/Berlin or America/New_York).`,
          EXAMPLES.tz,
        );
      }
      return { ok: true, command: { type: "set-timezone", timezone } };
    }
    case "in":
      return parseIn(rest, context);
    case "at":
      return parseAt(rest, context);
    case "every":
      return parseEvery(rest, context);
  }
}

function parseIn(rest: string, context: CommandContext): CommandParse {
  const { words, rest: prompt } = takeWords(rest, 1);
  const token = words[0] ?? "";
  const delayMs = parseDurationMs(token);
  if (delayMs === null) {
    return refusal(
      token === ""
        ? "Say how long to wait, then what to do."
        : `"${token}" is not a duration; use numbers with d, h, m or s, like 10m, 2h30m, 45s or 1d.`,
      EXAMPLES.in,
    );
  }
  if (delayMs > MAX_DELAY_MS) return refusal(`${token} is too far ahead; the limit is 366d.`, EXAMPLES.in);
  if (prompt === "") return refusal(`Say what should happen in ${token}.`, EXAMPLES.in);
  return {
    ok: true,
    command: {
      type: "create",
      when: { kind: "after", delayMs },
      timezone: context.timezone ?? undefined,
      prompt,
    },
  };
}

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{1,2}):(\d{2})(?::(\d{2}))?(Z|[+-]\d{2}:?\d{2})?$/i;
const TIME_OF_DAY = /^(\d{1,2}):(\d{2})$/;

function parseAt(rest: string, context: CommandContext): CommandParse {
  const { words } = takeWords(rest, 2);
  // `2026-12-01 09:00` spans two words; `2026-12-01T09:00` and `09:00` one.
  const twoWord = words.length >= 2 && /^\d{4}-\d{2}-\d{2}$/.test(words[0] ?? "");
  const { words: stampWords, rest: prompt } = takeWords(rest, twoWord ? 2 : 1);
  const stamp = stampWords.join(" ");
  if (stamp === "") return refusal("Say when, then what to do.", EXAMPLES.at);

  let atMs: number;
  const time = TIME_OF_DAY.exec(stamp);
  if (time) {
    if (!context.timezone) return needZone(EXAMPLES.at);
    const hour = Number(time[1]);
    const minute = Number(time[2]);
    if (hour > 23 || minute > 59) return refusal(`"${stamp}" is not a time of day.`, EXAMPLES.at);
    atMs = nextTimeOfDay(hour, minute, context.nowMs, context.timezone);
  } else if (ISO_DATE_TIME.test(stamp)) {
    const resolved = parseDateTimeMs(stamp, context.timezone);
    if (!resolved.ok)
      return resolved.reason === "zone" ? needZone(EXAMPLES.at) : refusal(resolved.error, EXAMPLES.at);
    atMs = resolved.atMs;
  } else {
    return refusal(
      `"${stamp}" is not a date and time; use 2026-12-01 09:00, 2026-12-01T09:00 or 09:00.`,
      EXAMPLES.at,
    );
  }
  if (atMs <= context.nowMs) return refusal(`${stamp} is in the past.`, EXAMPLES.at);
  if (prompt === "") return refusal(`Say what should happen at ${stamp}.`, EXAMPLES.at);
  return {
    ok: true,
    command: { type: "create", when: { kind: "at", atMs }, timezone: context.timezone ?? undefined, prompt },
  };
}

function parseEvery(rest: string, context: CommandContext): CommandParse {
  const { words: first, rest: afterFirst } = takeWords(rest, 1);
  if (first.length === 0)
    return refusal("Say how often (a duration or 5 cron fields), then what to do.", EXAMPLES.every);
  if (!context.timezone) return needZone(EXAMPLES.every);
  const intervalMs = parseDurationMs(first[0] ?? "");
  if (intervalMs !== null) {
    const prompt = afterFirst;
    if (prompt === "") return refusal(`Say what should happen every ${first[0]}.`, EXAMPLES.every);
    return {
      ok: true,
      command: { type: "create", when: { kind: "interval", intervalMs }, timezone: context.timezone, prompt },
    };
  }
  // A minute field never holds letters, so `10x` was meant as a duration.
  if (/^\d+[a-z]+$/i.test(first[0] ?? "")) {
    return refusal(
      `"${first[0]}" is not a duration; use numbers with d, h, m or s, like 30m or 1d.`,
      EXAMPLES.every,
    );
  }
  const { words, rest: prompt } = takeWords(rest, 5);
  if (words.length < 5 || prompt === "") {
    return refusal(
      `"${rest}" is neither a duration (like 30m) nor 5 cron fields followed by what to do.`,
      EXAMPLES.every,
    );
  }
  const expression = words.slice(0, 5).join(" ");
  const problem = cronExpressionProblem(expression);
  if (problem) return refusal(`"${expression}" is not a valid cron expression: ${problem}.`, EXAMPLES.every);
  return {
    ok: true,
    command: {
      type: "create",
      when: { kind: "cron", expression },
      timezone: context.timezone,
      prompt,
    },
  };
}

/**
 * The instant an ISO-like date-time names: `2026-12-01T09:00`, `2026-12-01 09:00:30`, with an
 * optional `Z` or `±hh:mm` offset. Without an offset it is read in `timezone` (`reason: "zone"`
 * when that is null).
 */
export function parseDateTimeMs(
  stamp: string,
  timezone: string | null,
): { ok: true; atMs: number } | { ok: false; reason: "format" | "zone"; error: string } {
  const full = ISO_DATE_TIME.exec(stamp.trim());
  if (!full) {
    return { ok: false, reason: "format", error: `"${stamp}" is not a date and time like 2026-12-01T09:00.` };
  }
  const wall: Required<WallTime> = {
    year: Number(full[1]),
    month: Number(full[2]),
    day: Number(full[3]),
    hour: Number(full[4]),
    minute: Number(full[5]),
    second: Number(full[6] ?? 0),
  };
  if (!isRealWallTime(wall))
    return { ok: false, reason: "format", error: `"${stamp}" is not a real date and time.` };
  const offset = full[7];
  if (offset) {
    const utcMs = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
    return { ok: true, atMs: utcMs - offsetMs(offset) };
  }
  if (!timezone) {
    return {
      ok: false,
      reason: "zone",
      error: `"${stamp}" has no UTC offset and no time zone is known to read it in.`,
    };
  }
  return { ok: true, atMs: wallTimeToInstantMs(wall, timezone) };
}

function needZone(example: string): CommandParse {
  return refusal(
    "I don't know this conversation's time zone yet. Set it first with /tz, e.g. /tz Europe/Berlin.",
    example,
  );
}

function nextTimeOfDay(hour: number, minute: number, nowMs: number, timezone: string): number {
  const today = toZonedParts(nowMs, timezone);
  const candidate = wallTimeToInstantMs({ ...today, hour, minute, second: 0 }, timezone);
  if (candidate > nowMs) return candidate;
  const tomorrow = new Date(Date.UTC(today.year, today.month - 1, today.day + 1));
  return wallTimeToInstantMs(
    {
      year: tomorrow.getUTCFullYear(),
      month: tomorrow.getUTCMonth() + 1,
      day: tomorrow.getUTCDate(),
      hour,
      minute,
      second: 0,
    },
    timezone,
  );
}

function isRealWallTime(wall: Required<WallTime>): boolean {
  const date = new Date(Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second));
  return (
    date.getUTCFullYear() === wall.year &&
    date.getUTCMonth() === wall.month - 1 &&
    date.getUTCDate() === wall.day &&
    date.getUTCHours() === wall.hour &&
    date.getUTCMinutes() === wall.minute &&
    wall.second < 60
  );
}

function offsetMs(offset: string): number {
  if (offset.toUpperCase() === "Z") return 0;
  const sign = offset.startsWith("-") ? -1 : 1;
  const digits = offset.slice(1).replace(":", "");
  return sign * (Number(digits.slice(0, 2)) * 3_600_000 + Number(digits.slice(2, 4)) * 60_000);
}
