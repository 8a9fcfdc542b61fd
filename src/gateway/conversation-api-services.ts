/**
 * The conversation API's services (src/gateway/http/conversation-api.ts) over a running gateway:
 * the api channel's adapter for admission, the stores for ownership and runs, and the outbox for
 * proactive sends. Approval decisions go through the operator service (src/gateway/http/server.ts).
 */

import type { ApiChannel } from "../../channels/api/adapter.ts";
import { toInboundMessage } from "../../channels/api/inbound.ts";
import { conversationKeyFor } from "../../channels/api/keys.ts";
import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import { knownAccount, routeToAccount } from "../../outbox/adapter-route.ts";
import { SwitchboardError } from "../errors.ts";
import { shortHash } from "../util/ids.ts";
import type { Gateway } from "./app.ts";
import { accountNameOf } from "./binding-facts.ts";
import { conversationSettings } from "./config/index.ts";
import type { ConversationApiServices, ProactiveSend } from "./http/conversation-api.ts";
import { conversationFactsOf, RUNS_SEARCHED } from "./settings-view.ts";
import { chatOfTarget } from "./target-chat.ts";

/** The services, or undefined when the gateway runs no api channel (no token enables it). */
export function conversationApiServices(
  gateway: Pick<Gateway, "adapters" | "stores" | "runtime" | "worker" | "config">,
  clock: { now(): number },
): ConversationApiServices | undefined {
  const api = gateway.adapters.get("api") as ApiChannel | undefined;
  if (!api) return undefined;
  const { stores } = gateway;
  const { file } = gateway.config;
  return {
    maxMessageChars: api.limits.maxMessageChars,
    bindings: file.bindings,
    sendTarget(request) {
      const channel = request.channel as ChannelName;
      const adapter = sendAdapter(gateway, request);
      const id = knownAccount(adapter);
      if (id === null)
        throw new SwitchboardError(
          "platform_unavailable",
          `The ${channel} account is still starting, so which binding covers the target is not known yet; retry with the same idempotencyKey.`,
        );
      return {
        channel,
        account: accountNameOf(file, channel, id),
        chat: chatOfTarget(channel, request.target),
      };
    },
    async conversationBinding(conversationId) {
      const runs = await stores.operator.listRuns({ conversationId, limit: RUNS_SEARCHED });
      const facts = conversationFactsOf(file, runs);
      return facts === null ? null : { channel: facts.channel, apps: conversationSettings(file, facts).apps };
    },
    createConversation: (owner, ref) =>
      stores.runtime.resolveConversationKey(conversationKeyFor(owner, ref), clock.now()),
    async conversation(conversationId) {
      const summary = await stores.operator.conversationSummary(conversationId);
      return summary === null ? null : { key: summary.key };
    },
    admit: (owner, ref, message) => api.receive(toInboundMessage(message, { owner, ref }, clock.now())),
    async run(runId) {
      const view = await stores.runtime.loadRun(runId);
      return view === null ? null : { conversationId: view.run.conversationId, state: view.run.state };
    },
    async approval(approvalId) {
      const approval = await stores.runtime.loadApproval(approvalId);
      return approval === null ? null : { conversationId: approval.conversationId };
    },
    follow: (conversationId, afterSeq, signal) => gateway.runtime.follow(conversationId, afterSeq, signal),
    send: (request) => sendProactive(gateway, request, clock.now()),
  };
}

/**
 * One outbox record per (caller, idempotency key): a repeat finds it (`duplicate`), a repeat with
 * other content is `idempotency_conflict`. The record belongs to no run or conversation of the
 * gateway; its `runId` and `conversationId` name the send (`send_<hash>`), which GET /api/outbox
 * shows and filters by.
 */
async function sendProactive(
  gateway: Pick<Gateway, "adapters" | "stores" | "worker">,
  request: ProactiveSend,
  nowMs: number,
): Promise<{ outcome: "enqueued" | "duplicate"; outboxId: string; state: string }> {
  const channel = request.channel as ChannelName;
  const adapter = sendAdapter(gateway, request);
  const key = `send:${request.actor}:${request.idempotencyKey}`;
  const id = `send_${shortHash(key)}`;
  const insert = {
    key,
    runId: id,
    conversationId: id,
    channel,
    account: adapter.account,
    target: request.target,
    kind: "message" as const,
    markdown: request.text,
  };
  const inserted = await gateway.stores.outbox.insert([insert], nowMs);
  const record = await gateway.stores.outbox.show(key);
  if (!record) throw new Error(`outbox record ${key} is missing right after its insert`);
  if (inserted.length === 0) {
    if (record.channel !== channel || record.target !== request.target || record.markdown !== request.text)
      throw new SwitchboardError(
        "idempotency_conflict",
        `idempotencyKey ${request.idempotencyKey} was already used for another message (outbox record ${record.id}); use a new key for a new message.`,
      );
    return { outcome: "duplicate", outboxId: record.id, state: record.state };
  }
  gateway.worker.notify();
  return { outcome: "enqueued", outboxId: record.id, state: record.state };
}

/**
 * The adapter a send to `request.channel` leaves through: the account named, or the channel's only
 * one; never another bot of the channel. `input_invalid` names what to fix.
 */
function sendAdapter(
  gateway: Pick<Gateway, "adapters">,
  request: Pick<ProactiveSend, "channel" | "account">,
): ChannelAdapter {
  const channel = request.channel as ChannelName;
  const candidates = [...gateway.adapters.values()].filter((adapter) => adapter.channel === channel);
  if (candidates.length === 0 || channel === "api") {
    const configured = [...new Set([...gateway.adapters.values()].map((adapter) => adapter.channel))];
    throw new SwitchboardError(
      "input_invalid",
      `Invalid field 'channel': ${request.channel} is not configured on this gateway (configured: ${configured.filter((name) => name !== "api").join(", ") || "none"}).`,
    );
  }
  const accounts = candidates.map((candidate) => knownAccount(candidate) ?? "(not started)").join(", ");
  // The send leaves through the account named, never through another bot of the channel.
  const adapter =
    request.account === undefined
      ? candidates.length === 1
        ? candidates[0]!
        : null
      : routeToAccount(candidates, channel, request.account).adapter;
  if (!adapter)
    throw new SwitchboardError(
      "input_invalid",
      request.account === undefined
        ? `Invalid field 'account': ${request.channel} has several accounts (${accounts}); name the one to send through.`
        : `Invalid field 'account': ${request.channel} has no account ${request.account} (accounts: ${accounts}).`,
    );
  return adapter;
}
