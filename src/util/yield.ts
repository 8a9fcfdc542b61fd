/**
 * Resolves once the work already queued has run (promise chains included), at the next turn of
 * the event loop. Work off a reply's critical path awaits it first, so a reply in progress gets
 * to its next I/O (the model request, the platform send) before this work takes the CPU.
 */
export function afterQueuedWork(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
