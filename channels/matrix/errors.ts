/**
 * The one mapping from a failed client-server call into switchboard's errors. Messages name the
 * operation and Matrix's errcode, never the access token or the URL's query.
 *
 * - `M_LIMIT_EXCEEDED` or HTTP 429 → platform_rate_limited, after `retry_after_ms` (else Retry-After)
 * - `M_UNKNOWN_TOKEN`, `M_MISSING_TOKEN` or HTTP 401 → unauthorized
 * - HTTP 5xx, connection refused → platform_unavailable (retryable)
 * - our deadline, or a connection broken mid-call → platform_timeout (the homeserver may have acted)
 * - every other answer → platform_rejected (not retryable)
 */
import { SwitchboardError } from "../../src/errors.ts";

/** What went wrong with one call, before it is mapped. */
export type MatrixFailure =
  | { kind: "status"; status: number; body: unknown; retryAfterHeader: string | null }
  | { kind: "timeout"; afterMs: number }
  | { kind: "thrown"; error: unknown };

/** When the homeserver names no delay for a 429. */
const DEFAULT_RATE_LIMIT_MS = 5_000;

const HINTS: Record<string, string> = {
  M_FORBIDDEN: "the bot is not allowed to do this here (not joined, or lacks the power level)",
  M_NOT_FOUND: "the room or event does not exist, or the bot cannot see it",
  M_TOO_LARGE: "the homeserver refused the size (see its m.upload.size)",
  M_UNKNOWN: "the homeserver refused the request",
  M_BAD_JSON: "the homeserver refused the request body",
};

/** The `errcode` and `error` of a Matrix error body, when it has them. */
export function matrixErrorFields(body: unknown): {
  errcode?: string;
  error?: string;
  retryAfterMs?: number;
} {
  if (typeof body !== "object" || body === null) return {};
  const record = body as Record<string, unknown>;
  return {
    ...(typeof record.errcode === "string" ? { errcode: record.errcode } : {}),
    ...(typeof record.error === "string" ? { error: record.error } : {}),
    ...(typeof record.retry_after_ms === "number" ? { retryAfterMs: record.retry_after_ms } : {}),
  };
}

export function toSwitchboardError(failure: MatrixFailure, operation: string): SwitchboardError {
  if (failure.kind === "timeout")
    return new SwitchboardError(
      "platform_timeout",
      `The Matrix homeserver did not answer ${operation} within ${failure.afterMs} ms; it may or may not have taken effect.`,
      { retryable: true, details: { platform: "matrix", operation, timeoutMs: failure.afterMs } },
    );
  if (failure.kind === "thrown") return fromThrown(failure.error, operation);

  const { status } = failure;
  const fields = matrixErrorFields(failure.body);
  const details = {
    platform: "matrix",
    operation,
    status,
    ...(fields.errcode ? { errcode: fields.errcode } : {}),
  };
  const said = `${fields.errcode ?? `HTTP ${status}`}${fields.error ? `: ${fields.error}` : ""}`;
  if (fields.errcode === "M_LIMIT_EXCEEDED" || status === 429) {
    const header = Number(failure.retryAfterHeader ?? Number.NaN);
    const retryAfterMs =
      fields.retryAfterMs ?? (Number.isFinite(header) ? Math.ceil(header * 1000) : DEFAULT_RATE_LIMIT_MS);
    return new SwitchboardError(
      "platform_rate_limited",
      `The Matrix homeserver rate-limited ${operation} (${said}); retry after ${retryAfterMs} ms.`,
      { retryable: true, retryAfterMs, details },
    );
  }
  if (status === 401 || fields.errcode === "M_UNKNOWN_TOKEN" || fields.errcode === "M_MISSING_TOKEN")
    return new SwitchboardError(
      "unauthorized",
      `The Matrix homeserver refused the bot's access token during ${operation} (${said}). Set a valid MATRIX_ACCESS_TOKEN, or MATRIX_USER_ID and MATRIX_PASSWORD to log in again.`,
      { details },
    );
  if (status >= 500)
    return new SwitchboardError(
      "platform_unavailable",
      `The Matrix homeserver answered ${operation} with HTTP ${status} (${said}); it is having trouble, retry later.`,
      { retryable: true, details },
    );
  const hint = fields.errcode ? HINTS[fields.errcode] : undefined;
  return new SwitchboardError(
    "platform_rejected",
    `The Matrix homeserver refused ${operation} (HTTP ${status}, ${said})${hint ? `: ${hint}` : ""}.`,
    { details },
  );
}

function fromThrown(error: unknown, operation: string): SwitchboardError {
  const code = (error as { code?: string }).code;
  const name = error instanceof Error ? error.name : "";
  const details = { platform: "matrix", operation, ...(code ? { cause: code } : {}) };
  if (name === "TimeoutError")
    return new SwitchboardError(
      "platform_timeout",
      `The Matrix homeserver did not answer ${operation} in time; it may or may not have taken effect.`,
      { retryable: true, details },
    );
  if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "ConnectionRefused")
    return new SwitchboardError(
      "platform_unavailable",
      `Could not reach the Matrix homeserver for ${operation} (${code}); check the network or MATRIX_HOMESERVER_URL.`,
      { retryable: true, details },
    );
  // The request may have reached the homeserver before the connection broke.
  return new SwitchboardError(
    "platform_timeout",
    `The connection to the Matrix homeserver broke during ${operation} (${code ?? name ?? "network error"}); it may or may not have taken effect.`,
    { retryable: true, details },
  );
}
