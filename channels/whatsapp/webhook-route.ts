/**
 * `/whatsapp/webhook` on the gateway's HTTP server: Meta's GET handshake, and the POSTed events.
 * A POST is answered 200 only after every message in it went through ingress and every status
 * was recorded; anything else makes Meta deliver the whole body again (items already handled then
 * come back as duplicates). Every account of the channel serves the one path (`shared`): Meta
 * posts all the numbers of an app to the app's one callback URL, and each adapter takes the
 * items of its own number (`metadata.phone_number_id`).
 */
import type { HttpRoute } from "../types.ts";
import { verifySubscription, verifyWhatsAppSignature } from "./verify.ts";
import { readWebhookBody, type WebhookItems } from "./webhook-schema.ts";

export interface WebhookRouteOptions {
  path: string;
  appSecret: string;
  verifyToken: string;
  /** False while the adapter is not started or is stopping: POSTs get 503 and Meta redelivers them. */
  isAccepting(): boolean;
  /** Handles a verified, well-formed body; rejects when something in it could not be recorded. */
  handle(items: WebhookItems): Promise<void>;
  /** A request was refused: why, for the log (never the body or a secret). */
  onRefused(status: number, reason: string): void;
}

export function createWebhookRoutes(options: WebhookRouteOptions): HttpRoute[] {
  return [
    {
      method: "GET",
      path: options.path,
      shared: true,
      handle: async function answerWhatsAppHandshake(request: Request): Promise<Response> {
        const verdict = verifySubscription(new URL(request.url).searchParams, options.verifyToken);
        if (!verdict.ok) {
          options.onRefused(403, verdict.reason);
          return text(403, "Verification refused: hub.verify_token does not match WHATSAPP_VERIFY_TOKEN");
        }
        return text(200, verdict.challenge);
      },
    },
    {
      method: "POST",
      path: options.path,
      shared: true,
      handle: async function receiveWhatsAppWebhook(request: Request): Promise<Response> {
        const rawBody = new Uint8Array(await request.arrayBuffer());
        const signature = verifyWhatsAppSignature(
          rawBody,
          request.headers.get("x-hub-signature-256"),
          options.appSecret,
        );
        if (!signature.ok) {
          options.onRefused(401, signature.reason);
          return text(
            401,
            `X-Hub-Signature-256 refused (${signature.reason}); is WHATSAPP_APP_SECRET the app's secret?`,
          );
        }
        let body: unknown;
        try {
          body = JSON.parse(new TextDecoder().decode(rawBody));
        } catch {
          options.onRefused(400, "the body is not JSON");
          return text(400, "Expected a JSON webhook body");
        }
        const reading = readWebhookBody(body);
        if (!reading.ok) {
          options.onRefused(400, reading.problem);
          return text(400, `Expected a WhatsApp webhook body: ${reading.problem}`);
        }
        if (!options.isAccepting()) {
          options.onRefused(503, "the adapter is not accepting events");
          return text(503, "The WhatsApp channel is not accepting events now; Meta will deliver this again");
        }
        try {
          await options.handle(reading.items);
        } catch (error) {
          options.onRefused(500, error instanceof Error ? error.message : String(error));
          return text(500, "The event could not be recorded; Meta will deliver it again");
        }
        return new Response(null, { status: 200 });
      },
    },
  ];
}

function text(status: number, message: string): Response {
  return new Response(message, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}
