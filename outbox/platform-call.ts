import type { ChannelAdapter } from "../channels/types.ts";
import { SwitchboardError } from "../src/errors.ts";
import type { Clock } from "../src/util/clock.ts";
import type { DeliveryRateLimiter, RateLane } from "./rate-limiter.ts";
import type { OutboxRecord } from "./types.ts";
import { targetKey } from "./types.ts";

/** Default bound on one platform call; past it the call counts as hung (platform_timeout). */
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;

export type PlatformOperation = "send" | "edit" | "delete";

/** A failed platform call, with which operation failed: only a failed `send` can duplicate a message. */
export class PlatformCallError extends Error {
  constructor(
    readonly operation: PlatformOperation,
    override readonly cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = "PlatformCallError";
  }
}

/** Waits for the rate limiter, then runs `call`, failing with platform_timeout past the timeout. */
export type PlatformCaller = <T>(operation: PlatformOperation, call: () => Promise<T>) => Promise<T>;

export interface PlatformCallerOptions {
  adapter: ChannelAdapter;
  record: Pick<OutboxRecord, "channel" | "account" | "target">;
  clock: Clock;
  limiter: DeliveryRateLimiter;
  callTimeoutMs: number;
  /** Aborts waiting for the rate limiter (shutdown); a call already made is never abandoned early. */
  signal?: AbortSignal;
}

/** The lane's chatKey is the record's targetKey, so the worker can match held chats to targets. */
export function rateLaneOf(
  adapter: ChannelAdapter,
  record: Pick<OutboxRecord, "channel" | "account" | "target">,
): RateLane {
  return {
    chatKey: targetKey(record),
    accountKey: `${record.channel}\u0000${record.account}`,
    limits: adapter.limits,
  };
}

export function createPlatformCaller(options: PlatformCallerOptions): PlatformCaller {
  const lane = rateLaneOf(options.adapter, options.record);
  return async function callPlatform(operation, call) {
    const permit = await options.limiter.acquire(lane, options.signal);
    try {
      return await withTimeout(options.clock, options.callTimeoutMs, operation, call);
    } catch (error) {
      throw new PlatformCallError(operation, error);
    } finally {
      permit.ended();
    }
  };
}

async function withTimeout<T>(
  clock: Clock,
  timeoutMs: number,
  operation: PlatformOperation,
  call: () => Promise<T>,
): Promise<T> {
  const timer = new AbortController();
  const timeout = clock.sleep(timeoutMs, timer.signal).then(
    () => {
      throw new SwitchboardError(
        "platform_timeout",
        `The platform did not answer a ${operation} within ${timeoutMs} ms; its outcome is unknown.`,
        { retryable: false },
      );
    },
    () => new Promise<never>(() => {}),
  );
  try {
    return await Promise.race([call(), timeout]);
  } finally {
    timer.abort();
  }
}
