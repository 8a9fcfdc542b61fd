/**
 * What changed, for the console's live lists (`GET /api/events`): runs admitted, moving or
 * ending, a reply reaching its chat, an operator's action. At-most-once and in memory: a console
 * that missed one reloads its list on reconnect, so nothing here needs to be durable. Ids and
 * states only, never message text.
 */
export interface ConsoleChange {
  kind: "run" | "outbox" | "operator";
  conversationId?: string;
  runId?: string;
  outboxId?: string;
  state?: string;
}

export type ChangeListener = (change: ConsoleChange) => void;

export class ChangeFeed {
  private readonly listeners = new Set<ChangeListener>();

  /** Calls `listener` for each change from now on; returns the unsubscribe function. */
  subscribe(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(change: ConsoleChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch {
        // One console's failure must not reach the run or delivery that published.
      }
    }
  }
}
