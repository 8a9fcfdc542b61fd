/**
 * A tiny stand-in for the gateway's operator HTTP API (the contract in docs/cli.md), serving a real
 * OperatorService. It records every request so tests can check what the CLI sent.
 */
import { isSwitchboardError } from "../../../src/errors.ts";
import type { OperatorService } from "../../../src/operator/types.ts";

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | null;
  actor: string | null;
  body: unknown;
}

export interface FakeGateway {
  url: string;
  requests: RecordedRequest[];
  stop(): Promise<void>;
}

type Handler = (
  params: string[],
  query: URLSearchParams,
  body: Record<string, unknown>,
  actor: string,
) => Promise<unknown>;

const STATUS: Record<string, number> = {
  not_found: 404,
  input_invalid: 400,
  state_conflict: 409,
  version_conflict: 409,
  unauthorized: 401,
};

function error(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status });
}

const num = (value: string | null) => (value === null ? undefined : Number(value));
const str = (value: string | null) => value ?? undefined;

function found(value: unknown, what: string): unknown {
  if (value === null) throw Object.assign(new Error(`There is no ${what}.`), { status: 404 });
  return value;
}

export function startFakeGateway(options: { operator: OperatorService; token: string }): FakeGateway {
  const { operator } = options;
  type Actor = `operator:${string}`;
  const routes: Record<string, Handler> = {
    "GET /api/runs": (_, q) =>
      operator.runs.list({
        state: str(q.get("state")) as never,
        conversationId: str(q.get("conversation")),
        cursor: str(q.get("cursor")),
        limit: num(q.get("limit")),
      }),
    "GET /api/runs/:id": async ([id]) => found(await operator.runs.show(id!), "run"),
    "GET /api/conversations": (_, q) =>
      operator.conversations.list({
        query: str(q.get("q")),
        cursor: str(q.get("cursor")),
        limit: num(q.get("limit")),
      }),
    "GET /api/conversations/:id": async ([id], q) =>
      found(
        await operator.conversations.show(id!, {
          cursor: str(q.get("cursor")),
          limit: num(q.get("limit")),
        }),
        "conversation",
      ),
    "GET /api/outbox": (_, q) =>
      operator.outbox.list({
        state: str(q.get("state")) as never,
        conversationId: str(q.get("conversation")),
        cursor: str(q.get("cursor")),
        limit: num(q.get("limit")),
      }),
    "GET /api/outbox/:id": async ([id]) => found(await operator.outbox.show(id!), "outbox record"),
    "POST /api/outbox/:id/retry": ([id], _, b, actor) =>
      operator.outbox.retry(id!, actor as Actor, b.note as string | undefined),
    "POST /api/outbox/:id/resolve": ([id], _, b, actor) =>
      operator.outbox.resolve(id!, b.outcome as "delivered", actor as Actor, String(b.note ?? "")),
    "POST /api/outbox/:id/cancel": ([id], _, b, actor) =>
      operator.outbox.cancel(id!, actor as Actor, b.note as string | undefined),
    "GET /api/access": () => operator.access.list(),
    "POST /api/access/approve": (_, __, b, actor) => operator.access.approve(String(b.code), actor as Actor),
    // Channel, then user id.
    "POST /api/access/:id/:id/revoke": ([channel, userId], _, __, actor) =>
      operator.access.revoke(channel!, userId!, actor as Actor),
    "GET /api/schedules": (_, q) =>
      operator.schedules.list({
        conversationId: str(q.get("conversation")),
        includeEnded: q.get("all") === "1",
      }),
    "GET /api/schedules/:id/runs": ([id], q) => operator.schedules.runs(id!, num(q.get("limit"))),
    "POST /api/schedules/:id/pause": ([id]) => operator.schedules.pause(id!),
    "POST /api/schedules/:id/resume": ([id]) => operator.schedules.resume(id!),
    "POST /api/schedules/:id/cancel": ([id]) => operator.schedules.cancel(id!),
  };
  const table = Object.entries(routes).map(([route, handler]) => {
    const [method, template] = route.split(" ") as [string, string];
    return { method, pattern: new RegExp(`^${template.replaceAll(":id", "([^/]+)")}$`), handler };
  });
  const requests: RecordedRequest[] = [];

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const text = request.method === "POST" ? await request.text() : "";
      const body = (text === "" ? {} : JSON.parse(text)) as Record<string, unknown>;
      const actorHeader = request.headers.get("x-switchboard-actor");
      requests.push({
        method: request.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        authorization: request.headers.get("authorization"),
        actor: actorHeader,
        body: request.method === "POST" ? body : undefined,
      });
      if (request.headers.get("authorization") !== `Bearer ${options.token}`) {
        return error(401, "unauthorized", "Send the operator token as 'Authorization: Bearer <token>'.");
      }
      for (const { method, pattern, handler } of table) {
        const match = pattern.exec(url.pathname);
        if (!match || method !== request.method) continue;
        try {
          const params = match.slice(1).map((p) => decodeURIComponent(p));
          const actor = actorHeader === null ? "operator:api" : `operator:${actorHeader}`;
          return Response.json(await handler(params, url.searchParams, body, actor));
        } catch (caught) {
          const status = (caught as { status?: number }).status;
          if (status === 404) return error(404, "not_found", (caught as Error).message);
          if (isSwitchboardError(caught) && STATUS[caught.code]) {
            return error(STATUS[caught.code]!, caught.code, caught.message);
          }
          return error(500, "internal", "The fake gateway failed.");
        }
      }
      return error(404, "not_found", `No route ${request.method} ${url.pathname}.`);
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    stop: async () => {
      await server.stop(true);
    },
  };
}
