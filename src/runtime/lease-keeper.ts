import { SwitchboardError } from "../errors.ts";
import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { Fence, RuntimeStore } from "./store.ts";

/** At most one renewal-failure warning per run in this long (the counter sees every failure). */
export const RENEWAL_WARNING_INTERVAL_MS = 30_000;

export interface LeaseKeeperOptions {
  store: Pick<RuntimeStore, "renewLease">;
  clock: Clock;
  logger: Logger;
  fence: Fence;
  /** How long each renewal extends the lease; it is renewed every third of it. */
  leaseMs: number;
  /** When the lease taken with `fence` expires, as the store recorded it. */
  expiresAtMs: number;
  /** Told of every renewal that failed with an error (not of one answered "not held"). */
  onRenewalFailed?: () => void;
}

/** Keeps one execution's lease alive and says when it is lost. */
export interface LeaseKeeper {
  /**
   * Aborts, with a `fence_lost` SwitchboardError, when the lease is lost: a renewal answered that
   * the fence no longer holds, or the lease expired while renewals failed. Never aborts after stop().
   */
  readonly signal: AbortSignal;
  /** Throws the `fence_lost` error once the lease is lost: nothing may be written after that. */
  assertHeld(): void;
  /** Stops renewing (the execution ended). Idempotent. */
  stop(): void;
}

/** How often a lease of `leaseMs` is renewed. */
export function renewalIntervalMs(leaseMs: number): number {
  return Math.max(50, Math.floor(leaseMs / 3));
}

/**
 * Renews the lease every third of its length. Until the store answers a renewal, the lease is
 * held only until the expiry the last successful one set: past it another owner may take the run,
 * so the work stops then even when the store could not be asked (renewals failing with errors).
 */
export function keepLease(options: LeaseKeeperOptions): LeaseKeeper {
  const { store, clock, logger, fence, leaseMs } = options;
  const controller = new AbortController();
  let stopped = false;
  let expiresAtMs = options.expiresAtMs;
  let lastWarnedAtMs = Number.NEGATIVE_INFINITY;
  let failuresSinceWarning = 0;

  const lose = (reason: "not_held" | "expired") => {
    if (stopped || controller.signal.aborted) return;
    stop();
    logger.warn("run.lease_lost", {
      runId: fence.runId,
      fencingToken: fence.fencingToken,
      reason,
      hint:
        reason === "not_held"
          ? "another owner took the run; its recovery finishes it"
          : "renewals failed until the lease expired; the run's next owner resumes it",
    });
    controller.abort(
      new SwitchboardError(
        "fence_lost",
        reason === "not_held"
          ? `Run ${fence.runId} is no longer owned under fencing token ${fence.fencingToken}: another owner took it.`
          : `The lease on run ${fence.runId} expired while its renewals failed; its next owner resumes it.`,
        { details: { runId: fence.runId, fencingToken: fence.fencingToken, reason } },
      ),
    );
  };
  const armExpiry = (): Timer => clock.setTimer(expiresAtMs - clock.now(), () => lose("expired"));
  let expiry = armExpiry();

  const failed = (error: unknown) => {
    if (stopped) return;
    options.onRenewalFailed?.();
    failuresSinceWarning += 1;
    const nowMs = clock.now();
    if (nowMs - lastWarnedAtMs < RENEWAL_WARNING_INTERVAL_MS) return;
    logger.warn("run.lease_renewal_failed", {
      runId: fence.runId,
      error,
      failures: failuresSinceWarning,
      leaseExpiresInMs: expiresAtMs - nowMs,
      hint: "the database did not answer the renewal; the run stops if its lease expires before one succeeds",
    });
    lastWarnedAtMs = nowMs;
    failuresSinceWarning = 0;
  };

  const renewal = clock.every(renewalIntervalMs(leaseMs), () => {
    const askedAtMs = clock.now();
    // Async, so a store that throws at once is a failed renewal too, never an uncaught error.
    (async () => await store.renewLease(fence, askedAtMs, leaseMs))().then((held) => {
      if (stopped) return;
      if (!held) return lose("not_held");
      // Renewals may overlap when the store is slow: the latest expiry written wins.
      if (askedAtMs + leaseMs <= expiresAtMs) return;
      expiresAtMs = askedAtMs + leaseMs;
      expiry.cancel();
      expiry = armExpiry();
    }, failed);
  });

  function stop(): void {
    stopped = true;
    renewal.cancel();
    expiry.cancel();
  }

  return {
    signal: controller.signal,
    assertHeld() {
      if (controller.signal.aborted) throw controller.signal.reason;
    },
    stop,
  };
}
