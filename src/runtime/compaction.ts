import { generateText, type ModelMessage } from "ai";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { projectTurn } from "./project.ts";
import { type ModelEntry, SDK_TELEMETRY_OFF } from "./step.ts";
import type { RuntimeStore } from "./store.ts";

/** Writes the new summary from the previous one and the turns it now covers. */
export type Summarizer = (input: {
  previousSummary: string | null;
  turns: ModelMessage[];
  signal: AbortSignal;
}) => Promise<string>;

export interface CompactionPolicy {
  /** Compact once more than this many finished turns follow the summary. */
  afterTurns: number;
  /** Newest turns always kept verbatim. */
  keepTurns: number;
  summarize: Summarizer;
}

/** The default summarizer: one call to the first model of the chain. */
export function modelSummarizer(model: ModelEntry): Summarizer {
  return async ({ previousSummary, turns, signal }) => {
    const result = await generateText({
      model: model.model,
      abortSignal: signal,
      maxRetries: 1,
      telemetry: SDK_TELEMETRY_OFF,
      instructions:
        "Summarise the conversation so far for your own later reference: facts, decisions, open questions, " +
        "names and numbers the user gave. Plain text, at most 300 words. Do not address the user.",
      messages: [
        ...(previousSummary
          ? [{ role: "user" as const, content: `Earlier summary:\n${previousSummary}` }]
          : []),
        ...turns,
        { role: "user" as const, content: "Write the summary now." },
      ],
    });
    return result.text.trim();
  };
}

/**
 * Summarising compaction: folds the oldest turns after the current summary into a new summary,
 * saved compare-and-set on the summary's version, so two compactions never both apply and a
 * stale one changes nothing. The turns themselves stay in the store for operators.
 */
export async function compactConversation(options: {
  store: RuntimeStore;
  conversationId: string;
  policy: CompactionPolicy;
  clock: Clock;
  logger: Logger;
  signal: AbortSignal;
}): Promise<"compacted" | "not_needed" | "conflict"> {
  const { store, conversationId, policy } = options;
  const candidates = await store.loadCompactionCandidates(conversationId, {
    keepTurns: policy.keepTurns,
    maxTurns: 200,
    minPending: policy.afterTurns - policy.keepTurns,
  });
  // No turns: none pending, or not yet more than the policy lets pile up.
  if (candidates.turns.length === 0) return "not_needed";
  const text = await policy.summarize({
    previousSummary: candidates.summary?.text ?? null,
    turns: candidates.turns.flatMap((t) => projectTurn(t.messages)),
    signal: options.signal,
  });
  if (text === "") return "not_needed";
  const saved = await store.saveSummary({
    conversationId,
    text,
    throughFinishSeq: candidates.turns.at(-1)!.finishSeq,
    expectedVersion: candidates.summary?.version ?? 0,
    nowMs: options.clock.now(),
  });
  options.logger.info("runtime.compacted", {
    conversationId,
    turns: candidates.turns.length,
    outcome: saved.outcome,
  });
  return saved.outcome === "saved" ? "compacted" : "conflict";
}
