import { Cron } from "croner";
import type { RecurringSpec } from "./types.ts";

/**
 * Occurrence arithmetic for recurring schedules.
 *
 * Cron expressions are evaluated by croner in the schedule's zone, with its DST rules:
 * - a fixed-time expression (single minute and hour, e.g. `30 2 * * *`) whose time falls in a
 *   spring-forward gap fires at the first valid time after the gap (03:00 in Berlin on
 *   2026-03-29), and fires once, at the first occurrence, on a fall-back day;
 * - an expression with a wildcard, step or list in minute/hour (e.g. `*\/30 2 * * *`) skips the
 *   missing times and fires on both occurrences of a repeated time.
 * Intervals are plain elapsed time from their anchor, so DST never changes their spacing.
 */

const CRON_CACHE_LIMIT = 1000;
const cronCache = new Map<string, Cron>();

function cronFor(expression: string, timezone: string): Cron {
  const key = `${timezone} ${expression}`;
  let cron = cronCache.get(key);
  if (!cron) {
    // No callback: croner only evaluates the pattern and never starts a timer.
    cron = new Cron(expression, { timezone, mode: "5-part" });
    if (cronCache.size >= CRON_CACHE_LIMIT) cronCache.clear();
    cronCache.set(key, cron);
  }
  return cron;
}

/** Why `expression` is not a 5-field cron expression, or null when it is one. */
export function cronExpressionProblem(expression: string): string | null {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) {
    return `a cron expression has 5 fields (minute hour day-of-month month day-of-week), this one has ${fields.length}`;
  }
  try {
    new Cron(expression, { mode: "5-part" });
    return null;
  } catch (error) {
    return (error as Error).message.replace(/^CronPattern: /, "");
  }
}

/** The first slot strictly after `afterMs`, or null when the expression never fires again. */
export function nextSlotAfter(spec: RecurringSpec, timezone: string, afterMs: number): number | null {
  if (spec.type === "interval") {
    if (afterMs < spec.anchorMs) return spec.anchorMs;
    const periods = Math.floor((afterMs - spec.anchorMs) / spec.intervalMs) + 1;
    return spec.anchorMs + periods * spec.intervalMs;
  }
  const next = cronFor(spec.expression, timezone).nextRun(new Date(afterMs));
  return next ? next.getTime() : null;
}

/**
 * The shortest gap between consecutive slots over the next `sampleSlots` slots after `fromMs`,
 * used to enforce the minimum interval. Null when the expression has fewer than two future slots.
 */
export function shortestGapMs(
  spec: RecurringSpec,
  timezone: string,
  fromMs: number,
  sampleSlots = 64,
): number | null {
  if (spec.type === "interval") return spec.intervalMs;
  let previous = nextSlotAfter(spec, timezone, fromMs);
  let shortest: number | null = null;
  for (let i = 1; i < sampleSlots && previous !== null; i++) {
    const next = nextSlotAfter(spec, timezone, previous);
    if (next === null) break;
    shortest = shortest === null ? next - previous : Math.min(shortest, next - previous);
    previous = next;
  }
  return shortest;
}
