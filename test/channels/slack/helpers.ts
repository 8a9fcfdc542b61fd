export { recordingLogger } from "../../support/logger.ts";

import type { HttpRoute, InboundMessage, Ingress, IngressOutcome } from "../../../channels/types.ts";

/**
 * An ingress double: records every message, and answers with `decide` (admitted by default).
 * `decide` may throw/reject to play an ingress whose transaction failed.
 */
export function recordingIngress(
  decide: (message: InboundMessage, call: number) => Promise<IngressOutcome> | IngressOutcome = () => ({
    kind: "admitted",
    runId: "run_1",
    conversationId: "conv_1",
  }),
): Ingress & { messages: InboundMessage[] } {
  const messages: InboundMessage[] = [];
  const ingress = async (message: InboundMessage) => {
    messages.push(message);
    return decide(message, messages.length);
  };
  return Object.assign(ingress, { messages });
}

/** Serves adapter routes the way the gateway will: one Bun.serve on 127.0.0.1. */
export function serveRoutes(routes: HttpRoute[]): { url: string; stop(): Promise<void> } {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      const { pathname } = new URL(request.url);
      const route = routes.find(
        (candidate) => candidate.path === pathname && candidate.method === request.method,
      );
      return route === undefined ? new Response("not found", { status: 404 }) : route.handle(request);
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}
