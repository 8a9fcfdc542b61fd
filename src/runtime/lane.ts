import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { afterQueuedWork } from "../util/yield.ts";
import type { ExecutionEnd } from "./execute.ts";
import type { AcquiredRun, RuntimeStore } from "./store.ts";
import type { StopReason } from "./types.ts";

export interface LaneOptions {
  conversationId: string;
  owner: string;
  store: RuntimeStore;
  clock: Clock;
  logger: Logger;
  leaseMs: number;
  execute: (acquired: AcquiredRun, signal: AbortSignal) => Promise<ExecutionEnd>;
  onEnd: (runId: string, end: ExecutionEnd) => Promise<void>;
  /** Called when the lane has nothing to do and nothing scheduled, so the runtime may drop it. */
  onIdle?: () => void;
}

/**
 * One conversation's executor in this process: runs its runs one at a time in the order the
 * store says (`acquireNext`). Kicks are coalesced; a kick during a drain makes it look again.
 */
export class Lane {
  closing = false;
  private dirty = false;
  private draining: Promise<void> | null = null;
  private active: { runId: string; abort: AbortController } | null = null;
  private retryTimer: Timer | undefined;

  constructor(private readonly options: LaneOptions) {}

  get busy(): boolean {
    return this.draining !== null;
  }

  kick(): void {
    this.dirty = true;
    if (this.draining) return;
    this.draining = this.drain()
      .catch((error) =>
        this.options.logger.error("lane.failed", { conversationId: this.options.conversationId, error }),
      )
      .finally(() => {
        this.draining = null;
        if (this.dirty && !this.closing) this.kick();
        else if (this.retryTimer === undefined) this.options.onIdle?.();
      });
  }

  idle(): Promise<void> {
    return this.draining ?? Promise.resolve();
  }

  /** Aborts the active run when it is `runId`. */
  abort(runId: string, reason: StopReason): void {
    if (this.active?.runId === runId) this.active.abort.abort(reason);
  }

  abortActive(reason: StopReason): void {
    this.active?.abort.abort(reason);
  }

  private async drain(): Promise<void> {
    const { store, clock, conversationId } = this.options;
    while (this.dirty && !this.closing) {
      this.dirty = false;
      for (;;) {
        if (this.closing) return;
        const { acquired, heldUntilMs } = await store.acquireNext({
          conversationId,
          owner: this.options.owner,
          nowMs: clock.now(),
          leaseMs: this.options.leaseMs,
        });
        if (!acquired) {
          if (heldUntilMs !== null) this.retryAt(heldUntilMs);
          break;
        }
        const abort = new AbortController();
        this.active = { runId: acquired.run.id, abort };
        let end: ExecutionEnd;
        try {
          end = await this.options.execute(acquired, abort.signal);
        } finally {
          this.active = null;
        }
        await this.options.onEnd(acquired.run.id, end);
        if (end.kind === "released") return;
        // The ended run's reply is on its way to the platform: its send goes before this lane's
        // look for the next run.
        await afterQueuedWork();
      }
    }
  }

  /** A run held by another live owner: look again when its lease would expire. */
  private retryAt(leaseExpiresAtMs: number): void {
    this.retryTimer?.cancel();
    const delayMs = Math.max(10, leaseExpiresAtMs - this.options.clock.now() + 10);
    this.retryTimer = this.options.clock.setTimer(
      delayMs,
      () => {
        this.retryTimer = undefined;
        this.kick();
      },
      { unref: true },
    );
  }
}
