import { webApi } from "@slack/bolt";
import { SwitchboardError } from "../../src/errors.ts";

/** Slack `{ok:false, error}` codes that mean "try again later" rather than "this will never work". */
const TRANSIENT_PLATFORM_ERRORS = new Set([
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "team_added_to_org",
]);

/** Slack `{ok:false, error}` codes that refuse the message's formatting, not the message. */
const MARKUP_ERRORS = new Set(["invalid_blocks", "invalid_blocks_format"]);

/**
 * Maps anything a web-api call threw to a SwitchboardError, the one place that knows Slack's
 * failure shapes:
 * - 429 (`rejectRateLimitedCalls`) or `ratelimited` → platform_rate_limited with retryAfterMs
 * - HTTP 5xx, connection failures, transient `{ok:false}` codes → platform_unavailable (retryable)
 * - our request timeout or Slack's `request_timeout` → platform_timeout (retryable; the call may
 *   have taken effect)
 * - every other `{ok:false}` code (channel_not_found, not_in_channel, is_archived, invalid_auth,
 *   msg_too_long, …) and other HTTP statuses → platform_rejected (not retryable); the codes that
 *   refuse the formatting (invalid_blocks …) are tagged `rejection: "markup"`
 */
export function toSwitchboardError(error: unknown, method: string): SwitchboardError {
  if (error instanceof SwitchboardError) return error;
  const details: Record<string, unknown> = { platform: "slack", method };

  if (error instanceof webApi.WebAPIRateLimitedError) {
    const retryAfterMs = Math.max(0, error.retryAfter) * 1000;
    return new SwitchboardError(
      "platform_rate_limited",
      `Slack rate-limited ${method}; retry after ${retryAfterMs} ms`,
      { cause: error, retryable: true, retryAfterMs, details },
    );
  }

  if (error instanceof webApi.WebAPIPlatformError) {
    const code = error.data.error;
    const withCode = { ...details, slackError: code };
    if (code === "ratelimited") {
      return new SwitchboardError("platform_rate_limited", `Slack rate-limited ${method} (ratelimited)`, {
        cause: error,
        retryable: true,
        details: withCode,
      });
    }
    if (code === "request_timeout") {
      return new SwitchboardError(
        "platform_timeout",
        `Slack timed out handling ${method} (request_timeout)`,
        {
          cause: error,
          retryable: true,
          details: withCode,
        },
      );
    }
    if (TRANSIENT_PLATFORM_ERRORS.has(code)) {
      return new SwitchboardError(
        "platform_unavailable",
        `Slack failed ${method} with ${code}; try again later`,
        {
          cause: error,
          retryable: true,
          details: withCode,
        },
      );
    }
    return new SwitchboardError(
      "platform_rejected",
      `Slack rejected ${method}: ${code}${REJECTION_HINTS[code] ?? ""}`,
      {
        cause: error,
        retryable: false,
        details: withCode,
        ...(MARKUP_ERRORS.has(code) ? { rejection: "markup" as const } : {}),
      },
    );
  }

  if (error instanceof webApi.WebAPIHTTPError) {
    const withStatus = { ...details, httpStatus: error.statusCode };
    if (error.statusCode >= 500) {
      return new SwitchboardError(
        "platform_unavailable",
        `Slack answered ${method} with HTTP ${error.statusCode}; try again later`,
        { cause: error, retryable: true, details: withStatus },
      );
    }
    return new SwitchboardError(
      "platform_rejected",
      `Slack answered ${method} with HTTP ${error.statusCode}`,
      {
        cause: error,
        retryable: false,
        details: withStatus,
      },
    );
  }

  if (error instanceof webApi.WebAPIRequestError) {
    if (isTimeout(error.original)) {
      return new SwitchboardError(
        "platform_timeout",
        `Slack did not answer ${method} in time; it may or may not have taken effect`,
        { cause: error, retryable: true, details },
      );
    }
    return new SwitchboardError(
      "platform_unavailable",
      `Could not reach Slack for ${method} (${error.original.message}); check the network or apiUrl`,
      { cause: error, retryable: true, details },
    );
  }

  const message = error instanceof Error ? error.message : String(error);
  return new SwitchboardError(
    "platform_unavailable",
    `Slack call ${method} failed unexpectedly: ${message}`,
    {
      cause: error,
      retryable: true,
      details,
    },
  );
}

const REJECTION_HINTS: Record<string, string> = {
  invalid_auth: " (the bot token is wrong or revoked; check slack.botToken)",
  not_authed: " (no token was sent; check slack.botToken)",
  token_revoked: " (the bot token was revoked; reinstall the app and update slack.botToken)",
  account_inactive: " (the bot user was deactivated; reinstall the app)",
  channel_not_found: " (the channel does not exist or the bot cannot see it)",
  not_in_channel: " (invite the bot to the channel)",
  is_archived: " (the channel is archived)",
  msg_too_long: " (shorten the message)",
  not_allowed_token_type:
    " (a bot token (xoxb-) is needed here; the app token (xapp-) is only for Socket Mode)",
};

function isTimeout(original: Error): boolean {
  return (
    original.name === "TimeoutError" || (original.name === "AbortError" && /timeout/i.test(original.message))
  );
}
