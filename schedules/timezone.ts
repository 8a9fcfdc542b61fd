/** IANA time zones through Intl: validation, wall-clock ↔ instant conversion, display. */

const formatters = new Map<string, Intl.DateTimeFormat>();

function wallFormatter(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      weekday: "short",
    });
    formatters.set(timezone, formatter);
  }
  return formatter;
}

/** The canonical spelling of an IANA zone (`europe/berlin` → `Europe/Berlin`), or null when Intl does not know it. */
export function canonicalTimeZone(timezone: string): string | null {
  if (timezone.trim() === "" || timezone !== timezone.trim()) return null;
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** A local date and time in some zone; month is 1-12. */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second?: number;
}

export interface ZonedParts extends Required<WallTime> {
  weekday: string;
}

/** The wall-clock reading of `instantMs` in `timezone`. */
export function toZonedParts(instantMs: number, timezone: string): ZonedParts {
  const parts: Record<string, string> = {};
  for (const part of wallFormatter(timezone).formatToParts(new Date(instantMs)))
    parts[part.type] = part.value;
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
    weekday: parts.weekday ?? "",
  };
}

function offsetMs(instantMs: number, timezone: string): number {
  const wall = toZonedParts(instantMs, timezone);
  const wallAsUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
  return wallAsUtc - Math.floor(instantMs / 1000) * 1000;
}

const DAY_MS = 86_400_000;

/**
 * The instant a wall-clock time names in `timezone`. Resolved like Temporal's "compatible"
 * disambiguation: a time that occurs twice (clocks go back) is its earlier occurrence; a time
 * that does not exist (clocks go forward) is moved forward by the length of the gap, so
 * 02:30 on the Berlin spring-forward day is 03:30 CEST.
 */
export function wallTimeToInstantMs(wall: WallTime, timezone: string): number {
  const wallAsUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second ?? 0);
  const offsetBefore = offsetMs(wallAsUtc - DAY_MS, timezone);
  const offsetAfter = offsetMs(wallAsUtc + DAY_MS, timezone);
  const candidates = [wallAsUtc - offsetBefore, wallAsUtc - offsetAfter].filter(
    (instant) => offsetMs(instant, timezone) === wallAsUtc - instant,
  );
  if (candidates.length > 0) return Math.min(...candidates);
  return wallAsUtc - offsetBefore;
}

/** `Mon 2026-12-07 09:00` in `timezone`, for chat replies. */
export function formatInZone(instantMs: number, timezone: string): string {
  const p = toZonedParts(instantMs, timezone);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${p.weekday} ${p.year}-${pad(p.month)}-${pad(p.day)} ${pad(p.hour)}:${pad(p.minute)}`;
}
