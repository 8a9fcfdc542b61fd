/**
 * Readers of environment variables. Each refusal is a `config_invalid` error that names the
 * variable, says what is wrong and gives an example, so the gateway can exit 78 with it.
 */
import type { z } from "zod";
import { SwitchboardError } from "../errors.ts";

/** The process environment, or the variables a test passes instead. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Refuses `variable`: "<variable> <problem>. Example: <example>". */
export function fail(variable: string, problem: string, example: string): never {
  throw new SwitchboardError("config_invalid", `${variable} ${problem}. Example: ${example}`, {
    details: { variable },
  });
}

/** The trimmed value of `name`, or undefined when it is unset or blank. */
export function nonEmpty(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/** An http(s) URL without trailing slashes, or undefined when unset. */
export function parseUrl(env: Env, name: string, example: string): string | undefined {
  const raw = nonEmpty(env, name);
  if (!raw) return undefined;
  try {
    const url = new URL(raw);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("protocol");
  } catch {
    fail(name, `is not an http(s) URL ("${raw}")`, `${name}=${example}`);
  }
  return raw.replace(/\/+$/, "");
}

/** A whole number within bounds, or the fallback when unset; anything else names the variable. */
export function parseIntegerIn(
  env: Env,
  name: string,
  fallback: number,
  bounds: { min: number; max?: number; what: string },
): number {
  const raw = nonEmpty(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  const { min, max, what } = bounds;
  if (!Number.isInteger(value) || value < min || (max !== undefined && value > max))
    fail(
      name,
      `must be ${what} ${max === undefined ? `of at least ${min}` : `from ${min} to ${max}`} (got "${raw}")`,
      `${name}=${fallback}`,
    );
  return value;
}

/** A whole number of at least 1, or the fallback when unset. */
export function parsePositiveInteger(env: Env, name: string, fallback: number): number {
  return parseIntegerIn(env, name, fallback, { min: 1, what: "a whole number" });
}

/**
 * A whole number bounded and defaulted as `field` says (`z.number().int().min(…).max(…).default(…)`),
 * so a bound is written once, in the schema that also validates the value where it is used.
 */
export function parseIntegerField(
  env: Env,
  name: string,
  field: z.ZodDefault<z.ZodNumber>,
  what: string,
): number {
  const number = field.unwrap();
  const fallback = field.def.defaultValue;
  if (number.minValue === null || !Number.isFinite(number.minValue))
    throw new Error(`${name}: its schema field needs a lower bound (.min or .positive)`);
  const max = number.maxValue;
  return parseIntegerIn(env, name, fallback, {
    min: Math.ceil(number.minValue),
    ...(max !== null && Number.isFinite(max) ? { max } : {}),
    what,
  });
}

/** `on` or `off`, or the fallback when unset. */
export function onOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = nonEmpty(env, name);
  if (raw === undefined) return fallback;
  if (raw !== "on" && raw !== "off")
    fail(name, `must be on or off (got "${raw}")`, `${name}=${fallback ? "off" : "on"}`);
  return raw === "on";
}

/**
 * Validates settings assembled from variables with the schema that owns them; the first issue is
 * reported against the variable its field came from (`fields`: field name → variable and example).
 * The value is never echoed (it may be a token).
 */
export function parseWithSchema<Schema extends z.ZodType>(
  schema: Schema,
  input: unknown,
  fields: Readonly<Record<string, { variable: string; example: string }>>,
): z.output<Schema> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = String(issue.path[0] ?? "");
  const source = fields[field];
  if (!source)
    throw new SwitchboardError("config_invalid", `${field || "(settings)"}: ${issue.message}`, {
      details: { field },
    });
  fail(source.variable, `is not valid: ${issue.message}`, `${source.variable}=${source.example}`);
}
