import { APICallError } from "ai";
import {
  type LanguageModelV4,
  type LanguageModelV4CallOptions,
  type LanguageModelV4GenerateResult,
  type LanguageModelV4Prompt,
  type LanguageModelV4StreamPart,
  type LanguageModelV4Usage,
  lastUserText,
  splitIntoDeltas,
  unavailableUsage,
} from "../../../src/models/language-model-v4.ts";
import { type Clock, systemClock } from "../../../src/util/clock.ts";

/** Token counts and cost a turn reports; any field left out is reported as unavailable. */
export interface ScriptedUsage {
  inputTokens?: number;
  outputTokens?: number;
  reasoningTokens?: number;
  cachedInputTokens?: number;
  costUsd?: number;
}

interface Streamed {
  /** Number of deltas the text is split into (whole words). Default 3. */
  deltas?: number;
  /** Pause before each delta, in milliseconds. Default 0. */
  delayMs?: number;
}

/** What the model does for one call. */
export type Turn =
  | ({ type: "text"; text: string; usage?: ScriptedUsage | "unavailable" } & Streamed)
  | ({
      type: "tool-call";
      toolName: string;
      input: unknown;
      /** Default `call_<callIndex>`. */
      toolCallId?: string;
      /** Text streamed before the call. */
      text?: string;
      usage?: ScriptedUsage | "unavailable";
    } & Streamed)
  | ({
      type: "error";
      message?: string;
      /**
       * HTTP status of the APICallError; decides `isRetryable` the AI SDK way (408, 409, 429, 5xx).
       * Default 500.
       */
      status?: number;
      /**
       * Streamed before failing. Empty (the default): the call itself rejects, like an HTTP error.
       * Otherwise the stream errors after these deltas, like a dropped connection.
       */
      text?: string;
    } & Streamed)
  /** Streams `text` (if any), then waits until the call is aborted. */
  | ({ type: "hang"; text?: string } & Streamed);

export interface ScriptedCall {
  messages: LanguageModelV4Prompt;
  /** 0-based number of this call on this model. */
  callIndex: number;
}

/** A queue of turns (one per call, in order) or a function choosing each call's turn. */
export type Script = Turn[] | ((call: ScriptedCall) => Turn | Promise<Turn>);

/** One call as the model received it. */
export interface ScriptedRequest {
  callIndex: number;
  prompt: LanguageModelV4Prompt;
  /** Every text part of the prompt (system, user, assistant, tool results) joined by newlines. */
  promptText: string;
  lastUserText: string;
  toolNames: string[];
  /** Set when the call's abort signal fired before the call finished. */
  aborted: boolean;
}

export interface ScriptedModel extends LanguageModelV4 {
  /** Every call so far, in order. */
  readonly requests: readonly ScriptedRequest[];
  /** Appends turns to a queue script. */
  push(...turns: Turn[]): void;
  /** Resolves once the model has received at least `count` calls. */
  whenCalled(count: number): Promise<ScriptedRequest>;
}

export interface ScriptedModelOptions {
  modelId?: string;
  /** Paces deltas. Default: the system clock. */
  clock?: Clock;
  /**
   * Usage reported by turns that set none. Default: token counts estimated from the text
   * (4 characters a token) and no cost.
   */
  usage?: ScriptedUsage | "unavailable";
}

const DEFAULT_DELTAS = 3;

/**
 * An in-process LanguageModel (spec v4) for tests whose answers follow a script. It records
 * every call's prompt and stops promptly when the call's abort signal fires: a pending call
 * rejects and a running stream errors with the signal's reason.
 */
export function createScriptedModel(script: Script, options: ScriptedModelOptions = {}): ScriptedModel {
  const clock = options.clock ?? systemClock;
  const queue = Array.isArray(script) ? [...script] : undefined;
  const requests: ScriptedRequest[] = [];
  const waiters: Array<{ count: number; resolve: (request: ScriptedRequest) => void }> = [];

  const record = (call: LanguageModelV4CallOptions): ScriptedRequest => {
    const request: ScriptedRequest = {
      callIndex: requests.length,
      prompt: structuredClone(call.prompt),
      promptText: promptText(call.prompt),
      lastUserText: lastUserText(call.prompt),
      toolNames: (call.tools ?? []).map((tool) => tool.name),
      aborted: false,
    };
    requests.push(request);
    for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(request);
    }
    return request;
  };

  const turnFor = async (request: ScriptedRequest): Promise<Turn> => {
    if (queue === undefined) {
      return (script as Exclude<Script, Turn[]>)({ messages: request.prompt, callIndex: request.callIndex });
    }
    const turn = queue.shift();
    if (turn === undefined) {
      throw new Error(
        `scripted model: no turn left for call ${request.callIndex + 1} ` +
          `(last user text: "${request.lastUserText.slice(0, 80)}"). Add a turn to the script or push() one.`,
      );
    }
    return turn;
  };

  const doStream = async (call: LanguageModelV4CallOptions) => {
    const request = record(call);
    const signal = call.abortSignal;
    let settled = false;
    const markAborted = () => {
      if (!settled) request.aborted = true;
    };
    signal?.addEventListener("abort", markAborted, { once: true });
    signal?.throwIfAborted();
    const turn = await turnFor(request);
    if (turn.type === "error" && !turn.text) throw scriptedError(turn);
    const parts = planParts(turn, request, options.usage);
    let next = 0;

    const delayMs = turn.delayMs ?? 0;

    const stream = new ReadableStream<LanguageModelV4StreamPart>({
      async pull(controller) {
        const part = parts[next++];
        if (part === undefined) {
          settled = true;
          return controller.close();
        }
        try {
          if (part.type === "text-delta" && delayMs > 0) await clock.sleep(delayMs, signal);
          if (part.type === "hang") await untilAborted(signal);
          signal?.throwIfAborted();
        } catch (reason) {
          return controller.error(reason);
        }
        if (part.type === "fail" && turn.type === "error") {
          settled = true;
          return controller.error(scriptedError(turn));
        }
        if (part.type !== "hang" && part.type !== "fail") controller.enqueue(part);
      },
    });
    return { stream };
  };

  return {
    specificationVersion: "v4",
    provider: "scripted",
    modelId: options.modelId ?? "scripted",
    supportedUrls: {},
    requests,
    doStream,
    doGenerate: async (call) => collect((await doStream(call)).stream),
    push(...turns) {
      if (queue === undefined) throw new Error("scripted model: push() needs a queue script, not a function");
      queue.push(...turns);
    },
    whenCalled(count) {
      const reached = requests[count - 1];
      if (reached !== undefined) return Promise.resolve(reached);
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
  };
}

type PlannedPart = LanguageModelV4StreamPart | { type: "hang" } | { type: "fail" };

function planParts(
  turn: Turn,
  request: ScriptedRequest,
  defaultUsage: ScriptedModelOptions["usage"],
): PlannedPart[] {
  const textId = `text-${request.callIndex}`;
  const text = turn.text ?? "";
  const parts: PlannedPart[] = [{ type: "stream-start", warnings: [] }];
  if (text !== "") {
    parts.push({ type: "text-start", id: textId });
    for (const delta of splitIntoDeltas(text, turn.deltas ?? DEFAULT_DELTAS)) {
      parts.push({ type: "text-delta", id: textId, delta });
    }
  }
  if (turn.type === "hang") return [...parts, { type: "hang" }];
  if (turn.type === "error") return [...parts, { type: "fail" }];
  if (text !== "") parts.push({ type: "text-end", id: textId });

  let outputText = text;
  if (turn.type === "tool-call") {
    const toolCallId = turn.toolCallId ?? `call_${request.callIndex}`;
    const input = JSON.stringify(turn.input ?? {});
    outputText += input;
    parts.push(
      { type: "tool-input-start", id: toolCallId, toolName: turn.toolName },
      { type: "tool-input-delta", id: toolCallId, delta: input },
      { type: "tool-input-end", id: toolCallId },
      { type: "tool-call", toolCallId, toolName: turn.toolName, input },
    );
  }
  const usage = turn.usage ?? defaultUsage ?? estimatedUsage(request.promptText, outputText);
  parts.push({
    type: "finish",
    finishReason:
      turn.type === "tool-call"
        ? { unified: "tool-calls", raw: "tool_calls" }
        : { unified: "stop", raw: "stop" },
    usage: toModelUsage(usage),
  });
  return parts;
}

function estimatedUsage(prompt: string, output: string): ScriptedUsage {
  return { inputTokens: Math.ceil(prompt.length / 4), outputTokens: Math.ceil(output.length / 4) };
}

/** Reports usage the way the OpenAI-style providers do, raw object included, so `toUsage` reads it the same way. */
function toModelUsage(usage: ScriptedUsage | "unavailable"): LanguageModelV4Usage {
  if (usage === "unavailable") return unavailableUsage();
  const raw: Record<string, number | Record<string, number>> = {};
  if (usage.inputTokens !== undefined) raw.prompt_tokens = usage.inputTokens;
  if (usage.outputTokens !== undefined) raw.completion_tokens = usage.outputTokens;
  if (usage.cachedInputTokens !== undefined)
    raw.prompt_tokens_details = { cached_tokens: usage.cachedInputTokens };
  if (usage.reasoningTokens !== undefined) {
    raw.completion_tokens_details = { reasoning_tokens: usage.reasoningTokens };
  }
  if (usage.costUsd !== undefined) raw.cost = usage.costUsd;
  const reasoning = usage.reasoningTokens;
  return {
    inputTokens: {
      total: usage.inputTokens,
      noCache:
        usage.inputTokens === undefined ? undefined : usage.inputTokens - (usage.cachedInputTokens ?? 0),
      cacheRead: usage.cachedInputTokens,
      cacheWrite: undefined,
    },
    outputTokens: {
      total: usage.outputTokens,
      text: usage.outputTokens === undefined ? undefined : usage.outputTokens - (reasoning ?? 0),
      reasoning,
    },
    raw,
  };
}

function scriptedError(turn: Extract<Turn, { type: "error" }>): APICallError {
  const status = turn.status ?? 500;
  return new APICallError({
    message: turn.message ?? `scripted model: scripted HTTP ${status}`,
    url: "scripted://model",
    requestBodyValues: {},
    statusCode: status,
  });
}

function promptText(prompt: LanguageModelV4Prompt): string {
  const texts: string[] = [];
  for (const message of prompt) {
    if (message.role === "system") {
      texts.push(message.content);
      continue;
    }
    for (const part of message.content) {
      if (part.type === "text" || part.type === "reasoning") texts.push(part.text);
      if (part.type === "tool-result") texts.push(JSON.stringify(part.output));
    }
  }
  return texts.join("\n");
}

function untilAborted(signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return new Promise(() => {});
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

async function collect(
  stream: ReadableStream<LanguageModelV4StreamPart>,
): Promise<LanguageModelV4GenerateResult> {
  const content: LanguageModelV4GenerateResult["content"] = [];
  let text = "";
  let finish: Extract<LanguageModelV4StreamPart, { type: "finish" }> | undefined;
  const reader = stream.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    const part = read.value;
    if (part.type === "text-delta") text += part.delta;
    if (part.type === "tool-call") content.push(part);
    if (part.type === "finish") finish = part;
  }
  if (finish === undefined) throw new Error("scripted model: stream ended without a finish part");
  if (text !== "") content.unshift({ type: "text", text });
  return { content, finishReason: finish.finishReason, usage: finish.usage, warnings: [] };
}
