import { createHash } from "node:crypto";
import type { RuntimeEvent } from "../src/runtime/events.ts";
import type { Clock, Timer } from "../src/util/clock.ts";
import type { Logger } from "../src/util/log.ts";

export interface DraftPreview {
  /** Feed the run's events in order; deltas update the draft, terminal ends it. */
  handle(event: RuntimeEvent): void;
  stop(): void;
}

/** A stable, non-zero 31-bit draft id per run, so a resumed run animates the same draft. */
export function draftIdFor(runId: string): number {
  return createHash("sha256").update(runId).digest().readUInt32BE(0) & 0x7fffffff || 1;
}

/**
 * Native streaming preview (Telegram drafts): the text so far, sent at most every `intervalMs`
 * with one call in flight. Previews are best effort and never a message: the final answer is the
 * outbox's terminal delivery, so a failed draft call only ends the previews.
 */
export function createDraftPreview(options: {
  runId: string;
  send: (draftId: number, text: string) => Promise<void>;
  clock: Clock;
  intervalMs: number;
  maxChars: number;
  logger: Logger;
}): DraftPreview {
  const draftId = draftIdFor(options.runId);
  let text = "";
  let shown = "";
  let inFlight = false;
  let stopped = false;
  let lastAtMs = 0;
  let timer: Timer | undefined;

  const flush = () => {
    if (stopped || inFlight || text === shown || text.trim() === "") return;
    const waitMs = lastAtMs + options.intervalMs - options.clock.now();
    if (waitMs > 0) {
      timer ??= options.clock.setTimer(waitMs, () => {
        timer = undefined;
        flush();
      });
      return;
    }
    const preview = text.length > options.maxChars ? `${text.slice(0, options.maxChars - 1)}…` : text;
    inFlight = true;
    lastAtMs = options.clock.now();
    options
      .send(draftId, preview)
      .then(
        () => {
          shown = text;
        },
        (error: unknown) => {
          stopped = true;
          options.logger.warn("outbox.draft_preview_failed", {
            runId: options.runId,
            error: error instanceof Error ? error.message : String(error),
          });
        },
      )
      .finally(() => {
        inFlight = false;
        flush();
      });
  };

  return {
    handle(event) {
      if (stopped) return;
      if (event.type === "assistant-delta") text += event.delta;
      else if (event.type === "attempt-reset") text = "";
      else if (event.type === "terminal") return this.stop();
      else return;
      flush();
    },
    stop() {
      stopped = true;
      timer?.cancel();
    },
  };
}
