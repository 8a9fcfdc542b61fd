import {
  type LanguageModel,
  type LanguageModelUsage,
  type ModelMessage,
  type ProviderMetadata,
  stepCountIs,
  streamText,
  type ToolSet,
} from "ai";
import { approvalIdFor } from "../util/approval-signing.ts";
import type { Clock, Timer } from "../util/clock.ts";
import { killPoint } from "../util/kill-point.ts";
import type { RuntimeEvent } from "./events.ts";
import { decideRetry, type RetryPolicy } from "./retry.ts";
import type { StepTrace } from "./tracing.ts";
import type { MessagePart, ModelCallObserver, StopReason, Usage } from "./types.ts";

export interface ModelEntry {
  /** Human-readable name used in logs, step records and /status (e.g. `openrouter:x/y`). */
  label: string;
  model: LanguageModel;
}

/** Maps what the AI SDK reports for a step to our usage record (unavailable stays undefined). */
export type UsageReader = (
  usage: LanguageModelUsage | undefined,
  providerMetadata: ProviderMetadata | undefined,
) => Usage;

export interface StepInput {
  conversationId: string;
  runId: string;
  instructions: string | undefined;
  messages: ModelMessage[];
  tools: ToolSet | undefined;
  /** Whether a call of this tool waits for a person's approval (the AI SDK's tool approval). */
  needsApproval?: (toolName: string) => boolean;
  models: readonly ModelEntry[];
  retry: RetryPolicy;
  idleTimeoutMs: number;
  /** Aborted with a StopReason when the run must stop. */
  signal: AbortSignal;
  clock: Clock;
  readUsage: UsageReader;
  modelCalls?: ModelCallObserver;
  emit: (event: RuntimeEvent) => void;
  nextSequence: () => number;
  /** The step's span (telemetry on): the AI SDK's own spans nest in it. */
  trace?: StepTrace;
}

export type StepOutcome =
  | {
      kind: "ok";
      parts: MessagePart[];
      finishReason: string;
      usage: Usage;
      model: string;
      startedAtMs: number;
    }
  /** Stopped mid-step; `partial` holds what this attempt streamed (the text a user may have seen). */
  | { kind: "stopped"; reason: StopReason; partial: MessagePart[] }
  | { kind: "failed"; error: string; usage: Usage[] };

class IdleTimeout extends Error {}

/**
 * The AI SDK's telemetry, off for every call of ours unless OpenTelemetry is on (the step's trace
 * then gives its setting): on, each call copies and redacts its whole prompt and tools for
 * tracing (0.8 ms of a one-line reply's model call, measured in the gateway).
 */
export const SDK_TELEMETRY_OFF = { isEnabled: false } as const;

/**
 * One model call: exactly one AI SDK step (tools run inside it), streamed to subscribers. A
 * provider failure before any tool call is retried with backoff or handed to the next model in
 * the chain; subscribers then get `attempt-reset` and drop what the failed attempt streamed.
 */
export async function runStep(input: StepInput): Promise<StepOutcome> {
  const failedUsage: Usage[] = [];
  let attempt = 0;
  let modelIndex = 0;
  for (;;) {
    const entry = input.models[modelIndex]!;
    const startedAtMs = input.clock.now();
    const attemptAbort = new AbortController();
    const onRunAbort = () => attemptAbort.abort(input.signal.reason);
    input.signal.addEventListener("abort", onRunAbort, { once: true });
    let idleTimer: Timer | undefined;
    // Re-armed on every stream part: refresh() restarts the one timer instead of making a new one.
    const armIdle = () => {
      if (idleTimer) idleTimer.refresh();
      else idleTimer = input.clock.setTimer(input.idleTimeoutMs, () => attemptAbort.abort(new IdleTimeout()));
    };
    const parts: MessagePart[] = [];
    let toolCalled = false;
    let finishReason = "unknown";
    let usage: Usage = {};
    let failure: unknown;
    const appendText = (type: "text" | "reasoning", delta: string) => {
      const last = parts.at(-1);
      if (last && last.type === type) last.text += delta;
      else parts.push({ type, text: delta });
    };
    try {
      armIdle();
      input.modelCalls?.started(input.runId);
      const call = () =>
        streamText({
          model: entry.model,
          instructions: input.instructions,
          messages: input.messages,
          tools: input.tools,
          ...(input.needsApproval
            ? {
                toolApproval: ({ toolCall }: { toolCall: { toolName: string } }) =>
                  input.needsApproval?.(toolCall.toolName) ? "user-approval" : "not-applicable",
              }
            : {}),
          stopWhen: stepCountIs(1),
          abortSignal: attemptAbort.signal,
          maxRetries: 0,
          telemetry: input.trace?.sdkTelemetry ?? SDK_TELEMETRY_OFF,
          onError: () => {},
        });
      const result = input.trace ? input.trace.within(call) : call();
      for await (const part of result.fullStream) {
        armIdle();
        switch (part.type) {
          case "text-delta":
            appendText("text", part.text);
            killPoint("step.streaming");
            emitDelta(input, "assistant-delta", part.text);
            break;
          case "reasoning-delta":
            appendText("reasoning", part.text);
            emitDelta(input, "reasoning-delta", part.text);
            break;
          case "tool-call":
            toolCalled = true;
            parts.push({
              type: "tool-call",
              toolCallId: part.toolCallId,
              toolName: part.toolName,
              input: part.input,
            });
            emitTool(input, part.toolCallId, part.toolName, "started");
            break;
          case "tool-approval-request":
            if (part.isAutomatic) break;
            parts.push({
              type: "tool-approval-request",
              approvalId: approvalIdFor(input.runId, part.toolCall.toolCallId),
              toolCallId: part.toolCall.toolCallId,
              toolName: part.toolCall.toolName,
            });
            break;
          case "tool-result":
            parts.push({
              type: "tool-result",
              toolCallId: part.toolCallId,
              toolName: part.toolName,
              output: part.output,
              isError: false,
            });
            emitTool(input, part.toolCallId, part.toolName, "completed");
            break;
          case "tool-error":
            parts.push({
              type: "tool-result",
              toolCallId: part.toolCallId,
              toolName: part.toolName,
              output: part.error instanceof Error ? part.error.message : String(part.error),
              isError: true,
            });
            emitTool(input, part.toolCallId, part.toolName, "failed");
            break;
          case "finish-step":
            finishReason = part.finishReason;
            usage = input.readUsage(part.usage, part.providerMetadata);
            break;
          case "error":
            throw part.error;
          default:
            break;
        }
      }
      if (attemptAbort.signal.aborted) throw attemptAbort.signal.reason;
    } catch (error) {
      failure = error;
    } finally {
      input.modelCalls?.finished(input.runId);
      idleTimer?.cancel();
      input.signal.removeEventListener("abort", onRunAbort);
    }
    if (failure === undefined) {
      return { kind: "ok", parts, finishReason, usage, model: entry.label, startedAtMs };
    }
    if (input.signal.aborted) {
      return { kind: "stopped", reason: input.signal.reason as StopReason, partial: keepText(parts) };
    }
    if (attemptAbort.signal.reason instanceof IdleTimeout) {
      return { kind: "stopped", reason: "timeout", partial: keepText(parts) };
    }
    failedUsage.push(usage);
    const decision = decideRetry(input.retry, attempt, input.models.length, toolCalled);
    const message = failure instanceof Error ? failure.message : String(failure);
    if (!decision.retry) return { kind: "failed", error: `${entry.label}: ${message}`, usage: failedUsage };
    input.emit({
      type: "attempt-reset",
      durable: false,
      conversationId: input.conversationId,
      runId: input.runId,
      sequence: input.nextSequence(),
      reason: `${entry.label}: ${message}`,
    });
    try {
      await input.clock.sleep(decision.delayMs, input.signal);
    } catch {
      return { kind: "stopped", reason: input.signal.reason as StopReason, partial: [] };
    }
    attempt += 1;
    modelIndex = decision.modelIndex;
  }
}

function keepText(parts: MessagePart[]): MessagePart[] {
  return parts.filter((p) => p.type === "text");
}

function emitDelta(input: StepInput, type: "assistant-delta" | "reasoning-delta", delta: string) {
  input.emit({
    type,
    durable: false,
    conversationId: input.conversationId,
    runId: input.runId,
    sequence: input.nextSequence(),
    delta,
  });
}

function emitTool(
  input: StepInput,
  toolCallId: string,
  toolName: string,
  status: "started" | "completed" | "failed",
) {
  input.emit({
    type: "tool-status",
    durable: false,
    conversationId: input.conversationId,
    runId: input.runId,
    sequence: input.nextSequence(),
    toolCallId,
    toolName,
    status,
  });
}
