/** Structured JSON logs, one object per line. Secrets are redacted before anything is written. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(event: string, fields?: Record<string, unknown>): void;
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  /** Values that must never appear in a log line (tokens, secrets); replaced by "[redacted]". */
  secrets?: readonly string[];
  write?: (line: string) => void;
  base?: Record<string, unknown>;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = ORDER[options.level ?? "info"];
  const secrets = (options.secrets ?? []).filter((s) => s.length >= 6);
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const base = options.base ?? {};
  const redact = (line: string): string =>
    secrets.reduce((text, secret) => text.split(secret).join("[redacted]"), line);
  const emit = (level: LogLevel, event: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < threshold) return;
    const record = { time: new Date().toISOString(), level, event, ...base, ...fields };
    write(redact(JSON.stringify(record, errorReplacer)));
  };
  return {
    debug: (e, f) => emit("debug", e, f),
    info: (e, f) => emit("info", e, f),
    warn: (e, f) => emit("warn", e, f),
    error: (e, f) => emit("error", e, f),
    child: (fields) => createLogger({ ...options, base: { ...base, ...fields } }),
  };
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, message: value.message, ...(code === undefined ? {} : { code }) };
  }
  return value;
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = createLogger({ write: () => {} });
