/**
 * Markdown → Telegram HTML. For now only escapes what HTML mode would misread; the real renderer
 * lives in outbox/format/ and will replace this body.
 */
export function renderTelegramHtml(markdown: string): string {
  return markdown.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}
