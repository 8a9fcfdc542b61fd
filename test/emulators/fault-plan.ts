/**
 * Per-call fault injection shared by the emulators: the next N calls of a method (or route) answer
 * with the planned fault instead of running. Hung calls stay open until released or the emulator
 * closes. Each emulator names its own fault kinds; the chaos driver arms them all the same way.
 */

interface Planned<F> {
  fault: F;
  remaining: number;
}

export class FaultPlan<Key extends string, F> {
  private readonly planned = new Map<Key, Planned<F>[]>();
  private readonly hung = new Set<() => void>();

  /** Plans `fault` for the next `times` calls of `key` (after faults already planned for it). */
  add(key: Key, fault: F, times = 1): void {
    const queue = this.planned.get(key) ?? [];
    queue.push({ fault, remaining: times });
    this.planned.set(key, queue);
  }

  clear(): void {
    this.planned.clear();
  }

  take(key: Key): F | undefined {
    const queue = this.planned.get(key);
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

/** Headers go out, then the socket drops: the client's fetch fails mid-answer (ECONNRESET). */
export function resetConnection(): Response {
  return new Response(
    new ReadableStream({
      async pull(controller) {
        await Bun.sleep(1);
        controller.error(undefined);
      },
    }),
    { headers: { "content-type": "application/json" } },
  );
}
