/**
 * The tokens that open the gateway's doors: the operators' (console, API, CLI over HTTP), the
 * metrics scrape's, and the key approval buttons are signed with.
 */
import { type Env, fail, nonEmpty } from "../../util/env.ts";
import type { OperatorTokens } from "../http/auth.ts";
import type { SecretCollector } from "./secrets.ts";

/** SWITCHBOARD_OPERATOR_TOKEN (shared) and SWITCHBOARD_OPERATOR_TOKENS (one per named operator). */
export function parseOperatorAccess(env: Env): {
  operatorToken: string | null;
  operatorTokens: OperatorTokens;
} {
  const operatorToken = nonEmpty(env, "SWITCHBOARD_OPERATOR_TOKEN") ?? null;
  if (operatorToken !== null && operatorToken.length < 16) {
    fail(
      "SWITCHBOARD_OPERATOR_TOKEN",
      "must be at least 16 characters",
      "SWITCHBOARD_OPERATOR_TOKEN=$(openssl rand -hex 24)",
    );
  }
  const operatorTokens = parseOperatorTokens(nonEmpty(env, "SWITCHBOARD_OPERATOR_TOKENS"), operatorToken);
  return { operatorToken, operatorTokens };
}

/**
 * `alice=<token>,bob=<token>`: names as the history records them (`operator:alice`), tokens of 16+
 * characters, each distinct (also from SWITCHBOARD_OPERATOR_TOKEN), so a token names one operator.
 */
function parseOperatorTokens(raw: string | undefined, sharedToken: string | null): OperatorTokens {
  return parseNamedTokens({
    variable: "SWITCHBOARD_OPERATOR_TOKENS",
    raw,
    who: "an operator",
    name: /^[A-Za-z0-9._@-]{1,64}$/,
    nameRule: "1-64 characters of A-Z a-z 0-9 . _ @ -",
    taken: sharedToken === null ? [] : [sharedToken],
    inUse: "; each operator needs their own",
    example: "SWITCHBOARD_OPERATOR_TOKENS=alice=$(openssl rand -hex 24),bob=$(openssl rand -hex 24)",
  });
}

/**
 * `name=token,…` pairs of one variable: each name valid and given once, each token 16+ characters
 * and distinct from the others and from `taken`, so that a token names one caller.
 */
export function parseNamedTokens(spec: {
  variable: string;
  raw: string | undefined;
  /** "an operator", "an app": how an error names a pair's owner. */
  who: string;
  name: RegExp;
  nameRule: string;
  taken: readonly string[];
  /** What follows "already in use" in the error for a repeated token. */
  inUse: string;
  example: string;
}): Array<{ name: string; token: string }> {
  const { variable, example } = spec;
  if (spec.raw === undefined) return [];
  const tokens: Array<{ name: string; token: string }> = [];
  for (const pair of spec.raw
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const at = pair.indexOf("=");
    const name = at < 0 ? pair : pair.slice(0, at).trim();
    const token = at < 0 ? "" : pair.slice(at + 1).trim();
    if (!spec.name.test(name))
      fail(variable, `names ${spec.who} "${name.slice(0, 70)}"; use ${spec.nameRule}`, example);
    if (token.length < 16)
      fail(variable, `gives ${name} a token shorter than 16 characters (write name=token pairs)`, example);
    if (tokens.some((t) => t.name === name)) fail(variable, `names ${name} twice`, example);
    if (tokens.some((t) => t.token === token) || spec.taken.includes(token))
      fail(variable, `gives ${name} a token already in use${spec.inUse}`, example);
    tokens.push({ name, token });
  }
  return tokens;
}

/** A secret of at least 16 characters (`example` shows how to make one), or null when unset. */
export function parseLongSecret(secrets: SecretCollector, variable: string, example: string): string | null {
  const value = secrets.read(variable) ?? null;
  if (value !== null && value.length < 16) fail(variable, "must be at least 16 characters", example);
  return value;
}
