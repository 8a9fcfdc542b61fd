/**
 * A bounded map of the most recently set keys: the entry set longest ago goes first. The adapter
 * keeps message texts by wamid in one (a user's reply quotes what it answers, and the webhook
 * carries only the quoted message's id) and each chat's latest message in another (the typing
 * indicator is shown by marking a message read).
 */
export class Recent<V> {
  readonly #entries = new Map<string, V>();
  readonly #capacity: number;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  set(key: string, value: V): void {
    if (this.#capacity === 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  get(key: string): V | undefined {
    return this.#entries.get(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
