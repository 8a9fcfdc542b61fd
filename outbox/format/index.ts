export { MIN_MAX_CHARS } from "./chunk.ts";
export { escapeDiscord } from "./discord.ts";
export type { MarkupTarget, RenderedMessage, RenderOptions } from "./render.ts";
export { renderMarkup, renderPlain } from "./render.ts";
export { escapeSlack } from "./slack.ts";
export { escapeTelegramHtml } from "./telegram.ts";
