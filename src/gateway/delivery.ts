import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import { routeToAccount } from "../../outbox/adapter-route.ts";
import { createDraftPreview, type DraftPreview } from "../../outbox/draft-preview.ts";
import type { StreamReply, StreamReplyTarget } from "../../outbox/stream.ts";
import { createTypingIndicator } from "../../outbox/typing.ts";
import type { DeliveryWorker } from "../../outbox/worker.ts";
import { readRunContext } from "../run-context.ts";
import type { RuntimeEvent } from "../runtime/events.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { AnswerDelivery, RunRecord, RuntimeStore } from "../runtime/store.ts";
import type { TerminalRunState } from "../runtime/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { afterQueuedWork } from "../util/yield.ts";

/**
 * T2's delivery half, as data: what the chat of a run ending in `state` must show. The runtime
 * hands it to the terminal commit, which writes it as the run's outbox record (or finalises its
 * stream record) in the same transaction. Runs without a channel context deliver nothing.
 */
export function answerDeliveryFor(
  run: RunRecord,
  state: TerminalRunState,
  text: string,
): AnswerDelivery | null {
  const context = readRunContext(run.context);
  if (!context || state === "absorbed") return null;
  return {
    runId: run.id,
    conversationId: run.conversationId,
    channel: context.channel,
    account: context.account,
    target: context.target,
    ...(context.replyTo ? { replyTo: context.replyTo } : {}),
    state,
    text,
  };
}

interface LiveRun {
  buffered: RuntimeEvent[];
  stream: StreamReply | null;
  draft?: DraftPreview;
  typing: { stop(): void } | null;
  terminal: boolean;
}

/**
 * Connects runtime events to delivery: wakes the worker after every terminal commit, shows a
 * typing indicator while a terminal-mode run works, and feeds stream-mode runs to their
 * StreamReply (events arriving before the stream opens are buffered, so no delta is lost).
 */
export function wireDelivery(options: {
  runtime: Runtime;
  store: RuntimeStore;
  worker: DeliveryWorker;
  /** Every account's adapter; a run's live reply goes through its own account's. */
  adapters: ReadonlyMap<string, ChannelAdapter>;
  clock: Clock;
  logger: Logger;
  /** What a streamed preview shows after a step's tool calls (StreamReplyTarget.progressLine). */
  progressLine?: StreamReplyTarget["progressLine"];
}): () => void {
  const { runtime, store, worker, adapters, clock, logger } = options;
  const live = new Map<string, LiveRun>();

  const begin = async (runId: string, entry: LiveRun) => {
    // After the run's own way to its model request: events meanwhile are buffered, and "typing…"
    // shows as soon as the request is out, instead of its read and platform call going first.
    await afterQueuedWork();
    if (entry.terminal) {
      live.delete(runId);
      return;
    }
    const view = await store.loadRun(runId);
    const context = readRunContext(view?.run.context);
    const adapter = context
      ? routeToAccount(adapters.values(), context.channel, context.account).adapter
      : null;
    if (!view || !context || !adapter || entry.terminal) {
      live.delete(runId);
      return;
    }
    const draft =
      context.delivery === "stream" && context.nativeStreaming ? adapter.draftFor?.(context.target) : null;
    if (draft) {
      // Drafts preview; the terminal commit enqueues the answer as one ordinary message.
      entry.draft = createDraftPreview({
        runId,
        send: draft,
        clock,
        intervalMs: adapter.limits.editIntervalMs,
        maxChars: adapter.limits.maxMessageChars,
        logger,
      });
      for (const event of entry.buffered) entry.draft.handle(event);
      entry.buffered = [];
    } else if (context.delivery === "stream" && adapter.edit) {
      // A native streamed message (Slack threads) where configured and possible, else edits.
      const native = context.nativeStreaming
        ? adapter.nativeStreamFor?.(context.target, context.principal.id)
        : undefined;
      entry.stream = worker.openStream({
        channel: context.channel,
        account: context.account,
        runId,
        conversationId: view.run.conversationId,
        target: context.target,
        ...(context.replyTo ? { replyTo: context.replyTo } : {}),
        ...(native ? { native } : {}),
        ...(options.progressLine ? { progressLine: options.progressLine } : {}),
      });
      for (const event of entry.buffered) entry.stream.handle(event);
      entry.buffered = [];
      void entry.stream.settled.finally(() => live.delete(runId));
    } else if (adapter.typing) {
      entry.typing = createTypingIndicator(adapter, context.target, { clock, logger });
    }
  };

  return runtime.subscribe((event) => {
    const runId = event.runId;
    if (event.type === "run-state" && event.state === "running" && !live.has(runId)) {
      const entry: LiveRun = { buffered: [], stream: null, typing: null, terminal: false };
      live.set(runId, entry);
      begin(runId, entry).catch((error) => logger.warn("delivery.stream_open_failed", { runId, error }));
      return;
    }
    const entry = live.get(runId);
    if (event.type === "terminal") {
      worker.notify();
      if (!entry) return;
      entry.terminal = true;
      entry.typing?.stop();
      entry.draft?.stop();
      if (entry.stream) entry.stream.handle(event);
      else live.delete(runId);
      return;
    }
    if (!entry) return;
    if (entry.stream) entry.stream.handle(event);
    else if (entry.draft) entry.draft.handle(event);
    else if (!entry.typing) entry.buffered.push(event);
  });
}
