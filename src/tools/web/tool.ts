import { tool, zodSchema } from "ai";
import { z } from "zod";
import { webFetch } from "./fetch.ts";
import { type SearchBackend, webSearch } from "./search.ts";

export const WEB_FETCH = "web_fetch";
export const WEB_SEARCH = "web_search";

// Built once: a schema's JSON form is converted on first use and then reused by every run.
const fetchInput = zodSchema(
  z.object({
    url: z.string().min(1).max(4096).describe("The full URL, e.g. https://example.com/page"),
  }),
);
const searchInput = zodSchema(
  z.object({
    query: z.string().min(1).max(400).describe("What to search for"),
  }),
);

/** The `web_fetch` tool: a page's readable part as Markdown. Read-only, so safe to run again. */
export function createWebFetchTool(options: { allowPrivate: boolean }) {
  return {
    [WEB_FETCH]: tool({
      description:
        "Fetches a web page (http or https) and returns its readable text as Markdown, at most about 20,000 characters.",
      inputSchema: fetchInput,
      execute: async ({ url }, { abortSignal }) => {
        const page = await webFetch(url, {
          allowPrivate: options.allowPrivate,
          ...(abortSignal ? { signal: abortSignal } : {}),
        });
        const title = page.title ? `# ${page.title}\n\n` : "";
        return `${title}Source: ${page.url}\n\n${page.markdown}`;
      },
    }),
  };
}

/** The `web_search` tool over the configured backend: title, url and snippet per result. Read-only. */
export function createWebSearchTool(backend: SearchBackend) {
  return {
    [WEB_SEARCH]: tool({
      description:
        "Searches the web and returns up to 10 results (title, url, snippet). Use web_fetch to read a result.",
      inputSchema: searchInput,
      execute: async ({ query }, { abortSignal }) => {
        const results = await webSearch(backend, query, abortSignal ? { signal: abortSignal } : {});
        return results.length === 0 ? { results, note: "no results; try other words" } : { results };
      },
    }),
  };
}
