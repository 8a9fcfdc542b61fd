import { type Clock, systemClock } from "../util/clock.ts";
import {
  type LanguageModelV4,
  type LanguageModelV4CallOptions,
  type LanguageModelV4StreamPart,
  lastUserText,
  splitIntoDeltas,
  unavailableUsage,
} from "./language-model-v4.ts";

export const OFFLINE_MODEL_ID = "offline";
const QUOTED_INPUT_MAX_CHARS = 200;
const WORDS_PER_DELTA = 4;
const TEXT_ID = "offline-text";

export interface OfflineModelOptions {
  /** Sleeps between deltas. Default: the system clock. */
  clock?: Clock;
  /** Pause before each delta, in milliseconds. Default 0 (deltas still arrive one by one). */
  deltaDelayMs?: number;
}

/**
 * The answer the offline model gives: it says plainly that no model is configured, quotes the
 * user's last text (at most 200 characters) and names the setting that connects a real model.
 */
export function offlineReply(userText: string): string {
  const quoted =
    userText.length > QUOTED_INPUT_MAX_CHARS
      ? `${userText.slice(0, QUOTED_INPUT_MAX_CHARS).trimEnd()}…`
      : userText;
  const echo = quoted === "" ? "You sent no text." : `You said: "${quoted}".`;
  return (
    "I'm running in offline mode: no model is configured, so I can't really answer. " +
    `${echo} Set OPENROUTER_API_KEY (or SWITCHBOARD_MODEL) to connect a real model.`
  );
}

/**
 * A built-in deterministic language model used when no real model is configured. It streams
 * `offlineReply` in word groups, never calls tools, reports usage as unavailable and stops
 * (rejecting or erroring the stream with the signal's reason) as soon as `abortSignal` fires.
 */
export function createOfflineModel(options: OfflineModelOptions = {}): LanguageModelV4 {
  const clock = options.clock ?? systemClock;
  const deltaDelayMs = options.deltaDelayMs ?? 0;

  const replyFor = (call: LanguageModelV4CallOptions) => offlineReply(lastUserText(call.prompt));

  return {
    specificationVersion: "v4",
    provider: "switchboard",
    modelId: OFFLINE_MODEL_ID,
    supportedUrls: {},

    async doGenerate(call) {
      call.abortSignal?.throwIfAborted();
      return {
        content: [{ type: "text", text: replyFor(call) }],
        finishReason: { unified: "stop", raw: undefined },
        usage: unavailableUsage(),
        warnings: [],
        response: { modelId: OFFLINE_MODEL_ID },
      };
    },

    async doStream(call) {
      const signal = call.abortSignal;
      signal?.throwIfAborted();
      const text = replyFor(call);
      const deltas = splitIntoDeltas(text, Math.ceil(text.split(/\s+/).length / WORDS_PER_DELTA));
      const parts: LanguageModelV4StreamPart[] = [
        { type: "stream-start", warnings: [] },
        { type: "response-metadata", modelId: OFFLINE_MODEL_ID },
        { type: "text-start", id: TEXT_ID },
        ...deltas.map((delta): LanguageModelV4StreamPart => ({ type: "text-delta", id: TEXT_ID, delta })),
        { type: "text-end", id: TEXT_ID },
        { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage: unavailableUsage() },
      ];
      let next = 0;

      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        async pull(controller) {
          const part = parts[next++];
          if (part === undefined) return controller.close();
          try {
            if (part.type === "text-delta" && deltaDelayMs > 0) await clock.sleep(deltaDelayMs, signal);
            signal?.throwIfAborted();
          } catch (reason) {
            return controller.error(reason);
          }
          controller.enqueue(part);
        },
      });
      return { stream };
    },
  };
}
