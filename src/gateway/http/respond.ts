/** JSON answers and the one mapping from errors to HTTP statuses. */
import { isSwitchboardError, type SwitchboardErrorCode } from "../../errors.ts";

export type ApiErrorCode =
  | SwitchboardErrorCode
  | "forbidden"
  | "payload_too_large"
  | "method_not_allowed"
  | "unsupported_media_type"
  | "rate_limited"
  | "internal";

export interface ApiErrorBody {
  error: { code: ApiErrorCode; message: string };
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return Response.json(body, { status, headers: { "cache-control": "no-store", ...headers } });
}

export function apiError(
  status: number,
  code: ApiErrorCode,
  message: string,
  headers?: Record<string, string>,
) {
  const body: ApiErrorBody = { error: { code, message } };
  return json(body, status, headers);
}

const STATUS_BY_CODE: Partial<Record<SwitchboardErrorCode, number>> = {
  not_found: 404,
  input_invalid: 400,
  state_conflict: 409,
  version_conflict: 409,
  idempotency_conflict: 409,
  unauthorized: 401,
  platform_unavailable: 503,
};

/**
 * A SwitchboardError with a client-facing code keeps its message (they are written for operators);
 * anything else is a 500 whose message points at the log, never at internals.
 */
export function errorToResponse(error: unknown, requestId: string): Response {
  if (isSwitchboardError(error)) {
    const status = STATUS_BY_CODE[error.code];
    if (status !== undefined) return apiError(status, error.code, error.message);
  }
  return apiError(
    500,
    "internal",
    `The gateway failed to handle this request; look for requestId ${requestId} in its log.`,
  );
}
