/**
 * Span and trace ids a run's executions can compute again in any process: the span of attempt
 * `n` (the run's fencing token) is a hash of the run id and `n`, so the process that resumes a
 * run after a crash links its attempt to the lost one without anything written at its start.
 */
import { createHash, randomBytes } from "node:crypto";
import type { IdGenerator } from "@opentelemetry/sdk-trace";

/** The span id of attempt `fencingToken` of `runId` (16 hex digits, never all zeros). */
export function attemptSpanId(runId: string, fencingToken: number): string {
  return nonZero(createHash("sha256").update(`${runId}\u0000${fencingToken}`).digest("hex").slice(0, 16));
}

/** The trace of a run admitted without a trace context (32 hex digits). */
export function runTraceId(runId: string): string {
  return nonZero(createHash("sha256").update(`trace\u0000${runId}`).digest("hex").slice(0, 32));
}

function nonZero(hex: string): string {
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}

/**
 * Random ids, except for the span started inside `withIds`: the tracer asks for its ids
 * synchronously while starting it, so a field set around that one call is enough.
 */
export class ChosenIdGenerator implements IdGenerator {
  private chosen: { traceId?: string; spanId?: string } | null = null;

  generateTraceId(): string {
    const chosen = this.chosen?.traceId;
    if (chosen) {
      this.chosen = { ...this.chosen, traceId: undefined };
      return chosen;
    }
    return randomBytes(16).toString("hex");
  }

  generateSpanId(): string {
    const chosen = this.chosen?.spanId;
    if (chosen) {
      this.chosen = { ...this.chosen, spanId: undefined };
      return chosen;
    }
    return randomBytes(8).toString("hex");
  }

  withIds<T>(ids: { traceId?: string; spanId: string }, start: () => T): T {
    this.chosen = ids;
    try {
      return start();
    } finally {
      this.chosen = null;
    }
  }
}
