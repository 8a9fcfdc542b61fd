/**
 * Per-method fault injection: the next N calls of a method answer with the planned fault instead
 * of running. Hung calls stay open until released or the emulator closes.
 */

export type Fault =
  /** 429 with parameters.retry_after, like Telegram's flood control. */
  | { kind: "rate_limited"; retryAfterSeconds: number }
  /** A 5xx from the Bot API server. */
  | { kind: "server_error"; status?: number; description?: string }
  /** Any Bot API error answer, e.g. 400 "Bad Request: chat not found" or 403 "Forbidden: …". */
  | { kind: "api_error"; status: number; description: string; parameters?: Record<string, unknown> }
  /** Never answers until released (or the emulator closes). */
  | { kind: "hang" }
  /** Sends headers, then drops the connection: the client sees ECONNRESET. */
  | { kind: "reset" }
  /** Runs the method normally (the side effect happens), then drops the connection. */
  | { kind: "reset_after_effect" };

interface Planned {
  fault: Fault;
  remaining: number;
}

export class FaultPlan {
  private readonly planned = new Map<string, Planned[]>();
  private readonly hung = new Set<() => void>();

  /** Plans `fault` for the next `times` calls of `method` (after faults already planned for it). */
  add(method: string, fault: Fault, times = 1): void {
    const queue = this.planned.get(method) ?? [];
    queue.push({ fault, remaining: times });
    this.planned.set(method, queue);
  }

  clear(): void {
    this.planned.clear();
  }

  take(method: string): Fault | undefined {
    const queue = this.planned.get(method);
    const head = queue?.[0];
    if (!queue || !head) return undefined;
    head.remaining -= 1;
    if (head.remaining <= 0) queue.shift();
    return head.fault;
  }

  /** Resolves when released; the caller then answers (or drops) the request. */
  hang(): Promise<void> {
    return new Promise((resolve) => {
      const release = () => {
        this.hung.delete(release);
        resolve();
      };
      this.hung.add(release);
    });
  }

  hungCount(): number {
    return this.hung.size;
  }

  releaseHung(): void {
    for (const release of [...this.hung]) release();
  }
}
