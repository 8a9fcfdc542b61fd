/** Secret values: which variables hold them, and keeping them out of log lines and error messages. */
import { type Env, nonEmpty } from "../../util/env.ts";
import { CHANNEL_MODULES, PLATFORM_CHANNELS } from "../channels.ts";

/** Variables whose values are secrets: never written to a log line or an error message. */
export const SECRET_VARIABLES: readonly string[] = [
  ...PLATFORM_CHANNELS.flatMap((name) => CHANNEL_MODULES[name].secretVariables),
  "OPENROUTER_API_KEY",
  "OPENAI_COMPATIBLE_API_KEY",
  "SWITCHBOARD_OPERATOR_TOKEN",
  "SWITCHBOARD_WEB_TOKEN",
  "SWITCHBOARD_METRICS_TOKEN",
  "SWITCHBOARD_BRAVE_API_KEY",
  "SWITCHBOARD_APPROVAL_SECRET",
];

/** `text` with every secret value of `env` replaced by "[redacted]" (config errors echo values). */
export function redactSecrets(text: string, env: Env): string {
  return SECRET_VARIABLES.map((name) => env[name]?.trim())
    .filter((value): value is string => value !== undefined && value.length >= 6)
    .reduce((redacted, value) => redacted.split(value).join("[redacted]"), text);
}

/** The secret values met while loading, in the order met; `read` takes a variable's value as one. */
export interface SecretCollector {
  readonly values: string[];
  /** The trimmed value of `variable` (undefined when unset or blank), kept as a secret. */
  read(variable: string): string | undefined;
}

export function collectSecrets(env: Env): SecretCollector {
  const values: string[] = [];
  return {
    values,
    read(variable) {
      const value = nonEmpty(env, variable);
      if (value) values.push(value);
      return value;
    },
  };
}
