import type { LanguageModel } from "ai";

/*
 * The AI SDK's language model specification v4, the version `ai` 7 calls natively. Derived from
 * `ai`'s public `LanguageModel` type so that switchboard needs no direct dependency on
 * @ai-sdk/provider (it would have to be kept in lockstep with the one `ai` bundles).
 */

export type LanguageModelV4 = Extract<LanguageModel, { specificationVersion: "v4" }>;
export type LanguageModelV4CallOptions = Parameters<LanguageModelV4["doStream"]>[0];
export type LanguageModelV4Prompt = LanguageModelV4CallOptions["prompt"];
export type LanguageModelV4StreamResult = Awaited<ReturnType<LanguageModelV4["doStream"]>>;
export type LanguageModelV4StreamPart =
  LanguageModelV4StreamResult["stream"] extends ReadableStream<infer Part> ? Part : never;
export type LanguageModelV4GenerateResult = Awaited<ReturnType<LanguageModelV4["doGenerate"]>>;
export type LanguageModelV4Usage = LanguageModelV4GenerateResult["usage"];
export type LanguageModelV4FinishReason = LanguageModelV4GenerateResult["finishReason"];

/** Usage as a provider reports it when it reports nothing: every count unknown. */
export function unavailableUsage(): LanguageModelV4Usage {
  return {
    inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: undefined, text: undefined, reasoning: undefined },
  };
}

/** The text of the prompt's last user message (its text parts joined), or "" when there is none. */
export function lastUserText(prompt: LanguageModelV4Prompt): string {
  for (let index = prompt.length - 1; index >= 0; index--) {
    const message = prompt[index];
    if (message?.role !== "user") continue;
    return message.content
      .flatMap((part) => (part.type === "text" ? [part.text] : []))
      .join("\n")
      .trim();
  }
  return "";
}

/**
 * Splits `text` into `count` consecutive pieces of whole words (whitespace stays attached to the
 * word before it), so joining the pieces gives `text` back exactly. Fewer pieces when the text
 * has fewer words; one empty piece never appears.
 */
export function splitIntoDeltas(text: string, count: number): string[] {
  const words = text.match(/\S+\s*|\s+/g) ?? [];
  if (words.length === 0) return [];
  const pieces = Math.max(1, Math.min(Math.floor(count), words.length));
  const deltas: string[] = [];
  for (let piece = 0; piece < pieces; piece++) {
    const from = Math.floor((piece * words.length) / pieces);
    const to = Math.floor(((piece + 1) * words.length) / pieces);
    deltas.push(words.slice(from, to).join(""));
  }
  return deltas;
}
