/** Bearer-token checks: the operator API and console, /metrics beyond loopback, and the web chat's token. */
import { createHash, timingSafeEqual } from "node:crypto";
import { apiError } from "./respond.ts";

export const OPERATOR_TOKEN_ENV = "SWITCHBOARD_OPERATOR_TOKEN";
export const METRICS_TOKEN_ENV = "SWITCHBOARD_METRICS_TOKEN";

/** Named operators' own tokens (SWITCHBOARD_OPERATOR_TOKENS): the token says who acts. */
export type OperatorTokens = ReadonlyArray<{ name: string; token: string }>;

/** Who may use the operator API: the shared token (actor from X-Switchboard-Actor) and named ones. */
export interface OperatorCredentials {
  shared: string | null;
  named: OperatorTokens;
}

export function operatorApiEnabled(credentials: OperatorCredentials): boolean {
  return credentials.shared !== null || credentials.named.length > 0;
}

/**
 * The operator a request authenticates as (`name` null for the shared token), or the response to
 * send. Every configured token is compared, each on SHA-256 digests, so the time taken says
 * nothing about which token or how much of it matched.
 */
export function authenticateOperator(
  request: Request,
  credentials: OperatorCredentials,
): { refused: Response } | { name: string | null } {
  if (!operatorApiEnabled(credentials))
    return {
      refused: apiError(
        403,
        "forbidden",
        `The operator API is disabled: set ${OPERATOR_TOKEN_ENV} (or SWITCHBOARD_OPERATOR_TOKENS) and restart the gateway to enable it.`,
      ),
    };
  const presented = bearerToken(request);
  if (presented === null)
    return {
      refused: apiError(401, "unauthorized", "Send the operator token as 'Authorization: Bearer <token>'.", {
        "www-authenticate": 'Bearer realm="switchboard"',
      }),
    };
  let name: string | null | undefined;
  if (credentials.shared !== null && sameToken(presented, credentials.shared)) name = null;
  for (const operator of credentials.named) {
    if (sameToken(presented, operator.token) && name === undefined) name = operator.name;
  }
  if (name === undefined)
    return {
      refused: apiError(
        401,
        "unauthorized",
        `The operator token was refused; use the value of ${OPERATOR_TOKEN_ENV} or your own from SWITCHBOARD_OPERATOR_TOKENS.`,
        { "www-authenticate": 'Bearer realm="switchboard", error="invalid_token"' },
      ),
    };
  return { name };
}

/**
 * Null when a scrape from beyond this machine may read /metrics, else the 401 (no or a wrong
 * token) or 403 (no token configured) to send. Accepted: SWITCHBOARD_METRICS_TOKEN and every
 * operator token, all compared (on digests) whichever matches, as for the operator API.
 */
export function authenticateMetrics(
  request: Request,
  metricsToken: string | null,
  operators: OperatorCredentials,
): Response | null {
  const accepted = [
    ...(metricsToken === null ? [] : [metricsToken]),
    ...(operators.shared === null ? [] : [operators.shared]),
    ...operators.named.map((operator) => operator.token),
  ];
  if (accepted.length === 0)
    return apiError(
      403,
      "forbidden",
      `/metrics answers other machines only with a token: set ${METRICS_TOKEN_ENV} (16+ characters) and restart the gateway, then send it as 'Authorization: Bearer <token>'. From this machine it needs none.`,
    );
  const presented = bearerToken(request);
  let matched = false;
  if (presented !== null) for (const token of accepted) matched = sameToken(presented, token) || matched;
  if (matched) return null;
  return apiError(
    401,
    "unauthorized",
    presented === null
      ? `/metrics needs a token from beyond this machine: send ${METRICS_TOKEN_ENV} (or an operator token) as 'Authorization: Bearer <token>'.`
      : `The /metrics token was refused; use the value of ${METRICS_TOKEN_ENV} or an operator token.`,
    {
      "www-authenticate":
        presented === null
          ? 'Bearer realm="switchboard-metrics"'
          : 'Bearer realm="switchboard-metrics", error="invalid_token"',
    },
  );
}

/** The token of an `Authorization: Bearer <token>` header; null when there is none. */
export function bearerToken(request: Request): string | null {
  const header = request.headers.get("authorization");
  const match = header === null ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/** Compares digests, so the time taken says nothing about the expected token or its length. */
export function sameToken(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}
