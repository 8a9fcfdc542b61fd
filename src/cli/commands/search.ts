import { OPERATOR_LIMITS } from "../../operator/limits.ts";
import type { SearchHit } from "../../search/store.ts";
import { isoTime, preview, table } from "../format.ts";
import { type CommandSpec, HELP_OPTION, JSON_OPTION, SOURCE_OPTIONS } from "../spec.ts";
import { print, withOperator } from "./shared.ts";

function rows(hits: readonly SearchHit[]): string {
  if (hits.length === 0) return "No matches.\n";
  return table(
    ["TIME", "CONVERSATION", "ROLE", "MESSAGE", "SNIPPET"],
    hits.map((hit) => [isoTime(hit.atMs), hit.conversationId, hit.role, hit.ref, preview(hit.snippet, 80)]),
  );
}

export const SEARCH_COMMANDS: CommandSpec[] = [
  {
    path: ["search"],
    synopsis: 'search "QUERY" [--conversation C] [--limit N] [--json]',
    summary: "Search the messages of every conversation (or one), best match first.",
    details:
      'Every word must appear; "a phrase" in quotes matches words in order; word* matches word starts. ' +
      "Punctuation only separates words. Show a match in context with `switchboard conversations show C`.",
    args: [{ name: "QUERY", description: 'The words to find, e.g. "invoice march".' }],
    options: {
      conversation: { type: "string", valueName: "C", description: "Only this conversation (conv_…)." },
      limit: {
        type: "string",
        valueName: "N",
        description: `At most N matches (1-${OPERATOR_LIMITS.search.max}). Default ${OPERATOR_LIMITS.search.default}.`,
      },
      ...JSON_OPTION,
      ...SOURCE_OPTIONS,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const query = command.arg(0);
      const limit = command.integer("limit", { min: 1, max: OPERATOR_LIMITS.search.max });
      const conversationId = command.string("conversation");
      const hits = await withOperator(command, io, (service) =>
        service.search(query, { ...(conversationId ? { conversationId } : {}), ...(limit ? { limit } : {}) }),
      );
      print(command, io, hits, rows);
    },
  },
];
