/**
 * One Bot API call under a deadline, its failure mapped through errors.ts. A call cut off by the
 * deadline becomes platform_timeout (outcome unknown). The deadline is real time on purpose: it
 * bounds a real socket, which no injected clock can speed up.
 */
import type { Api } from "grammy";
import { toSwitchboardError } from "./errors.ts";

/** grammY's node build types signals with the abort-controller polyfill; native signals work at runtime. */
export type GrammySignal = NonNullable<Parameters<Api["getMe"]>[0]>;

export async function callWithDeadline<T>(
  method: string,
  timeoutMs: number,
  run: (signal: GrammySignal) => Promise<T>,
): Promise<T> {
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    return await run(deadline as unknown as GrammySignal);
  } catch (error) {
    throw toSwitchboardError(error, { method, ...(deadline.aborted ? { timedOutAfterMs: timeoutMs } : {}) });
  }
}
