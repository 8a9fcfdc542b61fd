import {
  type ChannelAdmission,
  type ChannelName,
  type InboundMessage,
  type IngressOutcome,
  type IngressTiming,
  inboundMessageSchema,
} from "../../channels/types.ts";
import { accessScope, generatePairingCode, pairingMessage } from "../access/pairing.ts";
import { principalKey } from "../access/principal.ts";
import type { AccessStore } from "../access/store.ts";
import type { ApprovalService } from "../approvals/service.ts";
import type { BudgetGuard } from "../budgets/guard.ts";
import type { RunContext } from "../run-context.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { isSettledUpdate, type RuntimeStore } from "../runtime/store.ts";
import type { StateStore } from "../state/store.ts";
import type { Clock } from "../util/clock.ts";
import { killPoint } from "../util/kill-point.ts";
import type { Logger } from "../util/log.ts";
import { afterQueuedWork } from "../util/yield.ts";
import { accountNameOf, namedAccountOf, settingsForMessage } from "./binding-facts.ts";
import type { ChatCommands } from "./commands.ts";
import type { AllowList, FileConfig } from "./config/index.ts";
import { applyCorrection, type Correction, findCorrection } from "./correction.ts";
import { FloodLimit } from "./flood-limit.ts";
import { isForgetButton } from "./forget-buttons.ts";
import { allowListOf, decideIngress, needsGrant } from "./ingress-decision.ts";
import type { Metrics } from "./metrics.ts";
import { noteReaction } from "./reaction-note.ts";
import type { ReplyTimeline } from "./reply-timeline.ts";
import { withdraw } from "./withdraw.ts";

export { MAX_INPUT_CHARS } from "./ingress-decision.ts";

export interface IngressOptions {
  runtime: Runtime;
  store: RuntimeStore;
  file: FileConfig;
  allowLists: Partial<Record<InboundMessage["channel"], AllowList>>;
  /** The named accounts' allow lists (IngressRules.accountAllowLists). */
  accountAllowLists?: ReadonlyMap<string, AllowList>;
  /** What a channel decides itself before ingress: its current adapter's `admission`. */
  admissionOf(channel: ChannelName): ChannelAdmission | undefined;
  commands: ChatCommands;
  /** Stored access grants and pairing codes; without it `pairing` in an allowlist admits nobody new. */
  access?: AccessStore;
  /** Token and cost budgets, checked before admission; without it (or none configured) none apply. */
  budgets?: BudgetGuard;
  /** The conversations' state slots, where a reaction is noted; without it a reaction is ignored. */
  state?: StateStore;
  /** Button presses on approval prompts; without it a press is ignored. */
  approvals?: ApprovalService;
  metrics: Metrics;
  /** Times each admission and marks the run for the later reply stages. */
  timeline?: Pick<ReplyTimeline, "received" | "admitted">;
  clock: Clock;
  logger: Logger;
  /** The agent directory generation a run admitted on a surface with `agentDir` is pinned to. */
  agentFor?: (agentDir: string | undefined) => RunContext["agent"];
}

/**
 * T1: turns a platform message into at most one admitted run. Everything that decides to ignore
 * an update (bots, access, mention gating, oversize) happens before the model can be reached;
 * everything that accepts one commits durably (ingress receipt + conversation mapping + admission
 * in one transaction) before it resolves, so the adapter acknowledges only what is safe.
 */
export function createIngress(
  options: IngressOptions,
): (message: InboundMessage, timing?: IngressTiming) => Promise<IngressOutcome> {
  const { runtime, store, file, metrics, clock, logger } = options;
  const flood = new FloodLimit();
  /** The account's name, as metrics label it. */
  const accountOf = (message: InboundMessage) => accountNameOf(file, message.channel, message.account);

  const ignore = (message: InboundMessage, reason: string): IngressOutcome => {
    metrics.inboundIgnored(message.channel, accountOf(message), reason);
    logger.debug("ingress.ignored", { channel: message.channel, updateKey: message.updateKey, reason });
    return { kind: "ignored", reason };
  };

  return async function ingest(candidate: InboundMessage, timing?: IngressTiming): Promise<IngressOutcome> {
    const receivedAtMs = options.timeline?.received();
    const parsed = inboundMessageSchema.safeParse(candidate);
    if (!parsed.success) {
      logger.warn("ingress.malformed", { issues: parsed.error.issues.map((i) => i.path.join(".")) });
      metrics.inboundIgnored(
        String((candidate as { channel?: unknown })?.channel ?? "unknown"),
        "unknown",
        "malformed",
      );
      return { kind: "ignored", reason: "malformed" };
    }
    const message = parsed.data;
    const source = `${message.channel}:${message.account}`;
    const channelAdmission = options.admissionOf(message.channel);
    if (message.withdrawn) {
      // A deleted message: its run is cancelled or stopped, once per delete event.
      const done = await withdraw({ ...message, withdrawn: message.withdrawn }, source, {
        runtime,
        store,
        clock,
        logger,
      });
      if (done.duplicate) {
        metrics.inboundDuplicate(message.channel, accountOf(message));
        return { kind: "duplicate", runId: null, conversationId: null };
      }
      metrics.inboundAccepted(message.channel, accountOf(message));
      return { kind: "withdrawn", runId: done.runId, effect: done.effect };
    }
    if (message.action && isForgetButton(message.action.data)) {
      // A /forget prompt's button: claimed like a message (a redelivered press does nothing more).
      const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
      const pressed = await options.commands.forgetPress({ message, conversationId, source });
      if (pressed.duplicate) {
        metrics.inboundDuplicate(message.channel, accountOf(message));
        return { kind: "action", notice: "" };
      }
      metrics.inboundAccepted(message.channel, accountOf(message));
      if (pressed.refused === "forged")
        logger.warn("forget.forged_press", {
          channel: message.channel,
          user: message.principal.id,
          updateKey: message.updateKey,
        });
      return { kind: "action", notice: pressed.notice };
    }
    if (message.action) {
      // A button press: verified, authorised and decided once by the approval service (its
      // decision and the successor run commit together); the presser gets a short notice.
      if (!options.approvals) return ignore(message, "button press without approvals");
      const notice = await options.approvals.press(message, source);
      metrics.inboundAccepted(message.channel, accountOf(message));
      return { kind: "action", notice };
    }
    // Read per message, so a grant approved or revoked from another process counts from the next one.
    const granted =
      !channelAdmission?.ownAccessControl &&
      options.access !== undefined &&
      needsGrant(allowListOf(options, message), message.principal.id) &&
      (await options.access.isGranted(
        accessScope(message.channel, namedAccountOf(file, message.channel, message.account)),
        message.principal.id,
      ));
    const decision = decideIngress(message, {
      file,
      allowLists: options.allowLists,
      ...(options.accountAllowLists ? { accountAllowLists: options.accountAllowLists } : {}),
      ...(channelAdmission ? { admission: channelAdmission } : {}),
      granted,
      matchCommand: (text) => options.commands.match(text),
    });

    if (message.reaction) {
      // A reaction: noted on its conversation for the agent's next turn (no run), when this
      // decision would have read a message from its author.
      if (!options.state) return ignore(message, "reaction without a state store");
      const noted = await noteReaction({ ...message, reaction: message.reaction }, source, decision, {
        store,
        state: options.state,
        clock,
        logger,
      });
      if (noted.kind === "refused") return ignore(message, noted.reason);
      if (noted.kind === "duplicate") {
        metrics.inboundDuplicate(message.channel, accountOf(message));
        return { kind: "duplicate", runId: null, conversationId: null };
      }
      metrics.inboundAccepted(message.channel, accountOf(message));
      return noted;
    }

    switch (decision.kind) {
      case "ignore":
        if (decision.reason === "user not allowed") {
          logger.info("ingress.denied", {
            channel: message.channel,
            user: message.principal.id,
            hint: `add this id to ${message.channel.toUpperCase()}_ALLOWED_USERS to let this user talk to the agent`,
          });
        }
        return ignore(message, decision.reason);
      default:
        break;
    }

    // An edit that turns a message into a command runs nothing: commands are written, not corrected.
    if (message.edited && decision.kind === "command") return ignore(message, "edit into a command");

    const perMinute = settingsForMessage(file, message).messagesPerMinute;
    // A channel with its own limit (the web chat's per session, a 429) is not limited twice.
    const limited = channelAdmission?.ownFloodLimit
      ? ({ kind: "allowed" } as const)
      : flood.check(
          `${message.channel}:${message.account}:${message.surface}:${message.principal.id}`,
          perMinute,
          clock.now(),
        );
    if (limited.kind === "refused") {
      const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
      const scope = { message, conversationId, source };
      const waitSeconds = Math.max(1, Math.ceil(limited.retryAfterMs / 1000));
      // Recorded either way (a redelivery is then a duplicate); only the first refusal of a burst is answered.
      const recorded = limited.tell
        ? !(
            await options.commands.notice(
              scope,
              `You're sending messages too fast (the limit here is ${perMinute} a minute), so I did not read this one. Please wait ${waitSeconds} s and send it again.`,
              "refused:flood",
            )
          ).duplicate
        : (
            await store.claimIngress({
              source,
              key: message.updateKey,
              outcome: "refused:flood",
              payload: message,
              conversationId,
              nowMs: clock.now(),
            })
          ).fresh;
      if (!recorded) {
        metrics.inboundDuplicate(message.channel, accountOf(message));
        return { kind: "duplicate", runId: null, conversationId };
      }
      logger.warn("ingress.flood_limited", {
        channel: message.channel,
        surface: message.surface,
        user: message.principal.id,
        updateKey: message.updateKey,
        perMinute,
        told: limited.tell,
        retryAfterMs: limited.retryAfterMs,
      });
      return ignore(message, "flood limit");
    }

    switch (decision.kind) {
      case "pair": {
        const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
        if (!options.access) return ignore(message, "user not allowed");
        const nowMs = clock.now();
        // Issued per update: a redelivered update gets the same code, and its reply is a duplicate.
        const issue = () =>
          options.access!.issuePairingCode({
            channel: accessScope(message.channel, namedAccountOf(file, message.channel, message.account)),
            userId: message.principal.id,
            ...(message.principal.name ? { userName: message.principal.name } : {}),
            updateKey: `${message.account}:${message.updateKey}`,
            candidate: generatePairingCode(),
            nowMs,
          });
        // About 40 random bits: a collision with a stored code is rare, and a second draw settles it.
        let issued = await issue();
        for (let i = 0; issued.outcome === "collision" && i < 4; i++) issued = await issue();
        if (issued.outcome === "collision")
          throw new Error("could not draw an unused pairing code in 5 tries");
        const reply = await options.commands.notice(
          { message, conversationId, source },
          pairingMessage(issued.code, issued.expiresAtMs, nowMs),
          "refused:pairing",
        );
        if (reply.duplicate) {
          metrics.inboundDuplicate(message.channel, accountOf(message));
          return { kind: "duplicate", runId: null, conversationId };
        }
        // Not the code itself: whoever reads the log could approve it.
        logger.info("ingress.pairing_code", {
          channel: message.channel,
          user: message.principal.id,
          outcome: issued.outcome,
          expiresAtMs: issued.expiresAtMs,
        });
        return ignore(message, "pairing code sent");
      }
      case "command": {
        const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
        const reply = await options.commands.run(decision.name, { message, conversationId, source });
        if (reply.duplicate) {
          metrics.inboundDuplicate(message.channel, accountOf(message));
          return { kind: "duplicate", runId: null, conversationId };
        }
        metrics.inboundAccepted(message.channel, accountOf(message));
        return { kind: "command", reply: reply.text };
      }
      case "oversized": {
        const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
        const reply = await options.commands.notice(
          { message, conversationId, source },
          `Your message is too long (${decision.chars.toLocaleString("en")} characters; the limit is ${decision.limitChars.toLocaleString("en")}). Please shorten it or split it.`,
          "oversized",
        );
        return reply.duplicate
          ? { kind: "duplicate", runId: null, conversationId }
          : ignore(message, "oversized");
      }
      case "admit":
        break;
    }

    if (options.budgets?.enabled) {
      const budget = await options.budgets.check({
        channel: message.channel,
        surface: message.surface,
        principal: principalKey(
          message.channel,
          namedAccountOf(file, message.channel, message.account),
          message.principal.id,
        ),
      });
      if (budget.kind === "refused") {
        const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
        // The input is kept in its receipt. A redelivery of an update admitted before the budget
        // ran out finds that receipt and stays a duplicate rather than getting this refusal.
        const claimed = await store.claimIngress({
          source,
          key: message.updateKey,
          outcome: "refused:budget",
          payload: message,
          conversationId,
          nowMs: clock.now(),
        });
        const reply =
          claimed.fresh || claimed.previousOutcome === "refused:budget"
            ? await options.commands.notice(
                { message, conversationId, source },
                budget.text,
                "refused:budget",
              )
            : { duplicate: true };
        if (reply.duplicate) {
          metrics.inboundDuplicate(message.channel, accountOf(message));
          return { kind: "duplicate", runId: claimed.runId, conversationId };
        }
        logger.info("ingress.budget_refused", {
          channel: message.channel,
          surface: message.surface,
          user: message.principal.id,
          updateKey: message.updateKey,
          budget: budget.scope,
        });
        return ignore(message, "budget");
      }
    }

    let correction: Correction | null = null;
    if (message.edited) {
      // An edit: a correction while the message's answer is unfinished, else the surface's `edits`.
      const conversationId = await store.resolveConversationKey(message.conversationKey, clock.now());
      correction = await findCorrection(
        { ...message, edited: message.edited },
        conversationId,
        decision.policy,
        store,
      );
      if (!correction && decision.policy.edits === "ignore") {
        const claimed = await store.claimIngress({
          source,
          key: message.updateKey,
          outcome: "ignored:edit",
          payload: message,
          conversationId,
          nowMs: clock.now(),
        });
        if (!claimed.fresh) {
          metrics.inboundDuplicate(message.channel, accountOf(message));
          return { kind: "duplicate", runId: claimed.runId, conversationId };
        }
        return ignore(message, "edit after the answer");
      }
    }
    const context = message.edited
      ? { ...decision.context, replyTo: message.edited.messageId }
      : decision.context;
    const ticket = runtime.submit({
      conversationKey: message.conversationKey,
      idempotencyKey: `${source}:${message.updateKey}`,
      parts: decision.parts,
      context: withAgent(context, options.agentFor?.(decision.policy.agentDir)),
      surface: `${message.channel}:${message.surface}`,
      policy: correction?.policy ?? decision.policy.inputPolicy,
      ingress: {
        source,
        key: message.updateKey,
        payload: message,
        strict: channelAdmission?.clientChosenKeys === true,
      },
    });
    let admission: Awaited<typeof ticket.admission>;
    try {
      admission = await ticket.admission;
    } catch (error) {
      // An update refused earlier (no pairing grant yet, too fast, over budget) stays refused when
      // redelivered, even though it would pass now: it was answered, and the user was told to
      // resend. One of a conversation forgotten since stays forgotten. Admission decides both from
      // the receipt, in its transaction.
      if (!isSettledUpdate(error)) throw error;
      metrics.inboundDuplicate(message.channel, accountOf(message));
      return { kind: "duplicate", runId: null, conversationId: null };
    }
    killPoint("ingress.admitted");
    if (admission.cancelledApprovals.length > 0) {
      await options.approvals?.cancelled(admission.cancelledApprovals);
    }
    // Also for a duplicate: a redelivered edit finishes what a crash interrupted.
    if (correction) await applyCorrection(correction, admission, message, { runtime, store, logger });
    if (admission.outcome === "duplicate") {
      metrics.inboundDuplicate(message.channel, accountOf(message));
      return { kind: "duplicate", runId: admission.runId, conversationId: admission.conversationId };
    }
    metrics.inboundAccepted(message.channel, accountOf(message));
    if (receivedAtMs !== undefined) {
      options.timeline?.admitted(
        admission.runId,
        receivedAtMs,
        admission.outcome === "admitted",
        timing?.arrivedAtMs,
      );
    }
    // The run's way to its model request is queued work by now (the lane was kicked): let it go
    // first, before the caller's own (the platform's next poll) takes the CPU.
    await afterQueuedWork();
    return {
      kind: "admitted",
      runId: admission.runId,
      conversationId: admission.conversationId,
      ...(admission.startsConversation ? { startsConversation: true } : {}),
    };
  };
}

function withAgent(context: RunContext, agent: RunContext["agent"]): RunContext {
  return agent ? { ...context, agent } : context;
}
