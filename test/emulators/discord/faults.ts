/**
 * One-shot failures injected into REST routes. A route is named like the bucket it belongs to:
 * "POST /channels/:id/messages", "PATCH /channels/:id/messages/:id", "GET /users/@me" …
 */
export type RestRoute =
  | "GET /gateway/bot"
  | "GET /users/@me"
  | "GET /channels/:id"
  | "GET /channels/:id/messages"
  | "POST /channels/:id/messages"
  | "PATCH /channels/:id/messages/:id"
  | "DELETE /channels/:id/messages/:id"
  | "POST /channels/:id/typing"
  | "POST /interactions/:id/:token/callback"
  | "POST /webhooks/:id/:token"
  | "PATCH /webhooks/:id/:token/messages/@original"
  | "PUT /applications/:id/commands"
  | "PUT /applications/:id/guilds/:id/commands"
  | "PUT /channels/:id/messages/:id/reactions/:emoji/@me"
  | "DELETE /channels/:id/messages/:id/reactions/:emoji/@me";

export const REST_ROUTES: readonly RestRoute[] = [
  "GET /gateway/bot",
  "GET /users/@me",
  "GET /channels/:id",
  "GET /channels/:id/messages",
  "POST /channels/:id/messages",
  "PATCH /channels/:id/messages/:id",
  "DELETE /channels/:id/messages/:id",
  "POST /channels/:id/typing",
  "POST /interactions/:id/:token/callback",
  "POST /webhooks/:id/:token",
  "PATCH /webhooks/:id/:token/messages/@original",
  "PUT /applications/:id/commands",
  "PUT /applications/:id/guilds/:id/commands",
  "PUT /channels/:id/messages/:id/reactions/:emoji/@me",
  "DELETE /channels/:id/messages/:id/reactions/:emoji/@me",
];

export type Fault =
  /** 429 with Retry-After, X-RateLimit-* headers and `{ retry_after, global: false }`. */
  | { kind: "rate_limit"; retryAfterMs: number }
  /** A 5xx answer with a Discord-style JSON body. */
  | { kind: "server_error"; status: 500 | 502 | 503 | 504 }
  /** A Discord JSON error, e.g. 403 / 50007 "Cannot send messages to this user". */
  | { kind: "api_error"; status: 400 | 401 | 403 | 404; code: number; message: string }
  /**
   * Never answers (until the emulator closes). With `afterCommit` the request takes effect first,
   * which is how a client timeout leaves an ambiguous outcome.
   */
  | { kind: "hang"; afterCommit?: boolean }
  /** Drops the connection without an answer; `afterCommit` as for hang. */
  | { kind: "reset"; afterCommit?: boolean };

interface ArmedFault {
  fault: Fault;
  remaining: number;
}

/** Per-route queues of armed faults; each call to a route consumes the first one. */
export class FaultInjector {
  private readonly armed = new Map<RestRoute, ArmedFault[]>();

  failNext(route: RestRoute, fault: Fault, times = 1): void {
    if (!Number.isInteger(times) || times < 1) {
      throw new Error(`Discord emulator: failNext times must be a positive integer, got ${times}.`);
    }
    const queue = this.armed.get(route) ?? [];
    queue.push({ fault, remaining: times });
    this.armed.set(route, queue);
  }

  /** The fault for this call of `route`, if one is armed. */
  take(route: RestRoute): Fault | undefined {
    const queue = this.armed.get(route);
    const head = queue?.[0];
    if (!queue || !head) return undefined;
    head.remaining -= 1;
    if (head.remaining === 0) queue.shift();
    return head.fault;
  }

  clear(): void {
    this.armed.clear();
  }
}
