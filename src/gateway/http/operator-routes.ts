/** The operator API under /api: thin HTTP over OperatorService, every input validated with zod. */
import type { z } from "zod";
import { SwitchboardError } from "../../errors.ts";
import type { OperatorService } from "../../operator/types.ts";
import type { ExplainedConversation } from "../config/explain.ts";
import type { Dashboard } from "../dashboard.ts";
import { queryObject, readJsonBody, validate } from "./body.ts";
import { clientKey } from "./client-address.ts";
import {
  accessApproveBody,
  actorHeader,
  approvalsQuery,
  branchBody,
  budgetRaiseBody,
  conversationQuery,
  conversationsQuery,
  emptyBody,
  importBody,
  limitQuery,
  modelBody,
  noQuery,
  noteBody,
  outboxQuery,
  resolveBody,
  runsQuery,
  schedulesQuery,
  searchQuery,
} from "./operator-schemas.ts";
import { json } from "./respond.ts";
import type { Route, RouteContext } from "./router.ts";

export interface OperatorRoutesDeps {
  operator: OperatorService;
  maxBodyBytes: number;
  onOperatorAction?: () => void;
  dashboard?: () => Promise<Dashboard>;
  conversationSettings?: ((conversationId: string) => Promise<ExplainedConversation | null>) | undefined;
}

type Actor = `operator:${string}`;

export function operatorRoutes(deps: OperatorRoutesDeps): Route[] {
  const { operator } = deps;
  const read = (pattern: string, handle: (context: RouteContext) => Promise<unknown>): Route => ({
    method: "GET",
    pattern,
    access: "operator",
    handle: async (context) => json(await handle(context)),
  });
  const mutate = <S extends z.ZodType>(
    pattern: string,
    schema: S,
    handle: (context: RouteContext, body: z.infer<S>, actor: Actor) => Promise<unknown>,
  ): Route => ({
    method: "POST",
    pattern,
    access: "operator",
    handle: async (context) => {
      const actor = actorOf(context);
      const body = await readJsonBody(context.request, schema, deps.maxBodyBytes);
      const result = await handle(context, body, actor);
      deps.onOperatorAction?.();
      return json(result);
    },
  });
  const query = <S extends z.ZodType>(context: RouteContext, schema: S): z.infer<S> =>
    validate(schema, queryObject(context.url), "query");
  const param = (context: RouteContext, name: string): string => context.params[name]!;

  return [
    read("/api/dashboard", async (c) => {
      query(c, noQuery);
      if (!deps.dashboard)
        throw new SwitchboardError(
          "platform_unavailable",
          "This gateway keeps no dashboard (it is a standby); open the console of the active gateway.",
        );
      return deps.dashboard();
    }),
    read("/api/access", async (c) => {
      query(c, noQuery);
      return operator.access.list();
    }),
    mutate("/api/access/approve", accessApproveBody, (c, body, actor) =>
      operator.access.approve(body.code, actor, pairingAttemptKey(c)),
    ),
    mutate("/api/access/:channel/:userId/revoke", emptyBody, (c, _body, actor) =>
      operator.access.revoke(param(c, "channel"), param(c, "userId"), actor),
    ),
    read("/api/budgets", async (c) => {
      query(c, noQuery);
      return operator.budgets.show();
    }),
    read("/api/budgets/:scope", async (c) => {
      query(c, noQuery);
      return operator.budgets.status(param(c, "scope"));
    }),
    mutate("/api/budgets/:scope/raise", budgetRaiseBody, (c, body, actor) =>
      operator.budgets.raise(param(c, "scope"), body, actor),
    ),
    mutate("/api/budgets/:scope/reset", emptyBody, (c, _body, actor) =>
      operator.budgets.reset(param(c, "scope"), actor),
    ),
    mutate("/api/budgets/:scope/clear", emptyBody, (c, _body, actor) =>
      operator.budgets.clear(param(c, "scope"), actor),
    ),
    read("/api/approvals", async (c) => {
      const q = query(c, approvalsQuery);
      return operator.approvals.list({ state: q.state, conversationId: q.conversation, limit: q.limit });
    }),
    // POST /api/approvals/:id/approve|deny: conversation-api.ts (app tokens decide their own).
    read("/api/runs", async (c) => {
      const q = query(c, runsQuery);
      return operator.runs.list({
        state: q.state,
        conversationId: q.conversation,
        cursor: q.cursor,
        limit: q.limit,
      });
    }),
    read("/api/runs/:id", async (c) => {
      query(c, noQuery);
      return found(await operator.runs.show(param(c, "id")), `run ${param(c, "id")}`, "GET /api/runs");
    }),
    read("/api/conversations", async (c) => {
      const q = query(c, conversationsQuery);
      return operator.conversations.list({ cursor: q.cursor, limit: q.limit, query: q.q });
    }),
    read("/api/conversations/:id", async (c) => {
      const q = query(c, conversationQuery);
      const id = param(c, "id");
      const page = await operator.conversations.show(id, { cursor: q.cursor, limit: q.limit });
      return found(page, `conversation ${id}`, "GET /api/conversations");
    }),
    read("/api/conversations/:id/settings", async (c) => {
      query(c, noQuery);
      const id = param(c, "id");
      if (!deps.conversationSettings)
        throw new SwitchboardError(
          "platform_unavailable",
          "This gateway reads no configuration (it is a standby); open the console of the active gateway.",
        );
      const explained = await deps.conversationSettings(id);
      if (explained === null)
        throw new SwitchboardError(
          "not_found",
          `Conversation ${id} has no run a channel started, so no bindings or surfaces apply to it; list conversations with GET /api/conversations.`,
        );
      return explained;
    }),
    read("/api/conversations/:id/usage", async (c) => {
      query(c, noQuery);
      return operator.budgets.conversation(param(c, "id"));
    }),
    read("/api/search", async (c) => {
      const q = query(c, searchQuery);
      return operator.search(q.q, { conversationId: q.conversation, limit: q.limit });
    }),
    mutate("/api/conversations/:id/model", modelBody, (c, body, actor) =>
      operator.conversations.setModel(param(c, "id"), body.model, actor),
    ),
    mutate("/api/conversations/import", importBody, (_c, body, actor) =>
      operator.conversations.import(body.jsonl, actor),
    ),
    read("/api/conversations/:id/export", async (c) => {
      query(c, noQuery);
      const id = param(c, "id");
      return found(await operator.conversations.export(id), `conversation ${id}`, "GET /api/conversations");
    }),
    mutate("/api/conversations/:id/branch", branchBody, (c, body, actor) =>
      operator.conversations.branch(param(c, "id"), body.through, actor),
    ),
    mutate("/api/conversations/:id/purge", emptyBody, (c, _body, actor) =>
      operator.conversations.purge(param(c, "id"), actor),
    ),
    read("/api/outbox", async (c) => {
      const q = query(c, outboxQuery);
      return operator.outbox.list({
        state: q.state,
        conversationId: q.conversation,
        cursor: q.cursor,
        limit: q.limit,
      });
    }),
    read("/api/outbox/:id", async (c) => {
      query(c, noQuery);
      return found(
        await operator.outbox.show(param(c, "id")),
        `outbox record ${param(c, "id")}`,
        "GET /api/outbox",
      );
    }),
    mutate("/api/outbox/:id/retry", noteBody, (c, body, actor) =>
      operator.outbox.retry(param(c, "id"), actor, body.note),
    ),
    mutate("/api/outbox/:id/resolve", resolveBody, (c, body, actor) =>
      operator.outbox.resolve(param(c, "id"), body.outcome, actor, body.note),
    ),
    mutate("/api/outbox/:id/cancel", noteBody, (c, body, actor) =>
      operator.outbox.cancel(param(c, "id"), actor, body.note),
    ),
    read("/api/schedules", async (c) => {
      const q = query(c, schedulesQuery);
      return operator.schedules.list({
        conversationId: q.conversation,
        includeEnded: q.all === "1" || q.all === "true",
      });
    }),
    read("/api/schedules/:id/runs", async (c) =>
      operator.schedules.runs(param(c, "id"), query(c, limitQuery).limit),
    ),
    mutate("/api/schedules/:id/pause", emptyBody, (c) => operator.schedules.pause(param(c, "id"))),
    mutate("/api/schedules/:id/resume", emptyBody, (c) => operator.schedules.resume(param(c, "id"))),
    mutate("/api/schedules/:id/cancel", emptyBody, (c) => operator.schedules.cancel(param(c, "id"))),
  ];
}

/**
 * Whom wrong pairing codes are counted against: a named operator (their token proves who), else
 * the client's address, since anyone with the shared token may send any X-Switchboard-Actor.
 */
function pairingAttemptKey({ operator, clientAddress }: RouteContext): string {
  return operator !== undefined ? `operator:${operator}` : `address:${clientKey(clientAddress)}`;
}

/** A named operator's own token says who acts; with the shared token, X-Switchboard-Actor does. */
export function actorOf({ request, operator }: RouteContext): Actor {
  if (operator !== undefined) return `operator:${operator}`;
  const header = request.headers.get("x-switchboard-actor");
  if (header === null) return "operator:api";
  const parsed = actorHeader.safeParse(header);
  if (!parsed.success)
    throw new SwitchboardError(
      "input_invalid",
      `Invalid header 'X-Switchboard-Actor': ${parsed.error.issues[0]?.message ?? "invalid"}.`,
    );
  return `operator:${parsed.data}`;
}

function found<T>(value: T | null, what: string, listRoute: string): T {
  if (value === null)
    throw new SwitchboardError("not_found", `There is no ${what}; list them with ${listRoute}.`);
  return value;
}
