/**
 * history_search and history_read: the agent searches past conversations of the person it is
 * talking to, then reads the exact messages around a match. The scope comes from the run (never
 * from the model): a reference outside it is answered exactly like one that does not exist.
 */
import { type ToolSet, tool, zodSchema } from "ai";
import { z } from "zod";
import { MAX_QUERY_CHARS, parseSearchQuery } from "./query.ts";
import type { SearchScope, SearchStore } from "./store.ts";

export const HISTORY_TOOL_NAMES = ["history_search", "history_read"] as const;
export const MAX_SEARCH_RESULTS = 20;
export const MAX_READ_AROUND = 10;

export interface HistoryToolsOptions {
  search: SearchStore;
  scope: SearchScope;
  /** The conversation the run belongs to, so results can say "this conversation". */
  conversationId: string;
  /** The calling run: its own messages are already in the prompt, so they are left out. */
  runId: string;
}

const searchInput = zodSchema(
  z.object({
    query: z
      .string()
      .max(MAX_QUERY_CHARS)
      .describe(
        'Words that must all appear; "a phrase" in quotes; word* for word starts. E.g. invoice march',
      ),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_SEARCH_RESULTS)
      .optional()
      .describe("How many matches (default 5)."),
  }),
);
const readInput = zodSchema(
  z.object({
    ref: z.string().min(1).max(100).describe("A match's ref from history_search."),
    before: z
      .number()
      .int()
      .min(0)
      .max(MAX_READ_AROUND)
      .optional()
      .describe("Messages before it (default 3)."),
    after: z.number().int().min(0).max(MAX_READ_AROUND).optional().describe("Messages after it (default 3)."),
  }),
);

export function createHistoryTools(options: HistoryToolsOptions): ToolSet {
  const { search, scope, conversationId } = options;
  return {
    history_search: tool({
      description:
        "Search this user's past conversations with you (what they told you, what you answered). Returns matches with a ref for history_read.",
      inputSchema: searchInput,
      execute: async ({ query, limit }) => {
        const parsed = parseSearchQuery(query);
        if (!parsed.ok) return { ok: false, error: parsed.error };
        const wanted = limit ?? 5;
        // The run's own input and answer so far match their own words; a few more cover them.
        const hits = (await search.searchHistory({ query: parsed.query, scope, limit: wanted + 2 }))
          .filter((hit) => hit.runId !== options.runId)
          .slice(0, wanted);
        return {
          ok: true,
          results: hits.map((hit) => ({
            ref: hit.ref,
            conversation: hit.conversationId === conversationId ? "this conversation" : hit.conversationId,
            run: hit.runId,
            at: new Date(hit.atMs).toISOString(),
            role: hit.role,
            snippet: hit.snippet,
          })),
        };
      },
    }),
    history_read: tool({
      description: "Read the exact messages around a history_search match, in order.",
      inputSchema: readInput,
      execute: async ({ ref, before, after }) => {
        const window = await search.readHistory({ ref, scope, before: before ?? 3, after: after ?? 3 });
        if (!window) {
          return {
            ok: false,
            error: `No message ${ref} was found.`,
            hint: "Use a ref exactly as history_search returned it.",
          };
        }
        return {
          ok: true,
          conversation:
            window.conversationId === conversationId ? "this conversation" : window.conversationId,
          messages: window.messages.map((m) => ({
            ref: m.ref,
            role: m.role,
            at: new Date(m.atMs).toISOString(),
            text: m.text,
          })),
        };
      },
    }),
  };
}
