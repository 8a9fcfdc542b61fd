/**
 * One entry of SWITCHBOARD_CONFIG's `accounts.<channel>.<name>`, checked by its adapter's schema
 * (what every module's `fromAccount` does). Errors name `accounts.<channel>.<name>.<key>`, never
 * a value: the gateway expanded the `${VAR}` references, so values may be secrets.
 */
import type { z } from "zod";
import { fail } from "../src/util/env.ts";

export interface AccountSettingsSpec<Schema extends z.ZodType> {
  channel: string;
  name: string;
  /** The keys an account may have (besides `allowedUsers`, which the gateway takes out). */
  keys: readonly string[];
  /** The account as written (references expanded), to check its keys. */
  settings: Readonly<Record<string, unknown>>;
  /** What the schema reads: the settings with the file section and derived fields merged in. */
  input: Record<string, unknown>;
  schema: Schema;
  /** A complete account entry to show with an error. */
  example: string;
  /** The key an error of the whole account is named by (Telegram: `mode`, which picks its shape). */
  rootKey?: string;
  /** How errors name the platform (default: `channel`). */
  label?: string;
}

/** The account's config; throws `config_invalid` naming each unknown or invalid key. */
export function parseAccountSettings<Schema extends z.ZodType>(
  spec: AccountSettingsSpec<Schema>,
): z.output<Schema> {
  const where = `accounts.${spec.channel}.${spec.name}`;
  const unknown = Object.keys(spec.settings).filter((key) => !spec.keys.includes(key));
  if (unknown.length > 0)
    fail(
      "SWITCHBOARD_CONFIG",
      `has ${unknown.map((key) => `${where}.${key}`).join(", ")}, which a ${spec.label ?? spec.channel} account does not have (keys: ${spec.keys.join(", ")}, allowedUsers)`,
      spec.example,
    );
  const result = spec.schema.safeParse(spec.input);
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${where}.${issue.path.join(".") || spec.rootKey || "(account)"}: ${issue.message}`,
    );
    fail("SWITCHBOARD_CONFIG", `has an invalid account: ${problems.join("; ")}`, spec.example);
  }
  return result.data;
}
