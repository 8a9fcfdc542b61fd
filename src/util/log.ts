/**
 * Structured logs, one event per line: JSON for machines, or readable lines for a terminal.
 * Secrets are redacted before anything is written, in either format.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFormat = "json" | "pretty";

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
  /** `json` (default): one object per line. `pretty`: time, level, event, fields, hint below. */
  format?: LogFormat;
  /** ANSI colours in the pretty format (a terminal that wants them). */
  color?: boolean;
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
    const time = new Date();
    const line =
      options.format === "pretty"
        ? prettyLine(time, level, event, { ...base, ...fields }, options.color ?? false)
        : JSON.stringify({ time: time.toISOString(), level, event, ...base, ...fields }, errorReplacer);
    write(redact(line));
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

const LEVEL_COLOR: Record<LogLevel, string> = { debug: "2", info: "36", warn: "33", error: "31" };

/**
 * `18:42:03.120 WARN  gateway.offline_model  key=value …`, and a `hint` on its own line below,
 * so what to do next stands out from what happened.
 */
function prettyLine(
  time: Date,
  level: LogLevel,
  event: string,
  fields: Record<string, unknown>,
  color: boolean,
): string {
  const paint = (code: string, text: string) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const { hint, ...rest } = fields;
  const pairs = Object.entries(rest)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${paint("2", `${key}=`)}${prettyValue(value)}`);
  const head = [
    paint("2", time.toISOString().slice(11, 23)),
    paint(LEVEL_COLOR[level], level.toUpperCase().padEnd(5)),
    paint("1", event),
    ...pairs,
  ].join(" ");
  return hint === undefined
    ? head
    : `${head}\n${" ".repeat(19)}${paint("1;32", `→ ${typeof hint === "string" ? hint : prettyValue(hint)}`)}`;
}

function prettyValue(value: unknown): string {
  if (typeof value === "string") return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value, errorReplacer) ?? String(value);
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = createLogger({ write: () => {} });
