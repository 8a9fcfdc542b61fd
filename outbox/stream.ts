import type { ChannelAdapter, NativeStream } from "../channels/types.ts";
import type { RuntimeEvent, ToolTrace } from "../src/runtime/events.ts";
import { isTerminalState } from "../src/runtime/types.ts";
import {
  callerFor,
  completeStream,
  type DeliveryDeps,
  finishStream,
  settleFailure,
  syncStream,
} from "./deliver.ts";
import { finalAnswerMarkdown } from "./final-text.ts";
import { NativeStreamSession } from "./native-stream.ts";
import type { ShownMessages } from "./sync-messages.ts";
import type { OutboxStreamRecord } from "./types.ts";

/** Shown while the answer so far is empty (a retried attempt withdrew everything). */
export const EMPTY_PREVIEW = "…";

/**
 * How long after the first text a reply waits before its first preview. A run that ends within
 * it sends its answer once, whole, as an ordinary message: a short answer then shows at once
 * instead of as a preview followed by the final edit an edit interval (1 s on Telegram) later,
 * and takes one platform call instead of two. 300 ms covers a one- or two-sentence answer
 * (20 to 30 tokens) at the 60 to 100 tokens a second of fast models, and is a small part of the
 * seconds a long answer streams for ("typing…" shows meanwhile).
 */
export const FIRST_PREVIEW_WAIT_MS = 300;

export interface StreamReplyTarget {
  runId: string;
  conversationId: string;
  target: string;
  replyTo?: string;
  /** The platform's native streamed message for this reply, when configured and available. */
  native?: NativeStream;
  /**
   * A line the preview shows after a step whose tool calls (those without an outcome are the
   * step's own) do work elsewhere, until the next step's text ("Asking researcher…"); null: none.
   * Never part of the final answer.
   */
  progressLine?: (tools: readonly ToolTrace[]) => string | null;
}

export interface StreamReplyOptions extends DeliveryDeps {
  adapter: ChannelAdapter;
  target: StreamReplyTarget;
  /** Called once when the reply no longer needs this object (done, handed to the worker, or aborted). */
  onSettled(): void;
  /** See FIRST_PREVIEW_WAIT_MS (the default); 0 previews from the first text on. */
  firstPreviewWaitMs?: number;
}

export interface StreamReply {
  /** Feed every runtime event of the run, in order; others are ignored. Never throws. */
  handle(event: RuntimeEvent): void;
  /** Shutdown: stop previewing. The record stays `sending` and is recovered by the next start. */
  abort(): void;
  /** Resolves when no platform call of this reply is in flight any more and none will start. */
  readonly settled: Promise<void>;
}

/**
 * `idle`: no text yet. `live`: the record is ours (`sending`) and the chat shows previews.
 * `done`: finished, handed to the worker, or aborted.
 */
type Phase = "idle" | "live" | "done";

/**
 * One streamed reply: the first delta, after `firstPreviewWaitMs` without the run ending, creates
 * the record `<runId>:stream` and sends a message; later deltas are coalesced into edits at most one per `editIntervalMs`, one call in flight;
 * the text rolls over into further messages past `maxMessageChars`. The terminal event skips any
 * queued preview and edits the messages to the final answer (deleting them for a superseded run).
 */
export function createStreamReply(options: StreamReplyOptions): StreamReply {
  return new LiveStreamReply(options);
}

class LiveStreamReply implements StreamReply {
  readonly settled: Promise<void>;
  private resolveSettled!: () => void;
  private phase: Phase = "idle";
  /** Text of completed steps (last checkpoint) and of the attempt in progress. */
  private committedText = "";
  private attemptText = "";
  /** The progress line of the last checkpoint (see StreamReplyTarget.progressLine). */
  private progress: string | null = null;
  private lastSequence = Number.NEGATIVE_INFINITY;
  private finalMarkdown: string | null = null;
  private record: OutboxStreamRecord | null = null;
  private shown: ShownMessages = { messageIds: [], texts: [], usedKeys: new Set() };
  /** Set while the reply shows through a native streamed message instead of edits. */
  private native: NativeStreamSession | null = null;
  private format: "rich" | "plain" = "rich";
  private shownPreview: string | null = null;
  private lastCallAtMs = Number.NEGATIVE_INFINITY;
  private pumping = false;
  private waitedForFirstPreview = false;
  private isSettled = false;
  private readonly aborted = new AbortController();
  /** Interrupts the wait for the next preview slot when the terminal event arrives. */
  private slotWait: AbortController | null = null;

  constructor(private readonly options: StreamReplyOptions) {
    this.settled = new Promise((resolve) => {
      this.resolveSettled = resolve;
    });
  }

  handle(event: RuntimeEvent): void {
    if (event.runId !== this.options.target.runId || this.phase === "done") return;
    switch (event.type) {
      case "assistant-delta":
        if (!this.isNew(event.sequence)) return;
        this.attemptText += event.delta;
        break;
      case "attempt-reset":
        if (!this.isNew(event.sequence)) return;
        this.attemptText = "";
        break;
      case "checkpoint":
        this.committedText = event.text;
        this.attemptText = "";
        this.progress = this.options.target.progressLine?.(event.tools ?? []) ?? null;
        break;
      case "terminal":
        if (!isTerminalState(event.state)) return;
        this.finalMarkdown = finalAnswerMarkdown(event.state, event.text);
        this.slotWait?.abort();
        break;
      default:
        return;
    }
    this.kick();
  }

  abort(): void {
    this.aborted.abort(new Error("The stream reply was aborted by shutdown."));
    this.slotWait?.abort();
    this.phase = "done";
    if (!this.pumping) this.settle();
  }

  private isNew(sequence: number): boolean {
    if (sequence <= this.lastSequence) return false;
    this.lastSequence = sequence;
    return true;
  }

  private hasWork(): boolean {
    if (this.finalMarkdown !== null) return true;
    return this.phase === "idle" ? this.preview().trim() !== "" : this.preview() !== this.shownPreview;
  }

  private preview(): string {
    const text = this.committedText + this.attemptText;
    // The next step's first text replaces the line.
    if (this.progress === null || this.attemptText !== "") return text;
    return text.trim() === "" ? this.progress : `${text.trimEnd()}\n\n${this.progress}`;
  }

  private kick(): void {
    if (this.pumping) return;
    this.pumping = true;
    void this.pump()
      .catch((error: unknown) => {
        this.phase = "done";
        this.options.logger.warn("outbox.stream_stopped", {
          runId: this.options.target.runId,
          error: error instanceof Error ? error.message : String(error),
          hint: "an unexpected error stopped this streamed reply; the record is recovered on restart",
        });
      })
      .finally(() => {
        this.pumping = false;
        if (this.phase === "done") this.settle();
        // An event that arrived while the pump was returning found it still marked busy.
        else if (this.hasWork()) this.kick();
      });
  }

  /** The only place platform calls start, so at most one is in flight. */
  private async pump(): Promise<void> {
    while (this.phase !== "done") {
      if (this.phase === "idle") {
        // A run that ends before any text never opened a record: its terminal commit enqueues the answer.
        if (this.finalMarkdown !== null) return this.finish();
        if (this.preview().trim() === "") return;
        if (!this.waitedForFirstPreview) {
          this.waitedForFirstPreview = true;
          // Ended by the terminal event (the loop then finishes: the commit enqueued the answer).
          await this.waitFor(this.options.firstPreviewWaitMs ?? FIRST_PREVIEW_WAIT_MS, true);
          if (this.aborted.signal.aborted) return;
          continue;
        }
        await this.begin();
        continue;
      }
      const record = this.record!;
      if (this.finalMarkdown !== null) {
        await this.waitForSlot(false);
        if (this.aborted.signal.aborted) return;
        if (this.native !== null) {
          const finalMarkdown = this.finalMarkdown;
          const complete = await this.leaveNative(record, (native) => native.end(finalMarkdown));
          if (complete === null) return this.finish();
          if (complete) {
            await completeStream(this.options, record, [...this.shown.messageIds], finalMarkdown);
            return this.finish();
          }
        }
        await finishStream(
          this.options,
          this.options.adapter,
          record,
          this.shown,
          this.format,
          this.finalMarkdown,
        );
        return this.finish();
      }
      if (this.preview() === this.shownPreview) return;
      if (!(await this.waitForSlot(true))) continue;
      const preview = this.preview();
      if (this.native !== null) {
        const native = this.native;
        const shown = native.canShow(preview)
          ? await this.platform(record, () => native.show(preview))
          : await this.leaveNative(record, (session) => session.end(null));
        if (shown === null) return this.finish();
        this.lastCallAtMs = this.options.clock.now();
        if (this.native !== null) this.shownPreview = preview;
        continue;
      }
      const format = await syncStream(
        this.options,
        this.options.adapter,
        record,
        this.shown,
        this.format,
        preview.trim() === "" ? EMPTY_PREVIEW : preview,
      );
      this.lastCallAtMs = this.options.clock.now();
      this.shownPreview = preview;
      // null: the failure is persisted (retry by the worker, failed or ambiguous); stop previewing.
      if (format === null) return this.finish();
      this.format = format;
    }
  }

  private async begin(): Promise<void> {
    const { adapter, target, repo, clock } = this.options;
    if (!adapter.edit) return this.finish();
    const start = await repo.beginStream(
      {
        runId: target.runId,
        conversationId: target.conversationId,
        channel: adapter.channel,
        account: adapter.account,
        target: target.target,
        ...(target.replyTo === undefined ? {} : { replyTo: target.replyTo }),
        markdown: this.preview(),
      },
      clock.now(),
    );
    if (!start.live) return this.finish();
    this.record = start.record;
    this.shown = {
      messageIds: [...(start.record.receipt?.messageIds ?? [])],
      texts: [],
      usedKeys: new Set(),
    };
    this.format = start.record.format ?? "rich";
    const native = this.options.target.native;
    if (native !== undefined && this.shown.messageIds.length === 0) {
      const recordId = start.record.id;
      this.native = new NativeStreamSession(native, callerFor(this.options, adapter, start.record), (ids) =>
        repo.recordStreamProgress(recordId, ids, "rich", clock.now()).then(() => {}),
      );
    }
    this.phase = "live";
  }

  /**
   * Ends the native stream with `end` and continues with edits of the message it made. Null when
   * the platform call failed (the failure is persisted).
   */
  private async leaveNative<T>(
    record: OutboxStreamRecord,
    end: (native: NativeStreamSession) => Promise<T>,
  ): Promise<T | null> {
    const native = this.native!;
    this.native = null;
    const result = await this.platform(record, () => end(native));
    this.shown = { messageIds: native.messageIds, texts: [], usedKeys: new Set() };
    return result;
  }

  /** Runs a platform step; a failure is persisted (retry, failed or ambiguous) and gives null. */
  private async platform<T>(record: OutboxStreamRecord, step: () => Promise<T>): Promise<T | null> {
    try {
      return await step();
    } catch (error) {
      await settleFailure(this.options, this.options.adapter, record, error);
      return null;
    }
  }

  /**
   * Waits until `editIntervalMs` after the last call. A preview wait (`interruptible`) ends early
   * when the terminal event arrives, so the final text never queues behind a preview. False then.
   */
  private waitForSlot(interruptible: boolean): Promise<boolean> {
    const { clock, adapter } = this.options;
    return this.waitFor(this.lastCallAtMs + adapter.limits.editIntervalMs - clock.now(), interruptible);
  }

  /** Sleeps `waitMs`; `interruptible`: ends early (false) when the terminal event arrives. */
  private async waitFor(waitMs: number, interruptible: boolean): Promise<boolean> {
    const { clock } = this.options;
    if (waitMs <= 0) return true;
    const wait = new AbortController();
    const onAbort = () => wait.abort();
    this.aborted.signal.addEventListener("abort", onAbort, { once: true });
    if (interruptible) this.slotWait = wait;
    try {
      await clock.sleep(waitMs, wait.signal);
      return true;
    } catch {
      return false;
    } finally {
      this.aborted.signal.removeEventListener("abort", onAbort);
      if (this.slotWait === wait) this.slotWait = null;
    }
  }

  private finish(): void {
    this.phase = "done";
  }

  private settle(): void {
    // Reached twice when shutdown aborts an idle reply and its pump then ends.
    if (this.isSettled) return;
    this.isSettled = true;
    this.resolveSettled();
    this.options.onSettled();
  }
}
