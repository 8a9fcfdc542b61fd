/**
 * Polls `predicate` every `intervalMs` until it returns something other than false/undefined/null
 * and resolves with it; rejects after `timeoutMs` naming what was awaited.
 */
export async function waitFor<T>(
  predicate: () => T | false | undefined | null,
  timeoutMs: number,
  description = "condition",
  intervalMs = 10,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = predicate();
    if (value !== false && value !== undefined && value !== null) return value;
    if (Date.now() >= deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${description}`);
    await Bun.sleep(intervalMs);
  }
}
