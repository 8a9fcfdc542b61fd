/** Plain-text descriptions of schedules for chat replies (the outbox renders them per platform). */
import { formatDuration } from "./duration.ts";
import { formatInZone } from "./timezone.ts";
import type { Schedule } from "./types.ts";

const PROMPT_PREVIEW_CHARS = 60;

/** `once`, `every 2h30m`, `cron 0 9 * * 1-5 (Europe/Berlin)`. */
export function describeTiming(schedule: Schedule): string {
  switch (schedule.spec.type) {
    case "at":
      return "once";
    case "interval":
      return `every ${formatDuration(schedule.spec.intervalMs)}`;
    case "cron":
      return `cron ${schedule.spec.expression} (${schedule.timezone})`;
  }
}

function preview(prompt: string): string {
  const oneLine = prompt.replace(/\s+/g, " ").trim();
  return oneLine.length <= PROMPT_PREVIEW_CHARS ? oneLine : `${oneLine.slice(0, PROMPT_PREVIEW_CHARS - 1)}…`;
}

/** When it runs next, in `timezone` (the conversation's zone), or why it will not. */
function describeNext(schedule: Schedule, timezone: string): string {
  if (schedule.state === "paused") return "paused";
  const atMs = schedule.retryAtMs ?? schedule.nextAtMs;
  if (schedule.state !== "active" || atMs === null) return schedule.state;
  const retry = schedule.retryAtMs !== null ? ` (retrying; ${schedule.attempts} attempts failed)` : "";
  return `next ${formatInZone(atMs, timezone)}${retry}`;
}

/** One line per schedule: id · timing · next run in the conversation's zone · prompt. */
export function formatScheduleList(schedules: readonly Schedule[], timezone: string | null): string {
  if (schedules.length === 0)
    return "No schedules. Create one with /in 10m <prompt>, /at 09:00 <prompt> or /every 1d <prompt>.";
  const zone = timezone ?? "UTC";
  const lines = schedules.map(
    (s) => `${s.id} · ${describeTiming(s)} · ${describeNext(s, zone)} · ${preview(s.prompt)}`,
  );
  return [`Schedules (times in ${zone}):`, ...lines].join("\n");
}

/** The reply to a successful /in, /at or /every. */
export function formatScheduleCreated(schedule: Schedule, timezone: string | null): string {
  const zone = timezone ?? schedule.timezone ?? "UTC";
  const next =
    schedule.nextAtMs === null ? "" : `, first run ${formatInZone(schedule.nextAtMs, zone)} ${zone}`;
  return `Scheduled ${schedule.id} (${describeTiming(schedule)}${next}). Cancel with /cancel ${schedule.id}.`;
}
