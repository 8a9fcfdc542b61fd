import { tool } from "ai";
import { z } from "zod";
import { webFetch } from "./fetch.ts";

export const WEB_FETCH = "web_fetch";

/** The `web_fetch` tool: a page's readable part as Markdown. Read-only, so safe to run again. */
export function createWebFetchTool(options: { allowPrivate: boolean }) {
  return {
    [WEB_FETCH]: tool({
      description:
        "Fetches a web page (http or https) and returns its readable text as Markdown, at most about 20,000 characters.",
      inputSchema: z.object({
        url: z.string().min(1).max(4096).describe("The full URL, e.g. https://example.com/page"),
      }),
      execute: async ({ url }) => {
        const page = await webFetch(url, { allowPrivate: options.allowPrivate });
        const title = page.title ? `# ${page.title}\n\n` : "";
        return `${title}Source: ${page.url}\n\n${page.markdown}`;
      },
    }),
  };
}
