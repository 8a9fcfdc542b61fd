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
  /** A redelivered update that was refused before (pairing, flood, budget); not admitted now. */
  | "update_refused"
  | "not_found"
  | "schema_unsupported"
  | "runtime_closed"
  | "provider_failed"
  | "platform_rate_limited"
  | "platform_unavailable"
  | "platform_rejected"
  | "platform_timeout"
  | "unauthorized"
  /** A file is larger than the configured limit; nothing of it was kept. */
  | "blob_too_large";

/**
 * Why a platform refused a request, for the refusals the core answers differently: `markup`, the
 * rich formatting itself was refused (the same text as plain would go through); `unchanged`, an
 * edit to the text the message already shows. Set by the adapter's errors.ts, the one place that
 * reads the platform's error codes and text.
 */
export type PlatformRejection = "markup" | "unchanged";

export interface SwitchboardErrorOptions {
  cause?: unknown;
  /** Only with `platform_rejected`. */
  rejection?: PlatformRejection;
  retryable?: boolean;
  retryAfterMs?: number;
  details?: Record<string, unknown>;
}

export class SwitchboardError extends Error {
  readonly code: SwitchboardErrorCode;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly rejection: PlatformRejection | undefined;

  constructor(code: SwitchboardErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SwitchboardError";
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.retryAfterMs = options.retryAfterMs;
    this.details = options.details;
    this.rejection = options.rejection;
  }
}

export function isSwitchboardError(error: unknown, code?: SwitchboardErrorCode): error is SwitchboardError {
  return error instanceof SwitchboardError && (code === undefined || error.code === code);
}

/** A `platform_rejected` error whose adapter tagged it with `rejection`. */
export function isPlatformRejection(error: unknown, rejection: PlatformRejection): error is SwitchboardError {
  return isSwitchboardError(error, "platform_rejected") && error.rejection === rejection;
}
