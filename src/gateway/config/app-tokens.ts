/** SWITCHBOARD_APP_TOKENS: the tokens of applications that may use the conversation API only. */
import { APP_NAME } from "../../../channels/api/keys.ts";
import { type Env, fail, nonEmpty } from "../../util/env.ts";
import type { AppTokens } from "../http/api-caller.ts";
import type { OperatorTokens } from "../http/auth.ts";

export const APP_TOKENS_ENV = "SWITCHBOARD_APP_TOKENS";

/**
 * `crm=<token>,alerts=<token>`: names of 1-64 characters of A-Z a-z 0-9 . _ -, tokens of 16+
 * characters, each distinct from every other app's and operator's, so a token names one caller.
 */
export function parseAppTokens(
  env: Env,
  operators: { operatorToken: string | null; operatorTokens: OperatorTokens },
): AppTokens {
  const raw = nonEmpty(env, APP_TOKENS_ENV);
  if (raw === undefined) return [];
  const example = `${APP_TOKENS_ENV}=crm=$(openssl rand -hex 24),alerts=$(openssl rand -hex 24)`;
  const taken = new Set([
    ...(operators.operatorToken === null ? [] : [operators.operatorToken]),
    ...operators.operatorTokens.map((operator) => operator.token),
  ]);
  const apps: Array<{ name: string; token: string }> = [];
  for (const pair of raw
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const at = pair.indexOf("=");
    const name = at < 0 ? pair : pair.slice(0, at).trim();
    const token = at < 0 ? "" : pair.slice(at + 1).trim();
    if (!APP_NAME.test(name))
      fail(
        APP_TOKENS_ENV,
        `names an app "${name.slice(0, 70)}"; use 1-64 characters of A-Z a-z 0-9 . _ -`,
        example,
      );
    if (token.length < 16)
      fail(
        APP_TOKENS_ENV,
        `gives ${name} a token shorter than 16 characters (write name=token pairs)`,
        example,
      );
    if (apps.some((app) => app.name === name)) fail(APP_TOKENS_ENV, `names ${name} twice`, example);
    if (taken.has(token) || apps.some((app) => app.token === token))
      fail(
        APP_TOKENS_ENV,
        `gives ${name} a token already in use (by another app or an operator); each needs its own`,
        example,
      );
    apps.push({ name, token });
  }
  return apps;
}
