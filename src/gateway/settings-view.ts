/**
 * The console's view of one conversation's settings (`GET /api/conversations/:id/settings`): the
 * bindings and surfaces matched against where its latest message came from.
 */
import type { OperatorService } from "../operator/types.ts";
import { readRunContext } from "../run-context.ts";
import { bindingFactsOf } from "./binding-facts.ts";
import { describeSettings, type ExplainedConversation } from "./config/explain.ts";
import {
  accountNamesInFile,
  type BindingFacts,
  type FileConfig,
  type GatewayConfig,
} from "./config/index.ts";

/** How many of its newest runs are searched for one a person's message started. */
export const RUNS_SEARCHED = 20;

/**
 * A conversation's binding facts, from the newest of `runs` (newest first) a message started (a
 * schedule's run knows less of where it is); null when no channel started any of them.
 */
export function conversationFactsOf(
  file: Pick<FileConfig, "accountNames">,
  runs: ReadonlyArray<{ context: unknown }>,
): BindingFacts | null {
  const contexts = runs.map((run) => readRunContext(run.context)).filter((c) => c !== null);
  const context = contexts.find((c) => c.origin === "user") ?? contexts[0];
  if (!context) return null;
  return bindingFactsOf(file, { ...context, user: context.principal.id });
}

/**
 * The explanation for a conversation, from its newest run a message started (a schedule's run
 * knows less of where it is); null when no channel started any of its runs.
 */
export function conversationSettingsReader(
  config: Pick<GatewayConfig, "file" | "agentDir">,
  runs: Pick<OperatorService["runs"], "list">,
): (conversationId: string) => Promise<ExplainedConversation | null> {
  return async (conversationId) => {
    const { items } = await runs.list({ conversationId, limit: RUNS_SEARCHED });
    const facts = conversationFactsOf(config.file, items);
    if (facts === null) return null;
    return describeSettings(config.file, facts, config.agentDir, accountNamesInFile(config.file));
  };
}
