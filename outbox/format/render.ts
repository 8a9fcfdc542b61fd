import { chunkAtoms } from "./chunk.ts";
import type { Dialect } from "./dialect.ts";
import { discordDialect } from "./discord.ts";
import { layoutDocument } from "./layout.ts";
import { parseMarkdown } from "./parse.ts";
import { plainDialect } from "./plain.ts";
import { slackDialect } from "./slack.ts";
import { telegramDialect } from "./telegram.ts";
import { renderWeb } from "./web.ts";

export type FormatPlatform = "telegram" | "slack" | "discord" | "web" | "plain";

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

const DIALECTS: Readonly<Record<Exclude<FormatPlatform, "web">, Dialect>> = {
  telegram: telegramDialect,
  slack: slackDialect,
  discord: discordDialect,
  plain: plainDialect,
};

/** Renders the model's Markdown in one platform's markup and cuts it into messages. */
export function renderForPlatform(
  markdown: string,
  platform: FormatPlatform,
  options: RenderOptions,
): RenderedMessage {
  if (platform === "web") return { chunks: renderWeb(markdown, options.maxChars), format: "rich" };
  const atoms = layoutDocument(parseMarkdown(markdown), DIALECTS[platform]);
  return { chunks: chunkAtoms(atoms, options.maxChars), format: platform === "plain" ? "plain" : "rich" };
}

/** The fallback when a platform rejects formatted text: the same content without markup. */
export function renderPlain(markdown: string, options: RenderOptions): RenderedMessage {
  return renderForPlatform(markdown, "plain", options);
}
