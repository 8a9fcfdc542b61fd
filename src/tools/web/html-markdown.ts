import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";

const turndown = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced" });
turndown.remove(["script", "style", "noscript"]);

/** Readability's article of an HTML page (or its body when it finds none) as Markdown, and its title. */
export function htmlToMarkdown(body: string): { title: string | null; markdown: string } {
  const { document } = parseHTML(body);
  const article = new Readability(document as unknown as Document).parse();
  const html = article?.content ?? document.body?.innerHTML ?? body;
  return { title: article?.title || document.title || null, markdown: turndown.turndown(html).trim() };
}
