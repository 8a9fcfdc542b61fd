/**
 * What the runtime tells a tracer (src/telemetry implements it with OpenTelemetry). Absent, the
 * runtime calls nothing: telemetry off costs no work here.
 *
 * A run is one trace across processes: admission stores the W3C `traceparent` of its span in the
 * run's context, and every execution (attempt) of the run starts its span under it, so the
 * process that resumes a run after a crash continues the same trace.
 */
import type { RunRecord } from "./store.ts";
import type { MessagePart, Usage } from "./types.ts";

/** How an execution ended (execute.ts's ExecutionEnd), or the error it threw. */
export type TracedEnd =
  | { kind: "terminal"; state: string }
  | { kind: "released" }
  | { kind: "lost" }
  | { kind: "error"; error: unknown };

/** How a model step ended (step.ts's StepOutcome). */
export type TracedStepOutcome =
  | { kind: "ok"; model: string; finishReason: string; usage: Usage }
  | { kind: "stopped"; reason: string }
  | { kind: "failed"; error: string };

type ToolCallPart = Extract<MessagePart, { type: "tool-call" }>;

export interface RunTracing {
  /**
   * Runs one admission inside its span: `admit` gets the trace context to store with the run
   * (undefined when this admission is not sampled or traced).
   */
  admission<T extends AdmissionFacts>(admit: (traceparent: string | undefined) => Promise<T>): Promise<T>;
  /** One execution of an acquired run: this process's attempt at it (its fencing token). */
  execution(run: RunRecord): ExecutionTrace;
}

/** What an admission span records of its result. */
export interface AdmissionFacts {
  outcome: string;
  runId: string;
  conversationId: string;
}

export interface ExecutionTrace {
  /** Runs the execution with the run's span as the active one. */
  within<T>(fn: () => T): T;
  /** The model step `index` (0-based, the run's step count) begins. */
  step(index: number): StepTrace;
  /** The run's inputs hold these approval decisions (the calls they decide run in this attempt). */
  decisions(inputs: readonly { parts: readonly MessagePart[] }[]): void;
  /** A tool call begins (attempt > 1: run again after a crash), or is settled without running (null). */
  toolCall(call: ToolCallPart, attempt: number | null): ToolTrace;
  /** The execution ended; `parts` are the assistant's parts when it ended with them. */
  end(end: TracedEnd): void;
}

export interface StepTrace {
  /** The AI SDK `telemetry` setting for this step's model call (its GenAI spans nest in the step's). */
  readonly sdkTelemetry: Record<string, unknown>;
  /** Calls `fn` with the step's span as the active one. */
  within<T>(fn: () => T): T;
  end(outcome: TracedStepOutcome): void;
}

export interface ToolTrace {
  /** Runs the call with the tool's span as the active one (a child agent it starts nests in it). */
  within<T>(fn: () => T): T;
  end(result: { outcome: "completed" | "failed" | "unknown" | "denied"; output?: unknown }): void;
}

/** Where the trace context lives in a run's context (an object: the gateway's RunContext). */
const TRACEPARENT_KEY = "traceparent";

/** `context` carrying `traceparent`; a context that is not a plain object (tests) stays as it is. */
export function withTraceParent(context: unknown, traceparent: string | undefined): unknown {
  if (traceparent === undefined || typeof context !== "object" || context === null || Array.isArray(context))
    return context;
  return { ...context, [TRACEPARENT_KEY]: traceparent };
}

/** The trace context stored with a run at its admission, if any. */
export function traceParentOf(context: unknown): string | undefined {
  if (typeof context !== "object" || context === null) return undefined;
  const value = (context as Record<string, unknown>)[TRACEPARENT_KEY];
  return typeof value === "string" ? value : undefined;
}
