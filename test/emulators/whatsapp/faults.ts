/**
 * Per-route fault injection: the next N calls of a route answer with the planned fault instead of
 * running. Hung calls stay open until released or the emulator closes. Same shape as the Telegram
 * emulator's plan, so the chaos driver can arm either the same way.
 */
import { FaultPlan as SharedFaultPlan } from "../fault-plan.ts";
import { ERRORS, type GraphAnswer, graphError } from "./graph-errors.ts";

/** The Graph API calls a fault can target. */
export type GraphRoute = "messages" | "media_upload" | "media_info" | "media_download";

export type Fault =
  /** A 5xx: Meta's `code` 1 (unknown), 2 (temporarily unavailable) or 131000 (something went wrong). */
  | { kind: "server_error"; status?: number; code?: number }
  /**
   * Throttled: code 130429 (the number's throughput) by default, or 4 / 80007 (app / account call
   * limits). `status` default 429; `retryAfterSeconds` adds a Retry-After header.
   */
  | { kind: "rate_limited"; status?: number; code?: number; retryAfterSeconds?: number }
  /** Any Graph error answer. */
  | {
      kind: "graph_error";
      status: number;
      code: number;
      title: string;
      details?: string;
      subcode?: number;
    }
  /** Never answers until released (or the emulator closes). */
  | { kind: "hang" }
  /** Sends headers, then drops the connection: the client sees a reset. */
  | { kind: "reset" }
  /** Runs the call normally (the message is sent), then drops the connection. */
  | { kind: "reset_after_effect" };

export class FaultPlan extends SharedFaultPlan<GraphRoute, Fault> {}

/** The Graph API's answer for a fault that answers (rather than hanging or dropping the connection). */
export function faultAnswer(
  fault: Extract<Fault, { kind: "server_error" | "rate_limited" | "graph_error" }>,
): GraphAnswer {
  switch (fault.kind) {
    case "server_error":
      return graphError(
        fault.status ?? 500,
        fault.code === 2
          ? ERRORS.temporarilyUnavailable
          : { code: fault.code ?? 131000, title: ERRORS.unknown.title },
      );
    case "rate_limited": {
      const code = fault.code ?? ERRORS.throughput.code;
      const throughput = code === ERRORS.throughput.code;
      const answer = graphError(fault.status ?? (throughput ? 400 : 429), {
        code,
        title: throughput ? ERRORS.throughput.title : "Application request limit reached",
      });
      if (fault.retryAfterSeconds !== undefined)
        answer.headers = { "retry-after": String(fault.retryAfterSeconds) };
      return answer;
    }
    case "graph_error":
      return graphError(
        fault.status,
        {
          code: fault.code,
          title: fault.title,
          ...(fault.subcode === undefined ? {} : { subcode: fault.subcode }),
        },
        fault.details,
      );
  }
}
