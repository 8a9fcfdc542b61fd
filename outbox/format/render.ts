import { matrixDialect } from "../../channels/matrix/format.ts";
import type { MarkupDialect } from "../../channels/types.ts";
import { whatsappDialect } from "../../channels/whatsapp/format.ts";
import { chunkAtoms } from "./chunk.ts";
import type { Dialect } from "./dialect.ts";
import { discordDialect } from "./discord.ts";
import { layoutDocument } from "./layout.ts";
import { parseMarkdown } from "./parse.ts";
import { plainDialect } from "./plain.ts";
import { slackDialect } from "./slack.ts";
import { telegramDialect } from "./telegram.ts";
import { renderWeb } from "./web.ts";

/** What the renderer writes: a channel's markup dialect, or `plain` text without markup. */
export type MarkupTarget = MarkupDialect | "plain";

export interface RenderOptions {
  /** The platform's message limit in characters (Telegram 4096, Discord 2000, Slack 4000); at least 32. */
  maxChars: number;
}

export interface RenderedMessage {
  /** Messages to send in order, each within `maxChars` and valid on its own. Empty for blank input. */
  chunks: string[];
  /** "rich": send with the platform's formatting on (Telegram parse_mode HTML); "plain": without. */
  format: "rich" | "plain";
}

/** The dialects laid out from the parsed document; CommonMark is passed on as written (web.ts). */
const DIALECTS: Readonly<Record<Exclude<MarkupTarget, "commonmark">, Dialect>> = {
  "telegram-html": telegramDialect,
  "slack-mrkdwn": slackDialect,
  "discord-markdown": discordDialect,
  "whatsapp-markdown": whatsappDialect,
  "matrix-html": matrixDialect,
  plain: plainDialect,
};

/** Renders the model's Markdown in one markup dialect and cuts it into messages. */
export function renderMarkup(
  markdown: string,
  target: MarkupTarget,
  options: RenderOptions,
): RenderedMessage {
  if (target === "commonmark") return { chunks: renderWeb(markdown, options.maxChars), format: "rich" };
  const atoms = layoutDocument(parseMarkdown(markdown), DIALECTS[target]);
  return { chunks: chunkAtoms(atoms, options.maxChars), format: target === "plain" ? "plain" : "rich" };
}

/** The fallback when a platform rejects formatted text: the same content without markup. */
export function renderPlain(markdown: string, options: RenderOptions): RenderedMessage {
  return renderMarkup(markdown, "plain", options);
}
