import type { RuntimeStore } from "../store/types.ts";
import type { DurableEvent, RuntimeEvent } from "./events.ts";

export type Listener = (event: RuntimeEvent) => void;

/**
 * Live fan-out of runtime events (at-most-once; a listener that throws is isolated). Durable
 * events are published from the ledger after their commit, so every one is seen once, in order.
 */
export class EventBus {
  private readonly listeners = new Set<Listener>();
  private readonly published = new Map<string, number>();
  private readonly pumping = new Map<string, Promise<void>>();

  constructor(private readonly store: RuntimeStore) {}

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: RuntimeEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A subscriber's failure must not break the run that published.
      }
    }
  }

  /** Publishes every ledger event of the conversation not yet published by this process. */
  publishDurable(conversationId: string): Promise<void> {
    const previous = this.pumping.get(conversationId) ?? Promise.resolve();
    const next = previous.then(() => this.pump(conversationId)).catch(() => {});
    this.pumping.set(conversationId, next);
    void next.finally(() => {
      if (this.pumping.get(conversationId) === next) this.pumping.delete(conversationId);
    });
    return next;
  }

  private async pump(conversationId: string): Promise<void> {
    let after = this.published.get(conversationId);
    if (after === undefined) {
      const head = await this.store.loadConversation(conversationId);
      // First sight of this conversation in this process: publish only what follows the commit
      // that triggered us; older history is served by follow() from the ledger.
      after = Math.max(0, (head?.lastSeq ?? 1) - 1);
    }
    for (;;) {
      const events = await this.store.readEvents(conversationId, after, 200);
      for (const event of events) {
        after = event.seq;
        this.emit(event);
      }
      this.published.set(conversationId, after);
      if (events.length < 200) return;
    }
  }

  /**
   * Snapshot-then-live: yields the conversation's durable events after `afterSeq` from the
   * ledger, then live events (durable ones de-duplicated by seq), until `signal` aborts.
   */
  async *follow(conversationId: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    const buffer: RuntimeEvent[] = [];
    let wake: (() => void) | null = null;
    const unsubscribe = this.subscribe((event) => {
      if (event.conversationId !== conversationId) return;
      buffer.push(event);
      wake?.();
    });
    const onAbort = () => wake?.();
    signal.addEventListener("abort", onAbort);
    try {
      let cursor = afterSeq;
      for (;;) {
        const page: DurableEvent[] = await this.store.readEvents(conversationId, cursor, 200);
        for (const event of page) {
          cursor = event.seq;
          yield event;
        }
        if (page.length < 200) break;
      }
      while (!signal.aborted) {
        const event = buffer.shift();
        if (!event) {
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = null;
          continue;
        }
        if (event.durable) {
          if (event.seq <= cursor) continue;
          cursor = event.seq;
        }
        yield event;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      unsubscribe();
    }
  }
}
