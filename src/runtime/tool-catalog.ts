import { asSchema, type ToolSet, tool, zodSchema } from "ai";
import { z } from "zod";
import type { MessagePart } from "./types.ts";

/*
 * The deferred tool catalog. When the schemas of every tool on offer exceed a byte budget, the
 * model gets `tool_search` and the pinned tools; the tools a search selects are offered from the
 * next step on. A selection is the search's result, stored in the run's history like any tool
 * result, so recovery (which reloads the history) restores it, and another run starts afresh.
 */

export const TOOL_SEARCH = "tool_search";
export const DEFAULT_SCHEMA_BUDGET_BYTES = 24 * 1024;
/** The most tools one search returns, and the most selected tools offered at once. */
export const MAX_SEARCH_RESULTS = 8;
export const MAX_SELECTED_TOOLS = 16;

export interface CatalogEntry {
  name: string;
  description: string;
  /** UTF-8 bytes of the tool's name, description and input JSON schema. */
  bytes: number;
}

/**
 * UTF-8 bytes of each input schema's JSON, by the schema object a tool was given. Tools are made
 * per run, but their schemas once per process (or per MCP connection): each is stringified once.
 */
const schemaBytes = new WeakMap<object, number>();

async function parametersBytes(inputSchema: ToolSet[string]["inputSchema"]): Promise<number> {
  const key = typeof inputSchema === "object" && inputSchema !== null ? inputSchema : undefined;
  const known = key && schemaBytes.get(key);
  if (known !== undefined) return known;
  const bytes = Buffer.byteLength(JSON.stringify(await asSchema(inputSchema).jsonSchema), "utf8");
  if (key) schemaBytes.set(key, bytes);
  return bytes;
}

/** Each tool's catalog entry, measured the way it travels to a provider (name, description, schema). */
export async function measureCatalog(tools: ToolSet): Promise<CatalogEntry[]> {
  return Promise.all(
    Object.entries(tools).map(async ([name, definition]) => {
      const description = typeof definition.description === "string" ? definition.description : "";
      // As JSON.stringify({ name, description, parameters }) would count it, the schema's part cached.
      const frame = JSON.stringify({ name, description, parameters: null });
      const bytes =
        Buffer.byteLength(frame, "utf8") - "null".length + (await parametersBytes(definition.inputSchema));
      return { name, description, bytes };
    }),
  );
}

/** The result a search stores: the selected names (the durable selection) and what they do. */
export interface SearchResult {
  selected: string[];
  tools: Array<{ name: string; description: string }>;
  note: string;
}

function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
}

/**
 * The catalog entries that best match `query`, best first: an exact name, then names containing
 * the query, then the count of query words in the name (weighted) and in the description. Ties
 * keep catalog order; entries matching no word are left out.
 */
export function rankCatalog(
  query: string,
  entries: readonly CatalogEntry[],
  max = MAX_SEARCH_RESULTS,
): CatalogEntry[] {
  const q = query.trim().toLowerCase();
  const terms = [...new Set(words(q))];
  const scored = entries.map((entry, index) => {
    const name = entry.name.toLowerCase();
    const nameWords = new Set(words(name));
    const descriptionWords = new Set(words(entry.description));
    let score = 0;
    if (name === q) score += 1000;
    else if (q.length > 0 && name.includes(q)) score += 100;
    for (const term of terms) {
      if (nameWords.has(term)) score += 10;
      else if (name.includes(term)) score += 5;
      if (descriptionWords.has(term)) score += 3;
    }
    return { entry, index, score };
  });
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, max)
    .map((s) => s.entry);
}

const searchResultSelection = z.object({ selected: z.array(z.string()) });

/**
 * The tools selected so far in this run: the names of its successful searches, the latest first,
 * at most MAX_SELECTED_TOOLS, and only names the catalog still has.
 */
export function selectedTools(parts: readonly MessagePart[], catalog: ReadonlySet<string>): string[] {
  const selected: string[] = [];
  for (const part of [...parts].reverse()) {
    if (part.type !== "tool-result" || part.toolName !== TOOL_SEARCH || part.isError) continue;
    const parsed = searchResultSelection.safeParse(part.output);
    if (!parsed.success) continue;
    for (const name of parsed.data.selected) {
      if (selected.length >= MAX_SELECTED_TOOLS) return selected;
      if (catalog.has(name) && !selected.includes(name)) selected.push(name);
    }
  }
  return selected;
}

export interface CatalogPlan {
  /** False: every tool fits the budget and is offered as is. */
  deferred: boolean;
  totalBytes: number;
  /** Names offered before any search (pinned and runtime tools). */
  pinned: string[];
  /** Names only a search reaches. */
  searchable: CatalogEntry[];
}

/** Whether the catalog is deferred, and how it splits, for a budget and a pin decision. */
export function planCatalog(
  entries: readonly CatalogEntry[],
  budgetBytes: number,
  isPinned: (name: string) => boolean,
): CatalogPlan {
  const totalBytes = entries.reduce((sum, e) => sum + e.bytes, 0);
  const deferred = totalBytes > budgetBytes;
  return {
    deferred,
    totalBytes,
    pinned: entries.filter((e) => !deferred || isPinned(e.name)).map((e) => e.name),
    searchable: deferred ? entries.filter((e) => !isPinned(e.name)) : [],
  };
}

/** The names offered in the next step: everything, or the pinned tools, tool_search and the selection. */
export function offeredNames(plan: CatalogPlan, parts: readonly MessagePart[]): string[] {
  if (!plan.deferred) return plan.pinned;
  const selected = selectedTools(parts, new Set(plan.searchable.map((e) => e.name)));
  return [...plan.pinned, TOOL_SEARCH, ...selected];
}

// Built once: a schema's JSON form is converted on first use and then reused by every run.
const searchInput = zodSchema(
  z.object({
    query: z.string().min(1).max(1024).describe("Keywords for the tool you need"),
  }),
);

/** The `tool_search` tool over the searchable part of a deferred catalog. */
export function createToolSearchTool(plan: CatalogPlan) {
  return tool({
    description: `Finds tools by what they do. ${plan.searchable.length} more tools exist than are shown; search with a few keywords (e.g. "create issue", or a tool's name) and the tools found can be called from your next step on.`,
    inputSchema: searchInput,
    execute: async ({ query }): Promise<SearchResult> => {
      const found = rankCatalog(query, plan.searchable);
      return {
        selected: found.map((e) => e.name),
        tools: found.map((e) => ({ name: e.name, description: e.description.slice(0, 300) })),
        note:
          found.length > 0
            ? "These tools are available from your next step on."
            : "No tool matches; try other keywords.",
      };
    },
  });
}
