/**
 * Per-method fault injection: the next N calls of a method answer with the planned fault instead
 * of running. Hung calls stay open until released or the emulator closes.
 */
import { FaultPlan as SharedFaultPlan } from "../fault-plan.ts";

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

export class FaultPlan extends SharedFaultPlan<string, Fault> {}
