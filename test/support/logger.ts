import { createLogger, type Logger, type LogLevel } from "../../src/util/log.ts";

export interface LogRecord {
  level: LogLevel;
  event: string;
  [field: string]: unknown;
}

/**
 * The project's logger (redaction included), writing parsed records to `records` instead of
 * stderr, so a test asserts on what an operator would read.
 */
export function recordingLogger(options: { secrets?: readonly string[] } = {}): Logger & {
  records: LogRecord[];
  lines: string[];
} {
  const records: LogRecord[] = [];
  const lines: string[] = [];
  const logger = createLogger({
    level: "debug",
    ...(options.secrets ? { secrets: options.secrets } : {}),
    write: (line) => {
      lines.push(line);
      records.push(JSON.parse(line) as LogRecord);
    },
  });
  return Object.assign(logger, { records, lines });
}
