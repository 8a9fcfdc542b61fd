/** Validation of schedule requests: input schemas, limits, and turning a request into stored timing. */

import { z } from "zod";
import { channelNameSchema } from "../channels/types.ts";
import { SwitchboardError } from "../src/errors.ts";
import { cronExpressionProblem, nextSlotAfter, shortestGapMs } from "./cadence.ts";
import { formatDuration } from "./duration.ts";
import { canonicalTimeZone } from "./timezone.ts";
import { MISSED_POLICIES, SCHEDULE_CREATORS, type ScheduleTiming } from "./types.ts";

/** Refusal limits, configurable per deployment. */
export interface ScheduleLimits {
  /** Active plus paused schedules one conversation may hold. Default 20. */
  maxSchedulesPerConversation: number;
  /**
   * Shortest spacing of a recurring schedule's slots. Default 300 000 (five minutes): a schedule
   * every minute is a model call a minute, which is almost always a mistake that costs money.
   */
  minIntervalMs: number;
  /** Longest prompt. Default 4000. */
  maxPromptChars: number;
}

export const DEFAULT_SCHEDULE_LIMITS: ScheduleLimits = {
  maxSchedulesPerConversation: 20,
  minIntervalMs: 300_000,
  maxPromptChars: 4000,
};

/** Beyond this, a time is more likely a unit mistake than a plan (and leaves Date's range sooner or later). */
export const MAX_AHEAD_MS = 10 * 366 * 86_400_000;

/** When a new schedule fires. `after` is stored as an `at`; recurring kinds need `timezone`. */
export const scheduleWhenSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("at"), atMs: z.number().int() }),
  z.object({ kind: z.literal("after"), delayMs: z.number().int().positive() }),
  z.object({ kind: z.literal("cron"), expression: z.string().min(1) }),
  z.object({
    kind: z.literal("interval"),
    intervalMs: z.number().int().positive(),
    /** The first slot; default: now + intervalMs. */
    firstAtMs: z.number().int().optional(),
  }),
]);
export type ScheduleWhen = z.infer<typeof scheduleWhenSchema>;

export const createScheduleInputSchema = z.object({
  /**
   * Makes the creation idempotent: when a schedule with this id exists, create returns it
   * unchanged. For callers that may repeat a creation after a crash (a redelivered chat command).
   */
  id: z
    .string()
    .regex(/^sch_[A-Za-z0-9_]{1,64}$/, 'schedule ids look like "sch_…"')
    .optional(),
  conversationId: z.string().min(1),
  /** The chat (conversation key) the schedule belongs to across /new; null for none. */
  chatKey: z.string().min(1).nullable().default(null),
  replyTarget: z.string().min(1),
  channel: channelNameSchema,
  createdBy: z.enum(SCHEDULE_CREATORS),
  prompt: z.string().trim().min(1, "the prompt is empty: say what should happen when it fires"),
  when: scheduleWhenSchema,
  /** IANA zone (e.g. Europe/Berlin); required for cron and interval schedules. */
  timezone: z.string().optional(),
  missedPolicy: z.enum(MISSED_POLICIES).default("once"),
  maxAttempts: z.number().int().min(1).max(1000).default(10),
});
export type CreateScheduleInput = z.input<typeof createScheduleInputSchema>;

export const editScheduleInputSchema = z.object({
  prompt: z.string().trim().min(1).optional(),
  when: scheduleWhenSchema.optional(),
  timezone: z.string().optional(),
  missedPolicy: z.enum(MISSED_POLICIES).optional(),
  maxAttempts: z.number().int().min(1).max(1000).optional(),
  /** Refuse the edit when the schedule changed since this version was read. */
  expectedVersion: z.number().int().positive().optional(),
});
export type EditScheduleInput = z.input<typeof editScheduleInputSchema>;

/** A refusal the caller can show: what was wrong, and in `details.hint` what to do. */
export function refuse(
  message: string,
  hint: string,
  details: Record<string, unknown> = {},
): SwitchboardError {
  return new SwitchboardError("input_invalid", message, { details: { hint, ...details } });
}

export function zodMessage(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join(".") || "input"}: ${issue.message}`).join("; ");
}

/** The canonical zone, null for an optional absent one; refuses unknown zones. */
export function resolveTimezone(timezone: string | undefined, required: boolean): string | null {
  if (timezone === undefined) {
    if (!required) return null;
    throw refuse(
      "A recurring schedule needs an explicit IANA time zone.",
      "Pass a zone such as Europe/Berlin or America/New_York (set the conversation's zone with /tz).",
    );
  }
  const canonical = canonicalTimeZone(timezone);
  if (canonical === null) {
    throw refuse(
      `"${timezone}" is not an IANA time zone this system knows.`,
      "Use a zone name like Europe/Berlin, America/New_York or UTC.",
      { timezone },
    );
  }
  return canonical;
}

function describeInstant(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} ms since the epoch` : date.toISOString();
}

/** Turns a requested time into stored timing and its first slot, enforcing the limits. */
export function planTiming(
  when: ScheduleWhen,
  timezoneInput: string | undefined,
  nowMs: number,
  limits: ScheduleLimits,
): { timing: ScheduleTiming; nextAtMs: number } {
  if (when.kind === "at" || when.kind === "after") {
    const atMs = when.kind === "at" ? when.atMs : nowMs + when.delayMs;
    if (atMs < nowMs - 1000) {
      throw refuse(
        `That time (${describeInstant(atMs)}) is in the past.`,
        "Pick a future time, or use a delay such as /in 10m.",
      );
    }
    if (atMs - nowMs > MAX_AHEAD_MS) {
      throw refuse(
        `That time (${describeInstant(atMs)}) is more than ten years ahead.`,
        "Check the unit: tools take delays in seconds, the service API in milliseconds.",
      );
    }
    const timezone = resolveTimezone(timezoneInput, false);
    return { timing: { kind: "at", spec: { type: "at", atMs }, timezone }, nextAtMs: atMs };
  }
  const timezone = resolveTimezone(timezoneInput, true) as string;
  if (when.kind === "cron") {
    const expression = when.expression.trim().split(/\s+/).join(" ");
    const problem = cronExpressionProblem(expression);
    if (problem) {
      throw refuse(
        `"${when.expression}" is not a valid cron expression: ${problem}.`,
        "Example: 0 9 * * 1-5 (weekdays at 09:00).",
        {
          expression: when.expression,
        },
      );
    }
    const spec = { type: "cron" as const, expression };
    const nextAtMs = nextSlotAfter(spec, timezone, nowMs);
    if (nextAtMs === null) {
      throw refuse(
        `"${expression}" never fires.`,
        "Check the day-of-month and month fields, e.g. 0 9 1 * *.",
      );
    }
    enforceMinInterval(shortestGapMs(spec, timezone, nowMs), limits);
    return { timing: { kind: "every", spec, timezone }, nextAtMs };
  }
  enforceMinInterval(when.intervalMs, limits);
  if (when.intervalMs > MAX_AHEAD_MS) {
    throw refuse(`An interval of ${when.intervalMs} ms is more than ten years.`, "Use a shorter interval.");
  }
  const anchorMs = when.firstAtMs ?? nowMs + when.intervalMs;
  const spec = { type: "interval" as const, intervalMs: when.intervalMs, anchorMs };
  const nextAtMs = anchorMs >= nowMs ? anchorMs : (nextSlotAfter(spec, timezone, nowMs) as number);
  return { timing: { kind: "every", spec, timezone }, nextAtMs };
}

function enforceMinInterval(gapMs: number | null, limits: ScheduleLimits): void {
  if (gapMs !== null && gapMs < limits.minIntervalMs) {
    throw refuse(
      `That schedule would fire every ${formatDuration(gapMs)}; recurring schedules fire at most once every ${formatDuration(limits.minIntervalMs)}.`,
      `Use an interval of at least ${formatDuration(limits.minIntervalMs)}, e.g. /every ${formatDuration(limits.minIntervalMs)} or a cron such as */${Math.max(1, Math.ceil(limits.minIntervalMs / 60_000))} * * * *.`,
      { gapMs, minIntervalMs: limits.minIntervalMs },
    );
  }
}

/** Refuses a prompt over the length limit. */
export function checkPrompt(prompt: string, limits: ScheduleLimits): void {
  if (prompt.length > limits.maxPromptChars) {
    throw refuse(
      `The prompt is ${prompt.length} characters; the limit is ${limits.maxPromptChars}.`,
      "Shorten it.",
    );
  }
}
