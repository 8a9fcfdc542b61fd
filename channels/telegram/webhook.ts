/**
 * The webhook route. The secret header is checked (in constant time) before the body is read;
 * the answer is 200 only once ingress has made the update durable, otherwise a status that makes
 * Telegram deliver it again.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Update } from "grammy/types";
import type { HttpRoute } from "../types.ts";
import type { TelegramEventSink } from "./events.ts";

export const SECRET_HEADER = "x-telegram-bot-api-secret-token";

export interface WebhookRouteOptions {
  path: string;
  secret: string;
  /**
   * Resolves when the update is durable (or deliberately skipped); rejects to have it retried.
   * `arrivedAtMs`: `performance.now()` when the request reached the route.
   */
  receive(update: Update, arrivedAtMs: number): Promise<void>;
  /** False before start() and after stop(): answer 503 so Telegram keeps the update. */
  isAccepting(): boolean;
  onEvent: TelegramEventSink;
}

export function webhookRoute(options: WebhookRouteOptions): HttpRoute {
  const expectedDigest = digest(options.secret);
  return {
    method: "POST",
    path: options.path,
    handle: async function handleTelegramWebhook(request: Request): Promise<Response> {
      const arrivedAtMs = performance.now();
      if (!options.isAccepting()) {
        options.onEvent({ kind: "webhook_rejected", status: 503, reason: "adapter not started" });
        return text(503, "not accepting updates yet");
      }
      const presented = request.headers.get(SECRET_HEADER);
      if (presented === null || !timingSafeEqual(digest(presented), expectedDigest)) {
        options.onEvent({ kind: "webhook_rejected", status: 401, reason: "missing or wrong secret token" });
        return text(401, "unauthorized");
      }
      const update = toUpdate(decodeUtf8(await request.arrayBuffer()));
      if (!update) {
        options.onEvent({ kind: "webhook_rejected", status: 400, reason: "body is not a Telegram update" });
        return text(400, "body must be a JSON Telegram update");
      }
      try {
        await options.receive(update, arrivedAtMs);
      } catch (error) {
        options.onEvent({ kind: "ingress_failed", updateId: update.update_id, error });
        return text(500, "update not stored; retry");
      }
      return text(200, "ok");
    },
  };
}

/** Hashing first gives equal-length inputs, so the comparison leaks neither content nor length. */
function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** Telegram sends UTF-8 JSON; bytes that are not UTF-8 were mangled on the way (or forged). */
function decodeUtf8(body: ArrayBuffer): string | null {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    return null;
  }
}

function toUpdate(body: string | null): Update | null {
  if (body === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return null;
  const updateId = (parsed as { update_id?: unknown }).update_id;
  return Number.isSafeInteger(updateId) ? (parsed as Update) : null;
}

function text(status: number, body: string): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}
