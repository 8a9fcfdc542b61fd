import type { Clock } from "../../src/util/clock.ts";
import type { HttpRoute } from "../types.ts";
import { verifySlackSignature } from "./verify.ts";

export interface EventsRouteOptions {
  path: string;
  signingSecret: string;
  clock: Clock;
  /** False once the adapter is stopping: events are refused with 503 so Slack retries them. */
  isAccepting(): boolean;
  /** Runs a verified body through Bolt and ingress; resolves once ingress resolved. */
  /** Told why an event was refused with 500 (the message only; never the body or a secret). */
  onDispatchError(error: unknown): void;
  dispatch(
    body: Record<string, unknown>,
    retryNum: number | undefined,
    retryReason: string | undefined,
  ): Promise<void>;
}

/**
 * POST handler for the Events API. The signature is checked on the raw body before anything is
 * parsed; the answer is 200 only after ingress resolved, and 500 when it rejected, so Slack retries
 * (with X-Slack-Retry-Num) instead of losing the event.
 */
export function createEventsRoute(options: EventsRouteOptions): HttpRoute {
  return {
    method: "POST",
    path: options.path,
    handle: async function handleSlackEvents(request: Request): Promise<Response> {
      const rawBody = await request.text();
      const verdict = verifySlackSignature(
        {
          timestampHeader: request.headers.get("x-slack-request-timestamp"),
          signatureHeader: request.headers.get("x-slack-signature"),
          rawBody,
        },
        options.signingSecret,
        options.clock.now(),
      );
      if (!verdict.ok) return text(401, `Slack request signature rejected (${verdict.reason})`);

      let body: unknown;
      try {
        body = isForm(request) ? formBody(rawBody) : JSON.parse(rawBody);
      } catch {
        return text(
          400,
          "Expected a JSON Events API body, a form with an interactivity `payload` (JSON) or a slash command form",
        );
      }
      if (typeof body !== "object" || body === null || Array.isArray(body))
        return text(400, "Expected a JSON object");
      const fields = body as Record<string, unknown>;
      if (fields.type === "url_verification") return Response.json({ challenge: fields.challenge });
      // Bolt reads `event` as an object before any listener runs, and throws on anything else.
      if (fields.type === "event_callback" && !isObject(fields.event))
        return text(400, "An event_callback body must carry an `event` object");
      if (!options.isAccepting()) return text(503, "Slack adapter is not accepting events; Slack will retry");

      try {
        await options.dispatch(
          fields,
          retryHeader(request),
          request.headers.get("x-slack-retry-reason") ?? undefined,
        );
      } catch (error) {
        options.onDispatchError(error);
        return text(500, "Event could not be recorded; Slack will retry");
      }
      return new Response(null, { status: 200 });
    },
  };
}

function isForm(request: Request): boolean {
  return (request.headers.get("content-type") ?? "").startsWith("application/x-www-form-urlencoded");
}

/**
 * Interactivity (button presses) arrives as a form whose `payload` field is the JSON body; a slash
 * command as a form of its fields (`command`, `text`, `trigger_id` …), which is the body itself.
 */
function formBody(rawBody: string): unknown {
  const form = new URLSearchParams(rawBody);
  const payload = form.get("payload");
  if (payload !== null) return JSON.parse(payload);
  if (form.get("command") !== null) return Object.fromEntries(form);
  throw new Error("neither a payload nor a command field");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function retryHeader(request: Request): number | undefined {
  const value = request.headers.get("x-slack-retry-num");
  if (value === null || !/^\d+$/.test(value)) return undefined;
  return Number(value);
}

function text(status: number, message: string): Response {
  return new Response(message, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}
