import { chunkAtoms } from "./chunk.ts";
import { discordDialect } from "./discord.ts";
import { layoutDocument } from "./layout.ts";
import { lexMarkdown, parseMarkdown } from "./parse.ts";

/**
 * The web chat's dialect is CommonMark + GFM itself: the page renders it with marked (and a
 * sanitiser), so the model's Markdown goes out as written, with nothing escaped. A long answer is
 * cut between top-level blocks (paragraphs, lists, tables, code blocks), so every message is valid
 * Markdown on its own. A single block longer than a message goes through the shared pipeline,
 * whose Discord output is CommonMark too (its backslash escapes render as the plain characters).
 */
export function renderWeb(markdown: string, maxChars: number): string[] {
  const chunks: string[] = [];
  let current = "";
  const flush = () => {
    // Leading blank lines and trailing whitespace only: indentation can be meaningful.
    const text = current.replace(/^(?:[ \t]*\n)+/, "").trimEnd();
    if (text !== "") chunks.push(text);
    current = "";
  };
  for (const token of lexMarkdown(markdown)) {
    if (current.length + token.raw.length <= maxChars) {
      current += token.raw;
      continue;
    }
    flush();
    if (token.raw.length <= maxChars) current = token.raw;
    else chunks.push(...chunkAtoms(layoutDocument(parseMarkdown(token.raw), discordDialect), maxChars));
  }
  flush();
  return chunks;
}
