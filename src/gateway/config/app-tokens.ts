/** SWITCHBOARD_APP_TOKENS: the tokens of applications that may use the conversation API only. */
import { APP_NAME } from "../../../channels/api/keys.ts";
import { type Env, nonEmpty } from "../../util/env.ts";
import type { AppTokens } from "../http/api-caller.ts";
import type { OperatorTokens } from "../http/auth.ts";
import { parseNamedTokens } from "./tokens.ts";

export const APP_TOKENS_ENV = "SWITCHBOARD_APP_TOKENS";

/**
 * `crm=<token>,alerts=<token>`: names of 1-64 characters of A-Z a-z 0-9 . _ -, tokens of 16+
 * characters, each distinct from every other app's and operator's, so a token names one caller.
 */
export function parseAppTokens(
  env: Env,
  operators: { operatorToken: string | null; operatorTokens: OperatorTokens },
): AppTokens {
  return parseNamedTokens({
    variable: APP_TOKENS_ENV,
    raw: nonEmpty(env, APP_TOKENS_ENV),
    who: "an app",
    name: APP_NAME,
    nameRule: "1-64 characters of A-Z a-z 0-9 . _ -",
    taken: [
      ...(operators.operatorToken === null ? [] : [operators.operatorToken]),
      ...operators.operatorTokens.map((operator) => operator.token),
    ],
    inUse: " (by another app or an operator); each needs its own",
    example: `${APP_TOKENS_ENV}=crm=$(openssl rand -hex 24),alerts=$(openssl rand -hex 24)`,
  });
}
