import type { ChannelName } from "../channels/types.ts";
import { isPlatformRejection } from "../src/errors.ts";
import { type FormatPlatform, renderForPlatform, renderPlain } from "./format/index.ts";
import type { RenderedText } from "./types.ts";

/** Markdown → platform chunks. Injectable so the worker does not depend on one renderer. */
export interface Renderer {
  render(markdown: string, channel: ChannelName, format: "rich" | "plain", maxChars: number): RenderedText;
}

const FORMAT_PLATFORM = {
  telegram: "telegram",
  discord: "discord",
  slack: "slack",
  // The page renders CommonMark itself (outbox/format/web.ts).
  web: "web",
} as const satisfies Record<ChannelName, FormatPlatform>;

export const formatRenderer: Renderer = {
  render(markdown, channel, format, maxChars) {
    const result =
      format === "rich"
        ? renderForPlatform(markdown, FORMAT_PLATFORM[channel], { maxChars })
        : renderPlain(markdown, { maxChars });
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
