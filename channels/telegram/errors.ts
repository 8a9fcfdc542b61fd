/**
 * The one place where Telegram failures become SwitchboardErrors, with the retry data the outbox
 * decides from. Messages carry the method and Telegram's description, never the token.
 */
import { GrammyError, HttpError } from "grammy";
import { type PlatformRejection, SwitchboardError } from "../../src/errors.ts";

export interface TelegramCallContext {
  /** Bot API method, e.g. "sendMessage". */
  method: string;
  /** Set when our own deadline aborted the call: the outcome is unknown. */
  timedOutAfterMs?: number;
}

export function toSwitchboardError(error: unknown, context: TelegramCallContext): SwitchboardError {
  const { method } = context;
  if (error instanceof SwitchboardError) return error;
  if (context.timedOutAfterMs !== undefined) {
    return new SwitchboardError(
      "platform_timeout",
      `Telegram ${method} did not answer within ${context.timedOutAfterMs} ms; it may or may not have taken effect. Raise TELEGRAM_REQUEST_TIMEOUT_MS if the network is slow.`,
      { retryable: true, details: { method, timeoutMs: context.timedOutAfterMs } },
    );
  }
  if (error instanceof GrammyError) return fromApiError(error, method);
  if (error instanceof HttpError) {
    const cause = sanitizedCause(error.error);
    if (isLostMidRequest(cause)) {
      return new SwitchboardError(
        "platform_timeout",
        `The connection to the Telegram Bot API broke during ${method} (${cause.message}); it may or may not have taken effect.`,
        { retryable: true, cause, details: { method } },
      );
    }
    return new SwitchboardError(
      "platform_unavailable",
      `Could not reach the Telegram Bot API for ${method} (${cause.message}); retry later.`,
      { retryable: true, cause, details: { method } },
    );
  }
  const cause = sanitizedCause(error);
  return new SwitchboardError(
    "platform_unavailable",
    `Telegram ${method} failed unexpectedly: ${cause.message}`,
    {
      retryable: true,
      cause,
      details: { method },
    },
  );
}

function fromApiError(error: GrammyError, method: string): SwitchboardError {
  const code = error.error_code;
  const description = error.description;
  const details: Record<string, unknown> = { method, errorCode: code, description };
  if (code === 429) {
    const retryAfterSeconds = error.parameters.retry_after ?? 1;
    // Telegram holds back the whole bot for retry_after, not only the chat that drew it.
    return new SwitchboardError(
      "platform_rate_limited",
      `Telegram rate-limited ${method}: retry after ${retryAfterSeconds} s (${description}).`,
      {
        retryable: true,
        retryAfterMs: retryAfterSeconds * 1000,
        cause: error,
        details: { ...details, global: true },
      },
    );
  }
  if (code >= 500) {
    return new SwitchboardError(
      "platform_unavailable",
      `Telegram failed ${method} with ${code}: ${description}; retry later.`,
      {
        retryable: true,
        cause: error,
        details,
      },
    );
  }
  if (code === 401) {
    return new SwitchboardError(
      "unauthorized",
      `Telegram rejected the bot token calling ${method} (401 ${description}). Check the token with @BotFather.`,
      { cause: error, details },
    );
  }
  const migrateToChatId = error.parameters.migrate_to_chat_id;
  if (migrateToChatId !== undefined) {
    details.migrateToChatId = migrateToChatId;
    return new SwitchboardError(
      "platform_rejected",
      `Telegram refused ${method}: the group was upgraded to supergroup ${migrateToChatId}; send there instead (${code} ${description}).`,
      { cause: error, details },
    );
  }
  const rejection = rejectionOf(description);
  return new SwitchboardError("platform_rejected", `Telegram refused ${method} (${code}): ${description}`, {
    cause: error,
    details,
    ...(rejection === undefined ? {} : { rejection }),
  });
}

/**
 * Telegram names the reason for a 400 only in its description: "can't parse entities: …" (HTML
 * parse_mode), "can't find end of the entity …" (Markdown), "message is not modified: …".
 */
function rejectionOf(description: string): PlatformRejection | undefined {
  if (/can't parse entities|can't find end of/i.test(description)) return "markup";
  if (/message is not modified/i.test(description)) return "unchanged";
  return undefined;
}

/**
 * A connection that broke after the request was written (reset, closed before the answer): Telegram
 * may have acted on it, so a repeated sendMessage could show the message twice. Failures to connect
 * at all (refused, DNS) are not in this set: nothing reached Telegram.
 */
function isLostMidRequest(cause: Error & { code?: string }): boolean {
  return (
    ["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CLOSED"].includes(cause.code ?? "") ||
    /socket connection was closed unexpectedly|other side closed/i.test(cause.message)
  );
}

/**
 * Fetch errors can carry the request URL, which contains the bot token (Bun puts it in `path`).
 * Keep only the message and code, with anything token-shaped removed.
 */
function sanitizedCause(error: unknown): Error & { code?: string } {
  const message = error instanceof Error ? error.message : String(error);
  const sanitized: Error & { code?: string } = new Error(
    message.replace(/\d+:[A-Za-z0-9_-]{20,}/g, "<token>"),
  );
  if (error instanceof Error) sanitized.name = error.name;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") sanitized.code = code;
  return sanitized;
}
