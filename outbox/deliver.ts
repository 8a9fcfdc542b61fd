import type { ChannelAdapter, OutgoingMessage } from "../channels/types.ts";
import { isSwitchboardError } from "../src/errors.ts";
import type { BlobStore } from "../src/runtime/blobs.ts";
import type { Clock } from "../src/util/clock.ts";
import { killPoint } from "../src/util/kill-point.ts";
import type { Logger } from "../src/util/log.ts";
import { planEdit } from "./edit-plan.ts";
import { mediaRefusal, renderMediaCaption } from "./media.ts";
import { createPlatformCaller, PlatformCallError, type PlatformCaller, rateLaneOf } from "./platform-call.ts";
import type { DeliveryRateLimiter } from "./rate-limiter.ts";
import { isFormattingRejection, type Renderer } from "./render.ts";
import { createRetryPolicy, type RetryPolicyOptions } from "./retry-policy.ts";
import { type ShownMessages, syncMessages } from "./sync-messages.ts";
import type {
  DeliveryObserver,
  OutboxMedia,
  OutboxMessageRecord,
  OutboxRecord,
  OutboxRepository,
  OutboxStreamRecord,
  RenderedText,
} from "./types.ts";

/** What delivering needs, shared by the worker's lanes and live streams. */
export interface DeliveryDeps {
  repo: OutboxRepository;
  clock: Clock;
  limiter: DeliveryRateLimiter;
  renderer: Renderer;
  logger: Logger;
  observer: DeliveryObserver;
  callTimeoutMs: number;
  retry: Omit<RetryPolicyOptions, "idempotentSend">;
  /** Shutdown: stops waiting for rate limits. A platform call already made runs to its end. */
  signal: AbortSignal;
  /** How long an ambiguous record holds back its chat's later replies; Infinity: until an operator decides. */
  ambiguousHoldMs: number;
  /** Where media records' files are read from; without it a media record fails. */
  blobs?: BlobStore;
  /** A record now waits for its platform's delivery status until `untilMs` (the worker wakes then). */
  awaitingStatusUntil?(untilMs: number): void;
}

/** The end of a new ambiguous record's hold; undefined: until an operator decides. */
export function ambiguousHoldUntil(
  deps: Pick<DeliveryDeps, "ambiguousHoldMs">,
  nowMs: number,
): number | undefined {
  return Number.isFinite(deps.ambiguousHoldMs) ? nowMs + deps.ambiguousHoldMs : undefined;
}

/** Delivers one record the worker found at the head of its target; every outcome is persisted. */
export async function deliverRecord(
  deps: DeliveryDeps,
  adapter: ChannelAdapter,
  record: OutboxRecord,
): Promise<void> {
  if (record.kind === "message") await deliverMessage(deps, adapter, record);
  else await deliverFinalStream(deps, adapter, record);
}

/** A message's text as platform chunks; for a file, chunk 0 is its caption. */
function renderRecord(
  deps: DeliveryDeps,
  adapter: ChannelAdapter,
  record: OutboxMessageRecord,
  format: "rich" | "plain",
): RenderedText {
  const maxChars = adapter.limits.maxMessageChars;
  if (record.media === null) return deps.renderer.render(record.markdown, adapter.markup, format, maxChars);
  return renderMediaCaption(deps.renderer, record.markdown, adapter.markup, format, {
    maxMessageChars: maxChars,
    maxCaptionChars: adapter.files?.limits.maxCaptionChars ?? maxChars,
  });
}

/**
 * The file of a media record, or null after failing the record: the channel refuses it (no
 * files, over its limit) or its blob is gone. Nothing is sent for a refused file.
 */
async function loadMedia(
  deps: DeliveryDeps,
  adapter: ChannelAdapter,
  record: OutboxMessageRecord & { media: OutboxMedia },
): Promise<Uint8Array | null> {
  const refusal =
    mediaRefusal(record.media, record.channel, adapter.files?.limits) ??
    (deps.blobs === undefined ? "the gateway has no blob store to read the file from" : null);
  const bytes = refusal === null ? await deps.blobs!.read(record.media.blobId) : null;
  const reason =
    refusal ??
    (bytes === null
      ? `the file ${record.media.filename} (blob ${record.media.blobId}) is no longer stored; it was not sent.`
      : null);
  if (reason === null) return bytes;
  await deps.repo.markFailed(record.id, reason, deps.clock.now());
  deps.logger.warn("outbox.file_refused", {
    recordId: record.id,
    conversationId: record.conversationId,
    channel: record.channel,
    reason,
  });
  return null;
}

async function deliverMessage(
  deps: DeliveryDeps,
  adapter: ChannelAdapter,
  queued: OutboxMessageRecord,
): Promise<void> {
  const editOf = queued.presentation?.editOf;
  const plan =
    editOf === undefined
      ? null
      : planEdit(
          { channel: queued.channel, presentation: { ...queued.presentation, editOf } },
          await deps.repo.show(editOf),
          adapter.edit !== undefined,
        );
  // An edit renders its text when it edits; only what is sent is rendered and kept here.
  const rendered =
    plan === null
      ? (queued.rendered ?? renderRecord(deps, adapter, queued, "rich"))
      : plan.kind === "send"
        ? (queued.rendered ??
          deps.renderer.render(plan.markdown, adapter.markup, "plain", adapter.limits.maxMessageChars))
        : undefined;
  const record = await deps.repo.markSending(queued.id, deps.clock.now(), rendered);
  if (record?.kind !== "message") return;
  killPoint("outbox.sending-persisted");
  const media = record.media;
  let file: Uint8Array | null = null;
  if (media !== null && record.chunksDelivered === 0) {
    file = await loadMedia(deps, adapter, { ...record, media });
    if (file === null) return;
  }
  if (plan?.kind === "edit") {
    await deliverEdit(deps, adapter, record, plan.messageId);
    return;
  }
  if (plan?.kind === "fail") {
    await deps.repo.markFailed(record.id, plan.reason, deps.clock.now());
    return;
  }
  if (plan?.kind === "send") {
    deps.logger.info("outbox.edit_sent_as_message", {
      recordId: record.id,
      approvalId: plan.approvalId,
      editOf,
      reason: "the edited message's id is unknown (resolved as delivered)",
    });
  }
  const buttons = record.presentation?.buttons;

  const call = callerFor(deps, adapter, record);
  let current: RenderedText = record.rendered ?? rendered ?? renderRecord(deps, adapter, record, "rich");
  const messageIds = [...(record.receipt?.messageIds ?? [])];
  let index = record.chunksDelivered;
  while (index < current.chunks.length) {
    const message: OutgoingMessage = {
      text: current.chunks[index]!,
      format: current.format,
      idempotencyKey: `${record.key}#${index}`,
      ...(index === 0 && record.replyTo !== null ? { replyTo: record.replyTo } : {}),
      ...(buttons && index === current.chunks.length - 1 ? { buttons } : {}),
    };
    let sent: string[];
    try {
      sent = (
        await call("send", () => {
          if (index === 0) deps.observer.firstSendStarted?.(record);
          if (index === 0 && media !== null && file !== null && adapter.files) {
            return adapter.files.send(record.target, {
              bytes: file,
              filename: media.filename,
              mimeType: media.mimeType,
              caption: message.text,
              format: message.format,
              idempotencyKey: message.idempotencyKey,
              ...(message.replyTo === undefined ? {} : { replyTo: message.replyTo }),
            });
          }
          return adapter.send(record.target, message);
        })
      ).messageIds;
      killPoint("outbox.platform-accepted", record.channel);
      if (index === 0) deps.observer.firstSendAnswered?.(record);
    } catch (error) {
      // Fall back to plain text once, and only while nothing of this answer is visible yet:
      // plain chunks do not line up with rich ones already shown.
      if (current.format === "rich" && index === 0 && isFormattingRejection(causeOf(error))) {
        const plain = renderRecord(deps, adapter, record, "plain");
        if (!(await deps.repo.replaceRendered(record.id, plain, deps.clock.now()))) return;
        deps.logger.warn("outbox.formatting_fallback", { recordId: record.id, sending: "plain text" });
        current = plain;
        continue;
      }
      await settleFailure(deps, adapter, record, error);
      return;
    }
    const last = index === current.chunks.length - 1;
    // The last chunk's record also delivers the message, in the same write.
    if (!(await deps.repo.recordChunkDelivered(record.id, index, sent, deps.clock.now(), last)) || last)
      return;
    messageIds.push(...sent);
    index += 1;
  }
  // Nothing was left to send: a file without a caption, or chunks all recorded before a crash by
  // a version that delivered in a separate write.
  await deps.repo.markDelivered(record.id, { messageIds }, deps.clock.now());
}

/**
 * Edits the message of the earlier record `editOf` in place (an approval prompt showing its
 * outcome, its buttons gone). An edit can be repeated safely, so a crash mid-edit is retried.
 */
async function deliverEdit(
  deps: DeliveryDeps,
  adapter: ChannelAdapter,
  record: OutboxMessageRecord,
  messageId: string,
): Promise<void> {
  const text = deps.renderer.render(record.markdown, adapter.markup, "plain", adapter.limits.maxMessageChars)
    .chunks[0]!;
  const edit = adapter.edit!.bind(adapter);
  try {
    await callerFor(
      deps,
      adapter,
      record,
    )("edit", () => edit(record.target, messageId, { text, format: "plain", idempotencyKey: record.key }));
  } catch (error) {
    if (isSwitchboardError(causeOf(error), "platform_rejected")) {
      const cause = causeOf(error) as { rejection?: string };
      if (cause.rejection === "unchanged") {
        await deps.repo.markDelivered(record.id, { messageIds: [messageId] }, deps.clock.now());
        return;
      }
    }
    await settleFailure(deps, adapter, record, error);
    return;
  }
  await deps.repo.markDelivered(record.id, { messageIds: [messageId] }, deps.clock.now());
}

async function deliverFinalStream(
  deps: DeliveryDeps,
  adapter: ChannelAdapter,
  queued: OutboxStreamRecord,
): Promise<void> {
  const record = await deps.repo.markSending(queued.id, deps.clock.now());
  if (record?.kind !== "stream") return;
  const shown: ShownMessages = {
    messageIds: [...(record.receipt?.messageIds ?? [])],
    texts: [],
    usedKeys: new Set(),
  };
  await finishStream(deps, adapter, record, shown, record.format ?? "rich", record.markdown);
}

/**
 * Brings a sending stream record's messages to `finalMarkdown` and marks it delivered. When the
 * store's final text differs (the terminal commit has not finalised it, or finalised it
 * differently), hands the record to the worker, which delivers the stored text.
 */
export async function finishStream(
  deps: DeliveryDeps,
  adapter: ChannelAdapter,
  record: OutboxStreamRecord,
  shown: ShownMessages,
  initialFormat: "rich" | "plain",
  finalMarkdown: string,
): Promise<void> {
  const synced = await syncStream(deps, adapter, record, shown, initialFormat, finalMarkdown);
  if (synced === null) return;
  await completeStream(deps, record, [...shown.messageIds], finalMarkdown);
}

/**
 * Marks a stream record delivered once its messages show `finalMarkdown`; hands it to the worker
 * when the store's final text differs.
 */
export async function completeStream(
  deps: DeliveryDeps,
  record: OutboxStreamRecord,
  messageIds: string[],
  finalMarkdown: string,
): Promise<void> {
  const nowMs = deps.clock.now();
  if (await deps.repo.markDelivered(record.id, { messageIds }, nowMs, finalMarkdown)) return;
  await deps.repo.scheduleRetry(
    record.id,
    nowMs,
    "the stream ended before its record held the same final text; the worker delivers the stored text",
    nowMs,
  );
}

/**
 * One attempt to make the stream's messages show `markdown`, falling back to plain text once when
 * the platform rejects the markup. Returns the format used, or null after settling a failure.
 */
export async function syncStream(
  deps: DeliveryDeps,
  adapter: ChannelAdapter,
  record: OutboxStreamRecord,
  shown: ShownMessages,
  initialFormat: "rich" | "plain",
  markdown: string,
): Promise<"rich" | "plain" | null> {
  const call = callerFor(deps, adapter, record);
  let format = initialFormat;
  for (;;) {
    const desired = deps.renderer.render(markdown, adapter.markup, format, adapter.limits.maxMessageChars);
    try {
      await syncMessages(shown, desired, {
        adapter,
        target: record.target,
        replyTo: record.replyTo,
        idempotencyKeyBase: record.key,
        call,
        onProgress: async (messageIds) => {
          await deps.repo.recordStreamProgress(record.id, messageIds, format, deps.clock.now());
        },
      });
      return format;
    } catch (error) {
      if (format === "rich" && isFormattingRejection(causeOf(error))) {
        deps.logger.warn("outbox.formatting_fallback", { recordId: record.id, streaming: "plain text" });
        format = "plain";
        continue;
      }
      await settleFailure(deps, adapter, record, error);
      return null;
    }
  }
}

/**
 * Persists what a failed attempt means: retry later, failed, or ambiguous. A 429 is counted and
 * holds back the chat, and the whole account when the adapter marks it `details.global` (Telegram
 * applies every retry_after to the bot).
 */
export async function settleFailure(
  deps: DeliveryDeps,
  adapter: ChannelAdapter,
  record: OutboxRecord,
  error: unknown,
): Promise<void> {
  const nowMs = deps.clock.now();
  if (!(error instanceof PlatformCallError)) {
    if (deps.signal.aborted && error === deps.signal.reason) {
      // Stopped while waiting for the rate limiter: the call was never made.
      await deps.repo.scheduleRetry(record.id, nowMs, "stopped before the platform call", nowMs);
      return;
    }
    throw error;
  }
  const cause = error.cause;
  if (isSwitchboardError(cause, "platform_rate_limited") && cause.retryAfterMs !== undefined) {
    const lane = rateLaneOf(adapter, record);
    deps.limiter.block(lane.chatKey, nowMs + cause.retryAfterMs);
    if (cause.details?.global === true) deps.limiter.block(lane.accountKey, nowMs + cause.retryAfterMs);
  }
  if (isSwitchboardError(cause, "platform_rate_limited"))
    deps.observer.rateLimited?.(record.channel, record.account);
  // Edits and deletes can be repeated safely; only a repeated send can show a message twice.
  const policy = createRetryPolicy({
    ...deps.retry,
    idempotentSend: error.operation !== "send" || adapter.capabilities.idempotentSend,
  });
  const decision = policy(cause, Math.max(1, record.attempts));
  const reason = `${error.operation} failed: ${error.message}`;
  if (decision.retry) {
    await deps.repo.scheduleRetry(record.id, nowMs + decision.delayMs, reason, nowMs);
  } else if (decision.outcome === "failed") {
    const failure = `${error.operation} failed: ${decision.reason}`;
    await deps.repo.markFailed(record.id, failure, nowMs);
    // Never the reply's text: the record id leads to it (`outbox show`), for those allowed to read it.
    deps.logger.warn("outbox.delivery_failed", {
      recordId: record.id,
      conversationId: record.conversationId,
      channel: record.channel,
      account: record.account,
      target: record.target,
      attempts: record.attempts,
      reason: failure,
      hint: "see `switchboard outbox show` and retry after fixing the cause",
    });
  } else {
    const waitMs = adapter.capabilities.statusWaitMs;
    if (waitMs !== undefined && record.kind === "message" && error.operation === "send") {
      const untilMs = nowMs + waitMs;
      // False: the record moved on already (its status may have settled it meanwhile).
      if (
        await deps.repo.awaitPlatformStatus(
          record.id,
          `${error.operation}: ${decision.reason}`,
          nowMs,
          untilMs,
        )
      ) {
        deps.logger.info("outbox.awaiting_platform_status", {
          recordId: record.id,
          reason,
          waitMs,
          hint: "the platform's delivery status settles it; without one in time it becomes ambiguous",
        });
        deps.awaitingStatusUntil?.(untilMs);
      }
      return;
    }
    deps.logger.warn("outbox.outcome_unknown", {
      recordId: record.id,
      reason,
      hint: "left ambiguous for an operator: check the chat, then `switchboard outbox resolve`",
    });
    await deps.repo.markAmbiguous(
      record.id,
      `${error.operation}: ${decision.reason}`,
      nowMs,
      ambiguousHoldUntil(deps, nowMs),
    );
  }
}

export function callerFor(deps: DeliveryDeps, adapter: ChannelAdapter, record: OutboxRecord): PlatformCaller {
  return createPlatformCaller({
    adapter,
    record,
    clock: deps.clock,
    limiter: deps.limiter,
    callTimeoutMs: deps.callTimeoutMs,
    signal: deps.signal,
  });
}

function causeOf(error: unknown): unknown {
  return error instanceof PlatformCallError ? error.cause : error;
}
