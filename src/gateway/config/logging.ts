/** The log: its level (SWITCHBOARD_LOG_LEVEL) and format (SWITCHBOARD_LOG_FORMAT). */
import { type Env, fail, nonEmpty } from "../../util/env.ts";
import type { LogFormat, LogLevel } from "../../util/log.ts";

export function parseLogLevel(env: Env): LogLevel {
  const logLevel = (nonEmpty(env, "SWITCHBOARD_LOG_LEVEL") ?? "info") as LogLevel;
  if (!["debug", "info", "warn", "error"].includes(logLevel)) {
    fail(
      "SWITCHBOARD_LOG_LEVEL",
      `must be debug, info, warn or error (got "${logLevel}")`,
      "SWITCHBOARD_LOG_LEVEL=info",
    );
  }
  return logLevel;
}

/** null: unset, so pretty on a terminal and JSON otherwise (decided at start). */
export function parseLogFormat(env: Env): LogFormat | null {
  const logFormat = (nonEmpty(env, "SWITCHBOARD_LOG_FORMAT") ?? null) as LogFormat | null;
  if (logFormat !== null && logFormat !== "json" && logFormat !== "pretty") {
    fail(
      "SWITCHBOARD_LOG_FORMAT",
      `must be json or pretty (got "${logFormat}"); unset, it is pretty on a terminal and JSON otherwise`,
      "SWITCHBOARD_LOG_FORMAT=json",
    );
  }
  return logFormat;
}
