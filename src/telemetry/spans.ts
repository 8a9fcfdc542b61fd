/**
 * The gateway's spans, written against the OpenTelemetry API:
 * `switchboard.ingress` → `switchboard.admission` → `switchboard.run` (one per execution attempt)
 * → `switchboard.step` (the AI SDK's GenAI spans inside) and `switchboard.tool`; and
 * `switchboard.delivery` per outbox record, under the run's latest attempt.
 *
 * Attributes carry ids, names, states and numbers. Prompts, answers and tool inputs and outputs
 * are added only with `content` (SWITCHBOARD_TRACE_CONTENT=on).
 */

import {
  type Attributes,
  type Context,
  context,
  isSpanContextValid,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { Telemetry as AiTelemetry } from "ai";
import type { OutboxRecord, OutboxRepository } from "../../outbox/types.ts";
import type { RuntimeStore } from "../runtime/store.ts";
import type { ToolCallPart } from "../runtime/tool-calls.ts";
import type { ExecutionTrace, RunTracing, StepTrace, ToolTrace } from "../runtime/tracing.ts";
import { traceParentOf } from "../runtime/tracing.ts";
import { attemptSpanId, type ChosenIdGenerator, runTraceId } from "./attempt-ids.ts";
import type { GatewayTracing } from "./telemetry.ts";

export interface SpanOptions {
  tracer: Tracer;
  ids: ChosenIdGenerator;
  /** The AI SDK's OpenTelemetry integration (@ai-sdk/otel), handed to each model call. */
  ai: AiTelemetry;
  content: boolean;
  runtime: RuntimeStore;
  outbox: OutboxRepository;
}

/** Longest content attribute (prompts, outputs) exported, in characters. */
const MAX_CONTENT_CHARS = 8192;
/** Runs whose latest attempt's span this process remembers, for their deliveries. */
const REMEMBERED_RUNS = 1000;

export function gatewaySpans(options: SpanOptions): GatewayTracing {
  const { tracer, ids, content } = options;
  const attempts = new Map<string, SpanContext>();
  const remember = (runId: string, spanContext: SpanContext) => {
    attempts.delete(runId);
    attempts.set(runId, spanContext);
    if (attempts.size > REMEMBERED_RUNS) attempts.delete(attempts.keys().next().value!);
  };
  const sdkTelemetry = {
    isEnabled: true,
    integrations: [options.ai],
    functionId: "switchboard.step",
    recordInputs: content,
    recordOutputs: content,
  };

  const runs: RunTracing = {
    async admission(admit) {
      const span = tracer.startSpan("switchboard.admission", { kind: SpanKind.INTERNAL }, liveContext());
      const spanContext = span.spanContext();
      try {
        const result = await admit(isSpanContextValid(spanContext) ? toTraceParent(spanContext) : undefined);
        span.setAttributes({
          "switchboard.admission.outcome": result.outcome,
          "switchboard.run.id": result.runId,
          "switchboard.conversation.id": result.conversationId,
        });
        return result;
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },

    execution(run): ExecutionTrace {
      const stored = parseTraceParent(traceParentOf(run.context));
      const parent = stored ? trace.setSpanContext(ROOT_CONTEXT, stored) : ROOT_CONTEXT;
      const traceId = stored?.traceId ?? runTraceId(run.id);
      const links: Link[] =
        run.fencingToken > 1
          ? [
              {
                context: {
                  traceId,
                  spanId: attemptSpanId(run.id, run.fencingToken - 1),
                  traceFlags: stored?.traceFlags ?? 1,
                  isRemote: true,
                },
                attributes: {
                  "switchboard.link": "previous_attempt",
                  "switchboard.run.attempt": run.fencingToken - 1,
                },
              },
            ]
          : [];
      const span = ids.withIds(
        { ...(stored ? {} : { traceId }), spanId: attemptSpanId(run.id, run.fencingToken) },
        () =>
          tracer.startSpan(
            "switchboard.run",
            {
              kind: SpanKind.INTERNAL,
              links,
              attributes: {
                "switchboard.run.id": run.id,
                "switchboard.conversation.id": run.conversationId,
                "switchboard.run.attempt": run.fencingToken,
                "switchboard.run.resumed": run.fencingToken > 1,
                "switchboard.run.steps_before": run.steps,
                ...originOf(run.context),
              },
            },
            parent,
          ),
      );
      const runContext = trace.setSpan(parent, span);
      remember(run.id, span.spanContext());
      const decisions = new Map<string, { approvalId: string; approved: boolean; reason?: string }>();

      const toolSpan = (
        call: Pick<ToolCallPart, "toolCallId" | "toolName" | "input">,
        attempt: number | null,
      ) => {
        const attributes: Attributes = {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": call.toolName,
          "gen_ai.tool.call.id": call.toolCallId,
          ...(attempt === null ? {} : { "switchboard.tool.attempt": attempt }),
          ...(content ? { "gen_ai.tool.call.arguments": contentOf(call.input) } : {}),
        };
        const decision = decisions.get(call.toolCallId);
        if (decision) {
          attributes["switchboard.approval.id"] = decision.approvalId;
          attributes["switchboard.approval.decision"] = decision.approved
            ? "approved"
            : (decision.reason ?? "denied");
        }
        const span = tracer.startSpan(
          `execute_tool ${call.toolName}`,
          { kind: SpanKind.INTERNAL, attributes },
          runContext,
        );
        const approval = decision
          ? approvalFacts(options.runtime, decision.approvalId, span)
          : Promise.resolve();
        const toolContext = trace.setSpan(runContext, span);
        const toolTrace: ToolTrace = {
          within: (fn) => context.with(toolContext, fn),
          end(result) {
            const endTime = Date.now();
            span.setAttribute("switchboard.tool.outcome", result.outcome);
            if (content && result.output !== undefined)
              span.setAttribute("gen_ai.tool.call.result", contentOf(result.output));
            if (result.outcome !== "completed")
              span.setStatus({ code: SpanStatusCode.ERROR, message: result.outcome });
            // The approval's times come from the store; the span keeps the time the call ended.
            void approval.finally(() => span.end(endTime));
          },
        };
        return toolTrace;
      };

      return {
        within: (fn) => context.with(runContext, fn),
        step(index): StepTrace {
          const span = tracer.startSpan(
            "switchboard.step",
            { kind: SpanKind.INTERNAL, attributes: { "switchboard.step.index": index } },
            runContext,
          );
          const stepContext = trace.setSpan(runContext, span);
          return {
            sdkTelemetry,
            within: (fn) => context.with(stepContext, fn),
            end(outcome) {
              span.setAttribute("switchboard.step.outcome", outcome.kind);
              if (outcome.kind === "ok") {
                span.setAttributes({
                  "switchboard.step.model": outcome.model,
                  "gen_ai.response.finish_reasons": [outcome.finishReason],
                  ...numbers({
                    "gen_ai.usage.input_tokens": outcome.usage.inputTokens,
                    "gen_ai.usage.output_tokens": outcome.usage.outputTokens,
                    "switchboard.usage.cost_usd": outcome.usage.costUsd,
                  }),
                });
              } else if (outcome.kind === "stopped") {
                span.setAttribute("switchboard.step.stop_reason", outcome.reason);
              } else {
                span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
              }
              span.end();
            },
          };
        },
        decisions(inputs) {
          for (const input of inputs) {
            for (const part of input.parts) {
              if (part.type !== "tool-approval-response" || decisions.has(part.toolCallId)) continue;
              decisions.set(part.toolCallId, {
                approvalId: part.approvalId,
                approved: part.approved,
                ...(part.reason ? { reason: part.reason } : {}),
              });
              // A denied call never runs: its span says so now.
              if (!part.approved) toolSpan(part, null).end({ outcome: "denied" });
            }
          }
        },
        toolCall: toolSpan,
        end(end) {
          span.setAttribute("switchboard.run.end", end.kind);
          if (end.kind === "terminal") {
            span.setAttribute("switchboard.run.state", end.state);
            if (end.state === "failed" || end.state === "timeout")
              span.setStatus({ code: SpanStatusCode.ERROR, message: end.state });
          } else if (end.kind === "lost") {
            span.setStatus({ code: SpanStatusCode.ERROR, message: "the run's lease was lost" });
          } else if (end.kind === "error") {
            failed(span, end.error);
          }
          span.end();
        },
      };
    },
  };

  async function deliveryParent(runId: string): Promise<Context> {
    const attempt = attempts.get(runId);
    if (attempt) return trace.setSpanContext(ROOT_CONTEXT, attempt);
    // Delivered by a later process than the run's: under the run's admission.
    const view = await options.runtime.loadRun(runId).catch(() => null);
    const stored = parseTraceParent(traceParentOf(view?.run.context));
    return stored ? trace.setSpanContext(ROOT_CONTEXT, stored) : ROOT_CONTEXT;
  }

  /** The delivery's state, attempts and platform receipt, read once it is over. */
  async function settle(span: Span, idOrKey: string): Promise<void> {
    const after = await options.outbox.show(idOrKey).catch(() => null);
    if (after) {
      span.setAttributes({
        "switchboard.outbox.id": after.id,
        "switchboard.delivery.state": after.state,
        "switchboard.delivery.attempts": after.attempts,
        "switchboard.delivery.receipt": after.receipt?.messageIds ?? [],
      });
      if (after.state === "failed" || after.state === "ambiguous")
        span.setStatus({ code: SpanStatusCode.ERROR, message: after.state });
    }
  }

  return {
    runs,
    deliveries: {
      streamed(runId, settled) {
        const startTime = Date.now();
        void settled.then(async () => {
          // A run that ended before its first preview made no stream record: its reply is a
          // message record, delivered (and spanned) by the worker.
          const record = await options.outbox.show(`${runId}:stream`).catch(() => null);
          if (!record) return;
          const parent = await deliveryParent(runId);
          const span = tracer.startSpan(
            "switchboard.delivery",
            {
              kind: SpanKind.PRODUCER,
              startTime,
              attributes: {
                "switchboard.outbox.kind": "stream",
                "switchboard.channel": record.channel,
                "switchboard.account": record.account,
                "switchboard.run.id": runId,
              },
            },
            parent,
          );
          await settle(span, record.id);
          span.end();
        });
      },
      async delivery(record: OutboxRecord, deliver) {
        const parent = await deliveryParent(record.runId);
        const span = tracer.startSpan(
          "switchboard.delivery",
          {
            kind: SpanKind.PRODUCER,
            attributes: {
              "switchboard.outbox.id": record.id,
              "switchboard.outbox.kind": record.kind,
              "switchboard.channel": record.channel,
              "switchboard.account": record.account,
              "switchboard.run.id": record.runId,
            },
          },
          parent,
        );
        try {
          await context.with(trace.setSpan(parent, span), deliver);
        } catch (error) {
          failed(span, error);
          throw error;
        } finally {
          await settle(span, record.id);
          span.end();
        }
      },
    },
    async ingress(message, handle) {
      const span = tracer.startSpan(
        "switchboard.ingress",
        {
          kind: SpanKind.SERVER,
          attributes: {
            "switchboard.channel": message.channel,
            "switchboard.account": message.account,
            // As the config names surfaces: `telegram:dm`.
            "switchboard.surface": `${message.channel}:${message.surface}`,
            ...(content && message.text ? { "switchboard.input.text": contentOf(message.text) } : {}),
          },
        },
        ROOT_CONTEXT,
      );
      try {
        const outcome = await context.with(trace.setSpan(ROOT_CONTEXT, span), handle);
        span.setAttribute("switchboard.ingress.outcome", outcome.kind);
        if (outcome.kind === "ignored") span.setAttribute("switchboard.ingress.reason", outcome.reason);
        if ((outcome.kind === "admitted" || outcome.kind === "duplicate") && outcome.runId)
          span.setAttribute("switchboard.run.id", outcome.runId);
        return outcome;
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  };
}

/**
 * The active context while its span is live (an inbound update's, a tool call's); otherwise none.
 * Async work a span started outlives it (a conversation's executor lane, a schedule's timer):
 * what such work admits later is not part of that span's trace.
 */
function liveContext(): Context {
  const active = context.active();
  return trace.getSpan(active)?.isRecording() ? active : ROOT_CONTEXT;
}

/**
 * How long the person took to decide (`switchboard.approval.wait_ms`) and a link to the trace of
 * the run that asked, both read from the store.
 */
async function approvalFacts(store: RuntimeStore, approvalId: string, span: Span): Promise<void> {
  try {
    const approval = await store.loadApproval(approvalId);
    if (!approval) return;
    if (approval.decidedAtMs !== null)
      span.setAttribute("switchboard.approval.wait_ms", approval.decidedAtMs - approval.createdAtMs);
    const asking = await store.loadRun(approval.runId);
    const stored = parseTraceParent(traceParentOf(asking?.run.context));
    if (stored)
      span.addLink({
        context: stored,
        attributes: { "switchboard.link": "approval_request", "switchboard.run.id": approval.runId },
      });
  } catch {
    // A span without these facts is still a span: the store's trouble is reported elsewhere.
  }
}

/** Channel, account and surface from a run's context (the gateway's RunContext). */
function originOf(runContext: unknown): Attributes {
  if (typeof runContext !== "object" || runContext === null) return {};
  const { channel, account, surface } = runContext as Record<string, unknown>;
  return {
    ...(typeof channel === "string" ? { "switchboard.channel": channel } : {}),
    ...(typeof account === "string" ? { "switchboard.account": account } : {}),
    ...(typeof surface === "string" ? { "switchboard.surface": `${String(channel)}:${surface}` } : {}),
  };
}

function numbers(values: Record<string, number | undefined>): Attributes {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => typeof v === "number"));
}

function contentOf(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "null");
  return text.length > MAX_CONTENT_CHARS ? `${text.slice(0, MAX_CONTENT_CHARS)}…` : text;
}

function failed(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : "error" });
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export function parseTraceParent(value: string | undefined): SpanContext | null {
  const match = value ? TRACEPARENT.exec(value) : null;
  if (!match) return null;
  const spanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  return isSpanContextValid(spanContext) ? spanContext : null;
}

export function toTraceParent(spanContext: SpanContext): string {
  return `00-${spanContext.traceId}-${spanContext.spanId}-${spanContext.traceFlags.toString(16).padStart(2, "0")}`;
}
