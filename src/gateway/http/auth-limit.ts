/**
 * Failed authentication per client address, on every route that takes a token (`/api/*`, the web
 * chat's token, `/metrics` beyond loopback). Past the limit a wrong or missing token is answered
 * 429 with `Retry-After` instead of 401, logged (once a minute per address) and counted. A correct
 * token is never slowed or refused here: the server checks it first and only calls `refuse` when
 * it failed, so an operator behind the same address as a guesser still gets in.
 */
import type { Logger } from "../../util/log.ts";
import { KeyedRateLimiter } from "../../util/rate-limit.ts";
import { clientKey } from "./client-address.ts";
import { apiError } from "./respond.ts";

/** Routes whose token failures are counted, the `route` label of the metrics. */
export const AUTH_ROUTES = ["api", "web", "metrics"] as const;
export type AuthRoute = (typeof AUTH_ROUTES)[number];

export interface AuthFailureLimiterOptions {
  /** Failed authentications one address may make as a burst, then per minute; default 10. */
  failuresPerMinute?: number;
  logger: Logger;
  /** Milliseconds since the epoch; tests pass a fake clock. */
  now?: () => number;
}

export class AuthFailureLimiter {
  private readonly failures: KeyedRateLimiter;
  /** One `http.auth_limited` line per address a minute, however fast it guesses. */
  private readonly logged = new KeyedRateLimiter({ perMinute: 1 });
  private readonly failed = counters();
  private readonly limited = counters();
  private readonly logger: Logger;
  private readonly now: () => number;

  constructor(options: AuthFailureLimiterOptions) {
    this.failures = new KeyedRateLimiter({ perMinute: options.failuresPerMinute ?? 10 });
    this.logger = options.logger;
    this.now = options.now ?? Date.now;
  }

  /**
   * Counts a failed authentication from `address` on `route`: `refusal` (the 401) while the
   * address is within its limit, else a 429 that says when to try again.
   */
  refuse(route: AuthRoute, address: string, refusal: Response): Response {
    this.failed[route] += 1;
    const key = clientKey(address);
    const nowMs = this.now();
    const decision = this.failures.take(key, nowMs);
    if (decision.allowed) return refusal;
    this.limited[route] += 1;
    const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    if (this.logged.take(key, nowMs).allowed)
      this.logger.warn("http.auth_limited", {
        route,
        client: key,
        retryAfterSeconds: seconds,
        hint: "too many wrong or missing tokens from this address; its requests without the right token get 429 until it slows down",
      });
    return apiError(
      429,
      "rate_limited",
      `Too many failed sign-ins from this address; wait ${seconds} s and try again with the right token.`,
      { "retry-after": String(seconds) },
    );
  }

  /** Prometheus text for both counters, every route listed (0 until something fails). */
  render(): string {
    const lines = [
      "# HELP switchboard_auth_failures_total Requests refused for a missing or wrong token, by route.",
      "# TYPE switchboard_auth_failures_total counter",
      ...AUTH_ROUTES.map((r) => `switchboard_auth_failures_total{route="${r}"} ${this.failed[r]}`),
      "# HELP switchboard_auth_limited_total Failed authentications answered 429: the address was over its limit.",
      "# TYPE switchboard_auth_limited_total counter",
      ...AUTH_ROUTES.map((r) => `switchboard_auth_limited_total{route="${r}"} ${this.limited[r]}`),
    ];
    return `${lines.join("\n")}\n`;
  }
}

function counters(): Record<AuthRoute, number> {
  return { api: 0, web: 0, metrics: 0 };
}
