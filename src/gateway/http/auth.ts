/** Bearer-token checks: the operator API and console, and the web chat when it has a token. */
import { createHash, timingSafeEqual } from "node:crypto";
import { apiError } from "./respond.ts";

export const OPERATOR_TOKEN_ENV = "SWITCHBOARD_OPERATOR_TOKEN";

/**
 * Null when the request may proceed, else the response to send. Both sides are hashed first so
 * the comparison takes the same time whatever the lengths, and nothing about the token leaks.
 */
export function checkOperatorAuth(request: Request, operatorToken: string | null): Response | null {
  if (operatorToken === null)
    return apiError(
      403,
      "forbidden",
      `The operator API is disabled: set ${OPERATOR_TOKEN_ENV} and restart the gateway to enable it.`,
    );
  const presented = bearerToken(request);
  if (presented === null)
    return apiError(401, "unauthorized", "Send the operator token as 'Authorization: Bearer <token>'.", {
      "www-authenticate": 'Bearer realm="switchboard"',
    });
  if (!sameToken(presented, operatorToken))
    return apiError(
      401,
      "unauthorized",
      `The operator token was refused; use the value of ${OPERATOR_TOKEN_ENV}.`,
      {
        "www-authenticate": 'Bearer realm="switchboard", error="invalid_token"',
      },
    );
  return null;
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
