/**
 * The conversation API under /api (docs/api.md): create a conversation on the `api` channel,
 * admit a message to it (the same durable admission as a platform message), stream a run's
 * events, decide approvals, and send a proactive message to a platform chat through the outbox.
 * Open to operator tokens and app tokens; what an app may touch is decided by api-caller.ts.
 */
import { randomBytes } from "node:crypto";
import type { ApiMessage } from "../../../channels/api/inbound.ts";
import { type ApiOwner, parseConversationKey } from "../../../channels/api/keys.ts";
import type { IngressOutcome } from "../../../channels/types.ts";
import { SwitchboardError } from "../../errors.ts";
import type { RuntimeEvent } from "../../runtime/events.ts";
import type { RunState } from "../../runtime/types.ts";
import { eventStreamResponse, streamAbort } from "../../util/event-stream.ts";
import type { Logger } from "../../util/log.ts";
import type { Binding, MatchFacts } from "../config/bindings.ts";
import {
  type ApiCaller,
  type ConversationBinding,
  maySendTo,
  mayUseConversation,
  ownerOf,
} from "./api-caller.ts";
import { queryObject, readJsonBody, validate } from "./body.ts";
import { createConversationBody, messageBody, sendBody } from "./conversation-schemas.ts";
import { actorOf as operatorActorOf } from "./operator-routes.ts";
import { emptyBody, noQuery } from "./operator-schemas.ts";
import { apiError, json } from "./respond.ts";
import type { Route, RouteContext } from "./router.ts";
import {
  formatRunStreamEvent,
  isAfter,
  newRunStreamMemory,
  parseStreamPosition,
  toRunStreamEvents,
} from "./run-events.ts";

/** A proactive message to a platform chat, as `POST /api/send` asks for it. */
export interface ProactiveSend {
  channel: string;
  account?: string;
  target: string;
  text: string;
  idempotencyKey: string;
  actor: `operator:${string}`;
}

/** What the conversation API needs of the gateway; main.ts composes it (conversation-api-services.ts). */
export interface ConversationApiServices {
  /** Longest message text; the api channel's limit. */
  readonly maxMessageChars: number;
  /** SWITCHBOARD_CONFIG's bindings: their `apps` open platform chats and conversations to apps. */
  readonly bindings: readonly Pick<Binding, "match" | "apps">[];
  /**
   * What bindings match of a send's target: its channel, the name of the account it leaves
   * through, its chat. `input_invalid` as `send` for a channel or account it cannot go through.
   */
  sendTarget(request: Pick<ProactiveSend, "channel" | "account" | "target">): MatchFacts;
  /** A conversation's channel and its binding's `apps`; null when no channel message started any of its runs. */
  conversationBinding(conversationId: string): Promise<ConversationBinding | null>;
  /** Maps a new api conversation key to a conversation (created durably); its id. */
  createConversation(owner: ApiOwner, ref: string): Promise<string>;
  /** The conversation's current key (null: it has none any more); null when there is no such conversation. */
  conversation(conversationId: string): Promise<{ key: string | null } | null>;
  /** Hands the message to ingress through the api channel (durable admission). */
  admit(owner: ApiOwner, ref: string, message: ApiMessage): Promise<IngressOutcome>;
  /** The run's conversation and state; null when there is no such run. */
  run(runId: string): Promise<{ conversationId: string; state: RunState } | null>;
  /** The approval's conversation; null when there is no such approval. */
  approval(approvalId: string): Promise<{ conversationId: string } | null>;
  /** The conversation's durable events after `afterSeq`, then live ones, until `signal` aborts. */
  follow(conversationId: string, afterSeq: number, signal: AbortSignal): AsyncIterable<RuntimeEvent>;
  /** Enqueues the message in the outbox (once per idempotency key); `idempotency_conflict` for another content. */
  send(
    request: ProactiveSend,
  ): Promise<{ outcome: "enqueued" | "duplicate"; outboxId: string; state: string }>;
}

export interface ConversationApiDeps {
  services: ConversationApiServices | undefined;
  /** Decides an approval (the operator service's; also on a standby, where `services` is absent). */
  decide(approvalId: string, decision: "approve" | "deny", actor: `operator:${string}`): Promise<unknown>;
  maxBodyBytes: number;
  heartbeatMs: number;
  logger: Logger;
  /** Registers the stream so stopping the server ends it; returns the unregister function. */
  track(abort: AbortController): () => void;
  /** Called after each successful mutation (wakes the outbox worker). */
  onAction?: () => void;
}

export function conversationApiRoutes(deps: ConversationApiDeps): Route[] {
  const services = (): ConversationApiServices => {
    if (!deps.services)
      throw new SwitchboardError(
        "platform_unavailable",
        "This gateway runs no conversation API (it is a standby, or no token enables the api channel); use the active gateway.",
      );
    return deps.services;
  };
  const route = (
    method: "GET" | "POST",
    pattern: string,
    handle: (context: RouteContext, caller: ApiCaller) => Promise<Response>,
  ): Route => ({ method, pattern, access: "api", handle: (context) => handle(context, callerOf(context)) });

  /**
   * Whether the caller may use the conversation: its own, or (an app) a platform conversation its
   * binding's `apps` lists it in. The binding is looked up only when ownership does not decide.
   */
  const mayUse = async (caller: ApiCaller, conversationId: string, key: string | null) => {
    if (mayUseConversation(caller, key)) return true;
    if (caller.kind === "operator") return false;
    return mayUseConversation(caller, key, await services().conversationBinding(conversationId));
  };

  /** The conversation, when the caller may use it; otherwise the same 404 as for none at all. */
  const ownConversation = async (caller: ApiCaller, conversationId: string) => {
    const conversation = await services().conversation(conversationId);
    if (conversation === null || !(await mayUse(caller, conversationId, conversation.key)))
      throw new SwitchboardError(
        "not_found",
        `There is no conversation ${conversationId} this token may use; create one with POST /api/conversations.`,
      );
    return conversation;
  };

  return [
    route("POST", "/api/conversations", async ({ request }, caller) => {
      await readJsonBody(request, createConversationBody, deps.maxBodyBytes);
      const ref = randomBytes(16).toString("base64url");
      const conversationId = await services().createConversation(ownerOf(caller), ref);
      return json({ conversationId, channel: "api", surface: "api:dm" }, 201);
    }),

    route("POST", "/api/conversations/:id/messages", async ({ request, params }, caller) => {
      const api = services();
      const conversationId = params.id!;
      const body = await readJsonBody(request, messageBody(api.maxMessageChars), deps.maxBodyBytes);
      const { key } = await ownConversation(caller, conversationId);
      const parsed = key === null ? null : parseConversationKey(key);
      if (parsed === null)
        throw new SwitchboardError(
          "input_invalid",
          `Conversation ${conversationId} is not an api conversation; write to it on its own channel, or create one with POST /api/conversations.`,
        );
      const outcome = await api.admit(parsed.owner, parsed.ref, {
        text: body.text ?? "",
        attachments: body.attachments ?? [],
        idempotencyKey: body.idempotencyKey,
      });
      deps.onAction?.();
      return answerOf(outcome, conversationId);
    }),

    route("GET", "/api/runs/:id/events", async ({ request, url, params, requestId }, caller) => {
      const api = services();
      validate(noQuery, queryObject(url), "query");
      const runId = params.id!;
      const header = request.headers.get("last-event-id");
      const resumeAfter = header === null || header.trim() === "" ? null : parseStreamPosition(header.trim());
      if (header !== null && header.trim() !== "" && resumeAfter === null)
        throw new SwitchboardError(
          "input_invalid",
          "Invalid header 'Last-Event-ID': expected an id this stream sent (<seq> or <seq>.<n>).",
        );
      const run = await api.run(runId);
      const conversation = run === null ? null : await api.conversation(run.conversationId);
      if (
        run === null ||
        conversation === null ||
        !(await mayUse(caller, run.conversationId, conversation.key))
      )
        throw new SwitchboardError("not_found", `There is no run ${runId} this token may read.`);
      const abort = streamAbort(request, deps.track);
      return eventStreamResponse({
        signal: abort.signal,
        heartbeatMs: deps.heartbeatMs,
        open(write, end) {
          void (async () => {
            const memory = newRunStreamMemory();
            try {
              // From the ledger's start: the derivation needs the run's earlier events (tool calls
              // told), and ids are only skipped, never guessed.
              for await (const event of api.follow(run.conversationId, 0, abort.signal)) {
                if (abort.signal.aborted) break;
                let finished = false;
                for (const made of toRunStreamEvents(event, runId, memory)) {
                  if (made.id !== undefined && !isAfter(made.id, resumeAfter)) continue;
                  write(formatRunStreamEvent(made));
                }
                if (event.type === "terminal" && event.runId === runId) finished = true;
                if (finished) break;
              }
            } catch (error) {
              if (!abort.signal.aborted)
                deps.logger.error("http.run_events_failed", { requestId, runId, error });
            } finally {
              end();
            }
          })();
          return () => abort.abort();
        },
      });
    }),

    ...(["approve", "deny"] as const).map((decision) =>
      route("POST", `/api/approvals/:id/${decision}`, async (context, caller) => {
        const { request, params } = context;
        await readJsonBody(request, emptyBody, deps.maxBodyBytes);
        const approvalId = params.id!;
        if (caller.kind === "app") {
          const api = services();
          const approval = await api.approval(approvalId);
          const conversation = approval === null ? null : await api.conversation(approval.conversationId);
          if (
            approval === null ||
            conversation === null ||
            !(await mayUse(caller, approval.conversationId, conversation.key))
          )
            throw new SwitchboardError(
              "not_found",
              `There is no approval ${approvalId} this token may decide; the run's events name its approvals.`,
            );
        }
        const decided = await deps.decide(approvalId, decision, actorOf(context, caller));
        deps.onAction?.();
        return json(decided);
      }),
    ),

    route("POST", "/api/send", async (context, caller) => {
      const { request } = context;
      const api = services();
      const body = await readJsonBody(request, sendBody(api.maxMessageChars), deps.maxBodyBytes);
      // An operator may send anywhere; only an app's target is resolved and matched.
      if (caller.kind === "app") {
        const allowed = maySendTo(caller, api.bindings, api.sendTarget(body));
        if (!allowed.allowed) return apiError(403, "forbidden", allowed.reason);
      }
      const sent = await api.send({
        channel: body.channel,
        ...(body.account === undefined ? {} : { account: body.account }),
        target: body.target,
        text: body.text,
        idempotencyKey: body.idempotencyKey,
        actor: actorOf(context, caller),
      });
      deps.onAction?.();
      return json(sent, 202);
    }),
  ];
}

/**
 * Who the outbox and approval histories record: an app as `operator:app.<name>`; an operator as
 * the operator API records them (a named token's name, else X-Switchboard-Actor).
 */
function actorOf(context: RouteContext, caller: ApiCaller): `operator:${string}` {
  return caller.kind === "app" ? `operator:app.${caller.name}` : operatorActorOf(context);
}

/** The caller the server authenticated: an app when its token was an app's, else an operator. */
function callerOf(context: RouteContext): ApiCaller {
  if (context.app !== undefined) return { kind: "app", name: context.app };
  return { kind: "operator", name: context.operator ?? null };
}

/** What ingress made of the message, as the HTTP answer. */
function answerOf(outcome: IngressOutcome, conversationId: string): Response {
  switch (outcome.kind) {
    case "admitted":
    case "duplicate":
      if (outcome.runId === null)
        return apiError(
          409,
          "state_conflict",
          "This idempotency key was used for a message that was refused (too fast, over budget); send it again with a new key.",
        );
      return json(
        {
          outcome: outcome.kind,
          runId: outcome.runId,
          conversationId: outcome.conversationId ?? conversationId,
          events: `/api/runs/${encodeURIComponent(outcome.runId)}/events`,
        },
        202,
      );
    case "command":
      return json({ outcome: "command", reply: outcome.reply }, 200);
    case "ignored":
      if (outcome.reason === "flood limit")
        return apiError(
          429,
          "rate_limited",
          "Too many messages from this caller on the api:dm surface (its messagesPerMinute); wait a minute and send it with a new key.",
          { "retry-after": "60" },
        );
      if (outcome.reason === "budget")
        return apiError(
          403,
          "forbidden",
          "The message was refused: a token or cost budget is spent (GET /api/budgets shows which).",
        );
      return apiError(
        400,
        "input_invalid",
        `The message was not admitted (${outcome.reason}); nothing reached the agent.`,
      );
    default:
      return apiError(500, "internal", `Unexpected ingress outcome ${outcome.kind}.`);
  }
}
