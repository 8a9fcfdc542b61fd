import { type Logger as BoltLogger, LogLevel } from "@slack/bolt";
import type { Logger } from "../../src/util/log.ts";

/**
 * Bolt's, web-api's and Socket Mode's logger interface over switchboard's logger, so their lines
 * are structured and redacted like every other. Bolt's debug chatter stays out; info passes only
 * when Bolt asks for it.
 */
export function boltLogger(logger: Logger): BoltLogger {
  let level = LogLevel.WARN;
  const text = (args: unknown[]) => args.map((a) => (a instanceof Error ? a.message : String(a))).join(" ");
  return {
    debug: () => {},
    info: (...args) => {
      if (level === LogLevel.INFO || level === LogLevel.DEBUG)
        logger.info("slack.bolt", { message: text(args) });
    },
    warn: (...args) => logger.warn("slack.bolt", { message: text(args) }),
    error: (...args) => logger.error("slack.bolt", { message: text(args) }),
    setLevel: (next) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => {},
  };
}
