import type { DurableEvent, RuntimeEvent } from "./events.ts";
import type { RuntimeStore } from "./store.ts";

export type Listener = (event: RuntimeEvent) => void;

/**
 * Live fan-out of runtime events (at-most-once; a listener that throws is isolated). Durable
 * events are published by the store right after their commit, in commit order.
 */
export class EventBus {
  private readonly listeners = new Set<Listener>();
  private readonly detach: () => void;

  constructor(private readonly store: RuntimeStore) {
    this.detach = store.onCommitted((events) => {
      for (const event of events) this.emit(event);
    });
  }

  close(): void {
    this.detach();
  }

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
