import { z } from "zod";
import { channelNameSchema } from "../../channels/types.ts";
import {
  MISSED_POLICIES,
  OCCURRENCE_STATES,
  type Occurrence,
  SCHEDULE_CREATORS,
  SCHEDULE_STATES,
  type Schedule,
  type ScheduleTiming,
} from "../../schedules/types.ts";
import { SwitchboardError } from "../errors.ts";

/**
 * Rows of the `schedules` and `schedule_occurrences` tables, as every backend writes them. On the
 * way back an integer column is a number from SQLite and may be a decimal string from PostgreSQL
 * (BIGINT); `parseScheduleRow` and `parseOccurrenceRow` validate a row and make numbers of both.
 */
export interface ScheduleRow {
  id: string;
  conversation_id: string;
  chat_key: string | null;
  reply_target: string;
  channel: string;
  created_by: string;
  prompt: string;
  kind: string;
  at_ms: number | null;
  cron: string | null;
  interval_ms: number | null;
  anchor_ms: number | null;
  timezone: string | null;
  missed_policy: string;
  max_attempts: number;
  state: string;
  next_at_ms: number | null;
  due_at_ms: number | null;
  attempts: number;
  retry_at_ms: number | null;
  last_error: string | null;
  last_fired_at_ms: number | null;
  version: number;
  created_at_ms: number;
  updated_at_ms: number;
}

export interface OccurrenceRow {
  schedule_id: string;
  scheduled_for_ms: number;
  schedule_version: number;
  state: string;
  attempts: number;
  late_by_ms: number | null;
  run_id: string | null;
  last_error: string | null;
  lease_owner: string | null;
  lease_expires_at_ms: number | null;
  fencing_token: number;
  created_at_ms: number;
  updated_at_ms: number;
}

/** An integer column: a number (SQLite, PostgreSQL INTEGER) or a decimal string (PostgreSQL BIGINT). */
const integer = (check = z.number().int()) =>
  z
    .union([
      z.number(),
      z
        .string()
        .regex(/^-?\d+$/)
        .transform(Number),
    ])
    .pipe(check);

const scheduleRowSchema = z.object({
  id: z.string(),
  conversation_id: z.string(),
  chat_key: z.string().nullable(),
  reply_target: z.string(),
  channel: channelNameSchema,
  created_by: z.enum(SCHEDULE_CREATORS),
  prompt: z.string(),
  kind: z.enum(["at", "every"]),
  at_ms: integer().nullable(),
  cron: z.string().nullable(),
  interval_ms: integer(z.number().int().positive()).nullable(),
  anchor_ms: integer().nullable(),
  timezone: z.string().nullable(),
  missed_policy: z.enum(MISSED_POLICIES),
  max_attempts: integer(z.number().int().positive()),
  state: z.enum(SCHEDULE_STATES),
  next_at_ms: integer().nullable(),
  due_at_ms: integer().nullable(),
  attempts: integer(z.number().int().nonnegative()),
  retry_at_ms: integer().nullable(),
  last_error: z.string().nullable(),
  last_fired_at_ms: integer().nullable(),
  version: integer(z.number().int().positive()),
  created_at_ms: integer(),
  updated_at_ms: integer(),
});

const occurrenceRowSchema = z.object({
  schedule_id: z.string(),
  scheduled_for_ms: integer(),
  schedule_version: integer(),
  state: z.enum(OCCURRENCE_STATES),
  attempts: integer(z.number().int().nonnegative()),
  late_by_ms: integer().nullable(),
  run_id: z.string().nullable(),
  last_error: z.string().nullable(),
  lease_owner: z.string().nullable(),
  lease_expires_at_ms: integer().nullable(),
  fencing_token: integer(z.number().int().nonnegative()),
  created_at_ms: integer(),
  updated_at_ms: integer(),
});

type ParsedScheduleRow = z.infer<typeof scheduleRowSchema>;

function corrupt(what: string, id: string, problem: string): SwitchboardError {
  return new SwitchboardError(
    "schema_unsupported",
    `Stored ${what} ${id} is not readable by this switchboard (${problem}). ` +
      "It was written by a newer version or edited by hand: upgrade switchboard or restore a backup.",
  );
}

/** A stored schedule row, validated, with numbers for its integers; throws `schema_unsupported`. */
export function parseScheduleRow(raw: unknown): ParsedScheduleRow {
  const parsed = scheduleRowSchema.safeParse(raw);
  if (!parsed.success) {
    throw corrupt("schedule", String((raw as { id?: unknown })?.id), z.prettifyError(parsed.error));
  }
  return parsed.data;
}

/** A stored occurrence row, validated, with numbers for its integers; throws `schema_unsupported`. */
export function parseOccurrenceRow(raw: unknown): z.infer<typeof occurrenceRowSchema> {
  const parsed = occurrenceRowSchema.safeParse(raw);
  if (!parsed.success) {
    const key = raw as Partial<OccurrenceRow>;
    throw corrupt(
      "occurrence",
      `${key?.schedule_id}:${key?.scheduled_for_ms}`,
      z.prettifyError(parsed.error),
    );
  }
  return parsed.data;
}

function toTiming(row: ParsedScheduleRow): ScheduleTiming {
  if (row.kind === "at" && row.at_ms !== null) {
    return { kind: "at", spec: { type: "at", atMs: row.at_ms }, timezone: row.timezone };
  }
  if (row.kind === "every" && row.timezone !== null) {
    if (row.cron !== null)
      return { kind: "every", spec: { type: "cron", expression: row.cron }, timezone: row.timezone };
    if (row.interval_ms !== null && row.anchor_ms !== null) {
      return {
        kind: "every",
        spec: { type: "interval", intervalMs: row.interval_ms, anchorMs: row.anchor_ms },
        timezone: row.timezone,
      };
    }
  }
  throw corrupt("schedule", row.id, `kind ${row.kind} without its timing columns`);
}

/** The schedule a stored row holds; throws `schema_unsupported` for a row it cannot read. */
export function toSchedule(raw: unknown): Schedule {
  const row = parseScheduleRow(raw);
  return {
    id: row.id,
    conversationId: row.conversation_id,
    chatKey: row.chat_key,
    replyTarget: row.reply_target,
    channel: row.channel,
    createdBy: row.created_by,
    prompt: row.prompt,
    ...toTiming(row),
    missedPolicy: row.missed_policy,
    maxAttempts: row.max_attempts,
    state: row.state,
    nextAtMs: row.next_at_ms,
    attempts: row.attempts,
    retryAtMs: row.retry_at_ms,
    lastError: row.last_error,
    lastFiredAtMs: row.last_fired_at_ms,
    version: row.version,
    createdAtMs: row.created_at_ms,
    updatedAtMs: row.updated_at_ms,
  };
}

/** The occurrence a stored row holds; throws `schema_unsupported` for a row it cannot read. */
export function toOccurrence(raw: unknown): Occurrence {
  const row = parseOccurrenceRow(raw);
  return {
    scheduleId: row.schedule_id,
    scheduledForMs: row.scheduled_for_ms,
    scheduleVersion: row.schedule_version,
    state: row.state,
    attempts: row.attempts,
    lateByMs: row.late_by_ms,
    runId: row.run_id,
    lastError: row.last_error,
    leaseOwner: row.lease_owner,
    leaseExpiresAtMs: row.lease_expires_at_ms,
    fencingToken: row.fencing_token,
    createdAtMs: row.created_at_ms,
    updatedAtMs: row.updated_at_ms,
  };
}

type TimingColumns = Pick<ScheduleRow, "kind" | "at_ms" | "cron" | "interval_ms" | "anchor_ms" | "timezone">;

export function timingColumns(timing: ScheduleTiming): TimingColumns {
  const none = { at_ms: null, cron: null, interval_ms: null, anchor_ms: null };
  switch (timing.spec.type) {
    case "at":
      return { ...none, kind: "at", at_ms: timing.spec.atMs, timezone: timing.timezone };
    case "cron":
      return { ...none, kind: "every", cron: timing.spec.expression, timezone: timing.timezone };
    case "interval":
      return {
        ...none,
        kind: "every",
        interval_ms: timing.spec.intervalMs,
        anchor_ms: timing.spec.anchorMs,
        timezone: timing.timezone,
      };
  }
}

/** The row a new schedule is inserted as; an active one is due at its retry time or its slot. */
export function toScheduleRow(schedule: Schedule): ScheduleRow {
  return {
    id: schedule.id,
    conversation_id: schedule.conversationId,
    chat_key: schedule.chatKey,
    reply_target: schedule.replyTarget,
    channel: schedule.channel,
    created_by: schedule.createdBy,
    prompt: schedule.prompt,
    ...timingColumns(schedule),
    missed_policy: schedule.missedPolicy,
    max_attempts: schedule.maxAttempts,
    state: schedule.state,
    next_at_ms: schedule.nextAtMs,
    due_at_ms: schedule.state === "active" ? (schedule.retryAtMs ?? schedule.nextAtMs) : null,
    attempts: schedule.attempts,
    retry_at_ms: schedule.retryAtMs,
    last_error: schedule.lastError,
    last_fired_at_ms: schedule.lastFiredAtMs,
    version: schedule.version,
    created_at_ms: schedule.createdAtMs,
    updated_at_ms: schedule.updatedAtMs,
  };
}
