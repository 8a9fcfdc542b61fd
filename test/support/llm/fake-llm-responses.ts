import { splitIntoDeltas } from "../../../src/models/language-model-v4.ts";
import type { FakeLlmRequest, FakeReply, FakeUsage } from "./fake-llm-rules.ts";

/*
 * OpenAI chat-completions wire format, as OpenRouter and OpenAI-compatible servers send it:
 * one JSON object per SSE `data:` line, a final usage chunk with empty choices, then [DONE].
 */

type ContentReply = Extract<FakeReply, { kind: "text" | "tool-call" }>;

interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
  completion_tokens_details?: { reasoning_tokens: number };
  cost?: number;
}

/** The planned stream: content chunks (each one SSE event) and how the stream ends. */
export interface ChunkPlan {
  chunks: Record<string, unknown>[];
  /** The finish_reason chunk, sent unless the reply drops the connection first. */
  finish: Record<string, unknown>;
  usage: Record<string, unknown> | null;
  /** Cut the connection after this many chunks of `chunks`; null = finish normally. */
  dropAfter: number | null;
}

const DEFAULT_TEXT_CHUNKS = 4;
const DEFAULT_ARGUMENT_CHUNKS = 3;

function approximateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function toWireUsage(request: FakeLlmRequest, replyText: string, usage: FakeUsage | undefined): WireUsage {
  const promptText = request.messages.map((message) => JSON.stringify(message.content ?? "")).join("");
  const prompt = usage?.promptTokens ?? approximateTokens(promptText);
  const completion = usage?.completionTokens ?? approximateTokens(replyText);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(usage?.cachedTokens !== undefined && {
      prompt_tokens_details: { cached_tokens: usage.cachedTokens },
    }),
    ...(usage?.reasoningTokens !== undefined && {
      completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    }),
    ...(usage?.costUsd !== undefined && { cost: usage.costUsd }),
  };
}

function toolCallId(request: FakeLlmRequest): string {
  return `call_${request.index}_0`;
}

function replyText(reply: ContentReply): string {
  return reply.kind === "text" ? reply.text : (reply.text ?? "");
}

/** Whether the client asked for usage in the stream (OpenAI's stream_options or OpenRouter's usage.include). */
function wantsStreamUsage(body: Record<string, unknown>): boolean {
  const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
  const usage = body.usage as { include?: unknown } | undefined;
  return streamOptions?.include_usage === true || usage?.include === true;
}

export function planChunks(request: FakeLlmRequest, reply: ContentReply): ChunkPlan {
  const base = {
    id: `chatcmpl-${request.index}`,
    object: "chat.completion.chunk",
    created: Math.floor(request.receivedAtMs / 1000),
    model: request.model,
  };
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });

  const text = replyText(reply);
  const chunks = [chunk({ role: "assistant", content: "" })];
  const textChunks = reply.kind === "text" ? (reply.chunks ?? DEFAULT_TEXT_CHUNKS) : DEFAULT_TEXT_CHUNKS;
  for (const delta of splitIntoDeltas(text, textChunks)) chunks.push(chunk({ content: delta }));

  let finishReason = "stop";
  if (reply.kind === "tool-call") {
    finishReason = "tool_calls";
    const argumentsJson = JSON.stringify(reply.input ?? {});
    const pieces = reply.argumentChunks ?? DEFAULT_ARGUMENT_CHUNKS;
    const size = Math.ceil(argumentsJson.length / pieces);
    const id = toolCallId(request);
    chunks.push(
      chunk({
        tool_calls: [{ index: 0, id, type: "function", function: { name: reply.toolName, arguments: "" } }],
      }),
    );
    for (let start = 0; start < argumentsJson.length; start += size) {
      const piece = argumentsJson.slice(start, start + size);
      chunks.push(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
    }
  }

  const usage =
    reply.usage === false || !wantsStreamUsage(request.body)
      ? null
      : { ...base, choices: [], usage: toWireUsage(request, text, reply.usage) };
  const dropAfter =
    reply.kind === "text" && reply.dropAfterChunks !== undefined ? reply.dropAfterChunks : null;
  // +1: the role chunk counts as sent before any content delta.
  return {
    chunks,
    finish: chunk({}, finishReason),
    usage,
    dropAfter: dropAfter === null ? null : dropAfter + 1,
  };
}

export function completionJson(request: FakeLlmRequest, reply: ContentReply): Record<string, unknown> {
  const text = replyText(reply);
  const toolCalls =
    reply.kind === "tool-call"
      ? [
          {
            id: toolCallId(request),
            type: "function",
            function: { name: reply.toolName, arguments: JSON.stringify(reply.input ?? {}) },
          },
        ]
      : undefined;
  return {
    id: `chatcmpl-${request.index}`,
    object: "chat.completion",
    created: Math.floor(request.receivedAtMs / 1000),
    model: request.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: text === "" ? null : text, tool_calls: toolCalls },
        finish_reason: reply.kind === "tool-call" ? "tool_calls" : "stop",
      },
    ],
    ...(reply.usage !== false && { usage: toWireUsage(request, text, reply.usage) }),
  };
}

export function errorResponse(reply: Extract<FakeReply, { kind: "http-error" }>): Response {
  const message = reply.message ?? `fake LLM server: scripted HTTP ${reply.status}`;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (reply.retryAfterSeconds !== undefined) headers["retry-after"] = String(reply.retryAfterSeconds);
  return new Response(JSON.stringify({ error: { message, type: "fake_error", code: reply.status } }), {
    status: reply.status,
    headers,
  });
}
