import { type InboundMessage, type IngressOutcome, inboundMessageSchema } from "../../channels/types.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { RuntimeStore } from "../runtime/store.ts";
import type { InputPart } from "../runtime/types.ts";
import type { Clock } from "../util/clock.ts";
import { killPoint } from "../util/kill-point.ts";
import type { Logger } from "../util/log.ts";
import type { ChatCommands } from "./commands.ts";
import { type AllowList, type FileConfig, surfacePolicy } from "./config.ts";
import type { RunContext } from "./context.ts";
import type { Metrics } from "./metrics.ts";
import type { ReplyTimeline } from "./reply-timeline.ts";

/** Longest input text admitted to the model, in characters. */
export const MAX_INPUT_CHARS = 16_000;

export interface IngressOptions {
  runtime: Runtime;
  store: RuntimeStore;
  file: FileConfig;
  allowLists: Partial<Record<InboundMessage["channel"], AllowList>>;
  commands: ChatCommands;
  metrics: Metrics;
  /** Times each admission and marks the run for the later reply stages. */
  timeline?: Pick<ReplyTimeline, "received" | "admitted">;
  clock: Clock;
  logger: Logger;
}

/**
 * T1: turns a platform message into at most one admitted run. Everything that decides to ignore
 * an update (bots, access, mention gating, oversize) happens before the model can be reached;
 * everything that accepts one commits durably (ingress receipt + conversation mapping + admission
 * in one transaction) before it resolves, so the adapter acknowledges only what is safe.
 */
export function createIngress(options: IngressOptions): (message: InboundMessage) => Promise<IngressOutcome> {
  const { runtime, store, file, metrics, clock, logger } = options;

  const ignore = (message: InboundMessage, reason: string): IngressOutcome => {
    metrics.inboundIgnored(message.channel, reason);
    logger.debug("ingress.ignored", { channel: message.channel, updateKey: message.updateKey, reason });
    return { kind: "ignored", reason };
  };

  return async function ingest(candidate: InboundMessage): Promise<IngressOutcome> {
    const receivedAtMs = options.timeline?.received();
    const parsed = inboundMessageSchema.safeParse(candidate);
    if (!parsed.success) {
      logger.warn("ingress.malformed", { issues: parsed.error.issues.map((i) => i.path.join(".")) });
      metrics.inboundIgnored(String((candidate as { channel?: unknown })?.channel ?? "unknown"), "malformed");
      return { kind: "ignored", reason: "malformed" };
    }
    const message = parsed.data;
    const source = `${message.channel}:${message.account}`;

    if (message.principal.isBot && !file.allowBots) return ignore(message, "from a bot");
    const allowed =
      message.channel === "web" || isAllowed(options.allowLists[message.channel], message.principal.id);
    if (!allowed) {
      logger.info("ingress.denied", {
        channel: message.channel,
        user: message.principal.id,
        hint: `add this id to ${message.channel.toUpperCase()}_ALLOWED_USERS to let this user talk to the agent`,
      });
      return ignore(message, "user not allowed");
    }
    const policy = surfacePolicy(file, message.channel, message.surface);
    if (message.surface !== "dm" && policy.requireMention && !message.addressedToBot) {
      return ignore(message, "not addressed to the bot");
    }

    const text = message.text.trim();
    const command = options.commands.match(text);
    if (command) {
      const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
      const reply = await options.commands.run(command, { message, conversationId, source });
      if (reply.duplicate) {
        metrics.inboundDuplicate(message.channel);
        return { kind: "duplicate", runId: null, conversationId };
      }
      metrics.inboundAccepted(message.channel);
      return { kind: "command", reply: reply.text };
    }

    if (text.length > MAX_INPUT_CHARS) {
      const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
      const reply = await options.commands.notice(
        { message, conversationId, source },
        `Your message is too long (${text.length.toLocaleString("en")} characters; the limit is ${MAX_INPUT_CHARS.toLocaleString("en")}). Please shorten it or split it.`,
        "oversized",
      );
      return reply.duplicate
        ? { kind: "duplicate", runId: null, conversationId }
        : ignore(message, "oversized");
    }
    if (text === "" && message.attachments.length === 0) return ignore(message, "empty");

    const parts: InputPart[] = [];
    if (text !== "") parts.push({ type: "text", text });
    for (const a of message.attachments) {
      parts.push({
        type: "file",
        ref: a.ref,
        ...(a.mediaType ? { mediaType: a.mediaType } : {}),
        ...(a.name ? { name: a.name } : {}),
        ...(a.sizeBytes === undefined ? {} : { sizeBytes: a.sizeBytes }),
      });
    }
    const context: RunContext = {
      channel: message.channel,
      account: message.account,
      target: message.replyTarget,
      ...(message.messageId ? { replyTo: message.messageId } : {}),
      surface: message.surface,
      delivery: policy.delivery,
      ...(policy.nativeStreaming ? { nativeStreaming: true } : {}),
      conversationKey: message.conversationKey,
      principal: {
        id: message.principal.id,
        ...(message.principal.name ? { name: message.principal.name } : {}),
      },
      origin: "user",
    };
    const ticket = runtime.submit({
      conversationKey: message.conversationKey,
      idempotencyKey: `${source}:${message.updateKey}`,
      parts,
      context,
      surface: `${message.channel}:${message.surface}`,
      policy: policy.inputPolicy,
      ingress: { source, key: message.updateKey, payload: message },
    });
    const admission = await ticket.admission;
    killPoint("ingress.admitted");
    if (admission.outcome === "duplicate") {
      metrics.inboundDuplicate(message.channel);
      return { kind: "duplicate", runId: admission.runId, conversationId: admission.conversationId };
    }
    metrics.inboundAccepted(message.channel);
    if (receivedAtMs !== undefined) {
      options.timeline?.admitted(admission.runId, receivedAtMs, admission.outcome === "admitted");
    }
    return { kind: "admitted", runId: admission.runId, conversationId: admission.conversationId };
  };
}

function isAllowed(list: AllowList | undefined, userId: string): boolean {
  if (!list) return false;
  return list.kind === "everyone" || list.ids.has(userId);
}
