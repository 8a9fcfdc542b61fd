/**
 * One error hierarchy for switchboard. Whether to retry is data on the error, so the outbox and
 * the scheduler decide from `retryable` and `retryAfterMs` rather than from message text.
 */
export type SwitchboardErrorCode =
  | "config_invalid"
  | "input_invalid"
  /** The record is in a state that does not allow the change (HTTP 409). */
  | "state_conflict"
  | "idempotency_conflict"
  | "version_conflict"
  | "fence_lost"
  | "conversation_purged"
  | "not_found"
  | "schema_unsupported"
  | "runtime_closed"
  | "provider_failed"
  | "platform_rate_limited"
  | "platform_unavailable"
  | "platform_rejected"
  | "platform_timeout"
  | "unauthorized";

export interface SwitchboardErrorOptions {
  cause?: unknown;
  retryable?: boolean;
  retryAfterMs?: number;
  details?: Record<string, unknown>;
}

export class SwitchboardError extends Error {
  readonly code: SwitchboardErrorCode;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: SwitchboardErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SwitchboardError";
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.retryAfterMs = options.retryAfterMs;
    this.details = options.details;
  }
}

export function isSwitchboardError(error: unknown, code?: SwitchboardErrorCode): error is SwitchboardError {
  return error instanceof SwitchboardError && (code === undefined || error.code === code);
}
