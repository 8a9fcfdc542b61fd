/**
 * The one place where WhatsApp Cloud API failures become SwitchboardErrors, with the retry data the
 * outbox decides from. Meta asks clients to decide from the error `code` (and `details`), not the
 * HTTP status, so codes come first and the status only decides what no known code does. Messages
 * carry the operation, Meta's code, title and details, never the token.
 */
import { SwitchboardError } from "../../src/errors.ts";
import { OUTSIDE_WINDOW_CODE } from "./status.ts";

/** Meta's pair rate: one user may get about one message every 6 s from a business number. */
export const PAIR_RATE_CODE = 131056;
/** The number's throughput (default 80 messages/s). */
export const THROUGHPUT_CODE = 130429;
/** Graph call limits of the app (4) and of the business account (80007). */
const CALL_LIMIT_CODES = new Set([4, 80007, THROUGHPUT_CODE]);
/** Meta's "try again later": unknown error, temporarily unavailable, something went wrong, service unavailable. */
const TRANSIENT_CODES = new Set([1, 2, 131000, 131016]);
/** The token is missing, expired or revoked. */
const TOKEN_CODES = new Set([190]);
/** The token lacks a permission, or the app/number is not allowed to do this. */
const PERMISSION_CODES = new Set([3, 10, 200]);
/** Without Retry-After, how long a throughput refusal holds back the whole number. */
export const DEFAULT_THROTTLE_MS = 1_000;

export type WhatsAppFailure =
  /** The Graph API answered with an error status. */
  | { kind: "answer"; status: number; body: unknown; retryAfterHeader: string | null }
  /** Our deadline for the call passed: it may or may not have taken effect. */
  | { kind: "timeout"; afterMs: number }
  /** fetch threw: the connection failed before, or broke during, the call. */
  | { kind: "thrown"; error: unknown };

export interface WhatsAppCallContext {
  /** What was attempted, for the message: "send text", "upload media", … */
  operation: string;
  /** How long a pair-rate refusal holds back that user's chat (Meta: about 6 s). */
  pairIntervalMs: number;
}

interface GraphErrorFields {
  code?: number;
  subcode?: number;
  message?: string;
  details?: string;
  traceId?: string;
}

/**
 * - 131047 (outside the 24-hour window) → platform_rejected, never retryable, `details.outsideServiceWindow`
 * - 131056 (pair rate) → platform_rate_limited for that chat only, retry after the pair interval
 * - 130429, 4, 80007 or HTTP 429 → platform_rate_limited for the whole number (`details.global`)
 * - 190 or HTTP 401 → unauthorized
 * - 1, 2, 131000, 131016 or HTTP 5xx, connection refused → platform_unavailable (retryable)
 * - our deadline, or a connection broken mid-call → platform_timeout (the message may be sent)
 * - every other answer → platform_rejected (not retryable)
 */
export function toSwitchboardError(failure: WhatsAppFailure, context: WhatsAppCallContext): SwitchboardError {
  const { operation } = context;
  if (failure.kind === "timeout") {
    return new SwitchboardError(
      "platform_timeout",
      `WhatsApp did not answer ${operation} within ${failure.afterMs} ms; it may or may not have taken effect.`,
      { retryable: true, details: { platform: "whatsapp", operation, timeoutMs: failure.afterMs } },
    );
  }
  if (failure.kind === "thrown") return fromThrown(failure.error, operation);

  const { status } = failure;
  const error = graphErrorFields(failure.body);
  const code = error.code;
  const details: Record<string, unknown> = {
    platform: "whatsapp",
    operation,
    httpStatus: status,
    ...(code === undefined ? {} : { whatsappCode: code }),
    ...(error.subcode === undefined ? {} : { whatsappSubcode: error.subcode }),
    ...(error.details === undefined ? {} : { whatsappDetails: error.details }),
    ...(error.traceId === undefined ? {} : { fbtraceId: error.traceId }),
  };
  const said = describeGraphError(status, error);

  if (code === OUTSIDE_WINDOW_CODE) {
    return new SwitchboardError(
      "platform_rejected",
      `WhatsApp refused ${operation}: ${said}. The user last wrote more than 24 hours ago, so only a template may reach them; set whatsapp.reengageTemplate in the SWITCHBOARD_CONFIG file, or wait until they write again.`,
      { retryable: false, details: { ...details, outsideServiceWindow: true } },
    );
  }
  if (code === PAIR_RATE_CODE) {
    return new SwitchboardError(
      "platform_rate_limited",
      `WhatsApp rate-limited ${operation} to this user (pair rate, ${said}); retry after ${context.pairIntervalMs} ms.`,
      { retryable: true, retryAfterMs: context.pairIntervalMs, details: { ...details, scope: "recipient" } },
    );
  }
  if ((code !== undefined && CALL_LIMIT_CODES.has(code)) || status === 429) {
    const retryAfterMs = retryAfterMsOf(failure.retryAfterHeader) ?? DEFAULT_THROTTLE_MS;
    return new SwitchboardError(
      "platform_rate_limited",
      `WhatsApp throttled ${operation} for the whole number (${said}); retry after ${retryAfterMs} ms.`,
      { retryable: true, retryAfterMs, details: { ...details, global: true } },
    );
  }
  if ((code !== undefined && TOKEN_CODES.has(code)) || status === 401) {
    return new SwitchboardError(
      "unauthorized",
      `WhatsApp refused the access token for ${operation} (${said}). Check WHATSAPP_ACCESS_TOKEN: a system-user token with whatsapp_business_messaging that has not expired.`,
      { details },
    );
  }
  if ((code !== undefined && TRANSIENT_CODES.has(code)) || status >= 500) {
    return new SwitchboardError(
      "platform_unavailable",
      `WhatsApp failed ${operation} (${said}); retry later.`,
      {
        retryable: true,
        details,
      },
    );
  }
  const hint =
    code !== undefined && PERMISSION_CODES.has(code)
      ? " The token lacks a permission: give the system user whatsapp_business_messaging (and whatsapp_business_management) on this WhatsApp account."
      : "";
  return new SwitchboardError("platform_rejected", `WhatsApp refused ${operation}: ${said}.${hint}`, {
    retryable: false,
    details,
  });
}

/** True for the error of a free-form send outside the 24-hour customer service window. */
export function isOutsideServiceWindow(error: unknown): boolean {
  return error instanceof SwitchboardError && error.details?.outsideServiceWindow === true;
}

function fromThrown(error: unknown, operation: string): SwitchboardError {
  if (error instanceof SwitchboardError) return error;
  const name = error instanceof Error ? error.name : "";
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  const details = {
    platform: "whatsapp",
    operation,
    ...(typeof code === "string" ? { errorCode: code } : {}),
  };
  const refused =
    code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "ConnectionRefused";
  if (name === "TimeoutError") {
    return new SwitchboardError(
      "platform_timeout",
      `WhatsApp did not answer ${operation} in time; it may or may not have taken effect.`,
      { retryable: true, details },
    );
  }
  if (refused) {
    return new SwitchboardError(
      "platform_unavailable",
      `Could not reach the WhatsApp Cloud API for ${operation} (${code}); check the network or WHATSAPP_API_ROOT.`,
      { retryable: true, details },
    );
  }
  // The request may have reached Meta before the connection broke: the message may be sent.
  return new SwitchboardError(
    "platform_timeout",
    `The connection to the WhatsApp Cloud API broke during ${operation} (${message.split(".")[0]}); it may or may not have taken effect.`,
    { retryable: true, details },
  );
}

function graphErrorFields(body: unknown): GraphErrorFields {
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error !== "object" || error === null) return {};
  const e = error as Record<string, unknown>;
  const data = e.error_data as { details?: unknown } | undefined;
  const fields: GraphErrorFields = {};
  if (typeof e.code === "number") fields.code = e.code;
  if (typeof e.error_subcode === "number") fields.subcode = e.error_subcode;
  if (typeof e.message === "string") fields.message = e.message.slice(0, 500);
  if (typeof data?.details === "string") fields.details = data.details.slice(0, 1000);
  if (typeof e.fbtrace_id === "string") fields.traceId = e.fbtrace_id.slice(0, 64);
  return fields;
}

function describeGraphError(status: number, error: GraphErrorFields): string {
  const head = error.message ?? (error.code === undefined ? `HTTP ${status}` : `code ${error.code}`);
  return error.details === undefined ? head : `${head}: ${error.details}`;
}

/** Retry-After in seconds (Graph sends seconds; an HTTP date is not expected). */
function retryAfterMsOf(header: string | null): number | undefined {
  if (header === null || !/^\d+(\.\d+)?$/.test(header.trim())) return undefined;
  return Math.round(Number(header) * 1000);
}
