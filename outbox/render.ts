import type { MarkupDialect } from "../channels/types.ts";
import { isPlatformRejection } from "../src/errors.ts";
import { renderMarkup, renderPlain } from "./format/index.ts";
import type { RenderedText } from "./types.ts";

/** Markdown → chunks in a channel's markup. Injectable so the worker does not depend on one renderer. */
export interface Renderer {
  render(markdown: string, markup: MarkupDialect, format: "rich" | "plain", maxChars: number): RenderedText;
}

export const formatRenderer: Renderer = {
  render(markdown, markup, format, maxChars) {
    const result =
      format === "rich" ? renderMarkup(markdown, markup, { maxChars }) : renderPlain(markdown, { maxChars });
    // Whitespace-only chunks cannot be sent; an empty answer renders to no chunks at all.
    return { format: result.format, chunks: result.chunks.filter((chunk) => chunk.trim() !== "") };
  },
};

/** The platform refused the rich markup itself (so the same text as plain would go through). */
export function isFormattingRejection(error: unknown): boolean {
  return isPlatformRejection(error, "markup");
}

/** An edit to the text the message already shows. */
export function isNotModified(error: unknown): boolean {
  return isPlatformRejection(error, "unchanged");
}
