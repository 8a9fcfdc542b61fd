import type { DurableEvent } from "../../runtime/events.ts";

/**
 * Calls listeners with each committed transaction's events, in commit order. A transaction takes
 * its turn when its work is done, just before COMMIT. Two transactions that append to one
 * conversation both update its head row, so the second cannot finish its work before the first
 * committed: their turns follow commit order. A turn's events go out once it and every earlier
 * turn settled.
 */
export class CommitPublisher {
  private readonly listeners = new Set<(events: DurableEvent[]) => void>();
  private readonly turns: Array<{ events: DurableEvent[]; settled: boolean }> = [];

  subscribe(listener: (events: DurableEvent[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Takes the next turn; call the returned function once the transaction committed or failed. */
  enqueue(events: DurableEvent[]): (committed: boolean) => void {
    const turn = { events, settled: false };
    this.turns.push(turn);
    return (committed) => {
      turn.settled = true;
      if (!committed) turn.events = [];
      this.drain();
    };
  }

  private drain(): void {
    while (this.turns[0]?.settled) {
      const { events } = this.turns.shift()!;
      if (events.length === 0) continue;
      for (const listener of this.listeners) {
        try {
          listener(events);
        } catch {
          // An observer's failure must not undo or hide a committed mutation.
        }
      }
    }
  }
}
