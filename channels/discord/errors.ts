import { DiscordAPIError, DiscordjsError, DiscordjsErrorCodes, HTTPError, RateLimitError } from "discord.js";
import { SwitchboardError } from "../../src/errors.ts";

export type DiscordAction = "connect" | "send" | "edit" | "delete" | "typing" | "catch_up" | "react";

export interface ErrorContext {
  action: DiscordAction;
  /** The REST timeout in force, to say how long we waited. */
  requestTimeoutMs: number;
}

/** What to tell the operator for Discord's JSON error codes we expect to meet. */
const API_ERROR_HINTS: Record<number, string> = {
  10003: "the channel was deleted or the bot cannot see it",
  10008: "the message no longer exists",
  50001: "the bot lacks access to this channel; check its role and channel permissions",
  50005: "only the bot's own messages can be edited",
  50006: "the message is empty",
  50007: "the user has DMs closed or has blocked the bot",
  50013: "the bot lacks a permission here (Send Messages, Send Messages in Threads …)",
  50035: "Discord refused the request body (too long, or a bad field)",
};

/**
 * The one mapping from discord.js / @discordjs/rest failures to switchboard's error hierarchy.
 * The outbox decides from `code`, `retryable` and `retryAfterMs`; messages never contain the token.
 */
export function toSwitchboardError(error: unknown, context: ErrorContext): SwitchboardError {
  if (error instanceof SwitchboardError) return error;
  const { action } = context;

  if (error instanceof RateLimitError) {
    const retryAfterMs = Math.max(error.retryAfter, error.timeToReset, 0);
    return new SwitchboardError(
      "platform_rate_limited",
      `Discord rate-limited ${action} on ${error.method.toUpperCase()} ${pathOf(error.route)} (${error.global ? "global" : error.scope} limit); retry after ${retryAfterMs} ms.`,
      {
        cause: error,
        retryable: true,
        retryAfterMs,
        details: { route: pathOf(error.route), global: error.global },
      },
    );
  }

  if (error instanceof DiscordAPIError) {
    const details = {
      status: error.status,
      discordCode: error.code,
      route: `${error.method} ${pathOf(error.url)}`,
    };
    if (error.status === 401) {
      return new SwitchboardError(
        "unauthorized",
        `Discord rejected the bot token during ${action} (401). Check discord.token; resetting a token in the Developer Portal invalidates the old one.`,
        { cause: error, details },
      );
    }
    const hint = typeof error.code === "number" ? API_ERROR_HINTS[error.code] : undefined;
    return new SwitchboardError(
      "platform_rejected",
      `Discord refused ${action} (HTTP ${error.status}, code ${error.code}: ${error.message.replaceAll("\n", "; ")})${hint ? `: ${hint}` : ""}.`,
      { cause: error, details },
    );
  }

  if (error instanceof HTTPError) {
    return new SwitchboardError(
      "platform_unavailable",
      `Discord answered ${action} with HTTP ${error.status}; it is having trouble, retry later.`,
      {
        cause: error,
        retryable: true,
        details: { status: error.status, route: `${error.method} ${pathOf(error.url)}` },
      },
    );
  }

  if (error instanceof DiscordjsError && error.code === DiscordjsErrorCodes.TokenInvalid) {
    return new SwitchboardError(
      "unauthorized",
      "Discord rejected the bot token (401) while connecting. Check discord.token.",
      { cause: error },
    );
  }

  if (isAbort(error)) {
    return new SwitchboardError(
      "platform_timeout",
      `Discord did not answer ${action} within ${context.requestTimeoutMs} ms; whether it took effect is unknown. Raise DISCORD_REQUEST_TIMEOUT_MS if the network is slow.`,
      { cause: error, retryable: true },
    );
  }

  if (isNetworkError(error)) {
    return new SwitchboardError(
      "platform_unavailable",
      `Could not reach Discord for ${action} (${describe(error)}); retry later.`,
      { cause: error, retryable: true },
    );
  }

  // Not a platform answer: most likely a bug on our side, so retrying would not help.
  return new SwitchboardError(
    "platform_unavailable",
    `Discord ${action} failed unexpectedly: ${describe(error)}.`,
    {
      cause: error,
      retryable: false,
    },
  );
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError");
}

const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ConnectionRefused",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

function isNetworkError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && NETWORK_CODES.has(code)) return true;
  // fetch reports network failures as TypeError ("fetch failed", "Unable to connect").
  return error instanceof TypeError && /fetch failed|connect|socket|network/i.test(error.message);
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? `${code}: ${error.message}` : error.message;
}

/**
 * The URL's path only: the host is configuration, and query strings are noise in messages. An
 * interaction's token (in its callback and webhook paths) is a credential: it becomes `:token`.
 */
function pathOf(url: string): string {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    path = url;
  }
  return path.replace(/\/(interactions|webhooks)\/(\d+)\/[^/]+/, "/$1/$2/:token");
}
