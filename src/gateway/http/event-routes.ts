/**
 * GET /api/conversations/:id/events: a conversation's runtime events as Server-Sent Events.
 * GET /api/events: what changed anywhere (ids and states), for the console's live lists.
 */
import { SwitchboardError } from "../../errors.ts";
import { eventStreamResponse, streamAbort } from "../../util/event-stream.ts";
import type { Logger } from "../../util/log.ts";
import { queryObject, validate } from "./body.ts";
import { eventsQuery, lastEventId, noQuery } from "./operator-schemas.ts";
import type { Route } from "./router.ts";
import { runtimeEventStream } from "./sse.ts";
import type { HttpServices } from "./types.ts";

export interface EventRoutesDeps {
  services: Pick<HttpServices, "operator" | "follow" | "changes">;
  heartbeatMs: number;
  logger: Logger;
  /** Registers the stream so stopping the server ends it; returns the unregister function. */
  track(abort: AbortController): () => void;
}

/**
 * Starts after `Last-Event-ID` when the client reconnects, else after `?cursor=` (default 0: the
 * whole ledger). Browsers' EventSource cannot send the Authorization header, so the console reads
 * this stream with fetch(); there is deliberately no `?token=` fallback (it would end up in logs).
 */
export function eventRoutes(deps: EventRoutesDeps): Route[] {
  return [
    {
      method: "GET",
      pattern: "/api/events",
      access: "operator",
      handle: async ({ url, request }) => {
        validate(noQuery, queryObject(url), "query");
        const feed = deps.services.changes;
        if (!feed)
          throw new SwitchboardError(
            "platform_unavailable",
            "This gateway publishes no live changes (it is a standby); open the console of the active gateway.",
          );
        const abort = streamAbort(request, deps.track);
        return eventStreamResponse({
          signal: abort.signal,
          heartbeatMs: deps.heartbeatMs,
          open: (write) =>
            feed.subscribe((change) => write(`event: change\ndata: ${JSON.stringify(change)}\n\n`)),
        });
      },
    },
    {
      method: "GET",
      pattern: "/api/conversations/:id/events",
      access: "operator",
      handle: async ({ request, url, params, requestId }) => {
        const conversationId = params.id!;
        const { cursor } = validate(eventsQuery, queryObject(url), "query");
        const header = request.headers.get("last-event-id");
        const resumeAfter = header === null || header === "" ? undefined : validateHeader(header);
        const exists = await deps.services.operator.conversations.show(conversationId, { limit: 1 });
        if (!exists)
          throw new SwitchboardError(
            "not_found",
            `There is no conversation ${conversationId}; list them with GET /api/conversations.`,
          );
        const abort = streamAbort(request, deps.track);
        return runtimeEventStream({
          events: deps.services.follow(conversationId, resumeAfter ?? cursor ?? 0, abort.signal),
          abort,
          heartbeatMs: deps.heartbeatMs,
          onError: (error) => deps.logger.error("http.sse_failed", { requestId, conversationId, error }),
        });
      },
    },
  ];
}

function validateHeader(value: string): number {
  const parsed = lastEventId.safeParse(value);
  if (!parsed.success)
    throw new SwitchboardError(
      "input_invalid",
      "Invalid header 'Last-Event-ID': expected a non-negative integer.",
    );
  return parsed.data;
}
