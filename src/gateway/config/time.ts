/** Time: how long shutdown and an ambiguous reply wait, and the gateway's default time zone. */
import { type Env, fail, nonEmpty } from "../../util/env.ts";

/** SWITCHBOARD_SHUTDOWN_GRACE_MS: how long runs in flight may finish on SIGINT/SIGTERM. */
export function parseShutdownGraceMs(env: Env): number {
  const graceRaw = nonEmpty(env, "SWITCHBOARD_SHUTDOWN_GRACE_MS") ?? "10000";
  const shutdownGraceMs = Number(graceRaw);
  if (!Number.isInteger(shutdownGraceMs) || shutdownGraceMs < 0) {
    fail(
      "SWITCHBOARD_SHUTDOWN_GRACE_MS",
      `must be a whole number of milliseconds (got "${graceRaw}")`,
      "SWITCHBOARD_SHUTDOWN_GRACE_MS=10000",
    );
  }
  return shutdownGraceMs;
}

/** SWITCHBOARD_AMBIGUOUS_HOLD_MS: how long an ambiguous reply holds back its chat; `forever` is Infinity. */
export function parseAmbiguousHoldMs(env: Env): number {
  const holdRaw = nonEmpty(env, "SWITCHBOARD_AMBIGUOUS_HOLD_MS") ?? "300000";
  const ambiguousHoldMs = holdRaw === "forever" ? Number.POSITIVE_INFINITY : Number(holdRaw);
  if (
    !(
      ambiguousHoldMs === Number.POSITIVE_INFINITY ||
      (Number.isInteger(ambiguousHoldMs) && ambiguousHoldMs >= 0)
    )
  ) {
    fail(
      "SWITCHBOARD_AMBIGUOUS_HOLD_MS",
      `must be a whole number of milliseconds or "forever" (got "${holdRaw}")`,
      "SWITCHBOARD_AMBIGUOUS_HOLD_MS=300000",
    );
  }
  return ambiguousHoldMs;
}

/** SWITCHBOARD_TIMEZONE (default UTC): the zone of schedules, budgets and the agent's clock. */
export function parseTimezone(env: Env): string {
  const value = nonEmpty(env, "SWITCHBOARD_TIMEZONE") ?? "UTC";
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: value });
    return value;
  } catch {
    fail(
      "SWITCHBOARD_TIMEZONE",
      `is not an IANA time zone ("${value}")`,
      "SWITCHBOARD_TIMEZONE=Europe/Berlin",
    );
  }
}
