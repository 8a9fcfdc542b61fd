/**
 * Telegram conversation keys (built in parse.ts) start `tg:<bot id>:`, so a key alone tells which
 * bot its chat talks to: a schedule made in the chat answers through that bot.
 */

/** The bot id a Telegram conversation key belongs to; null for a key of another shape. */
export function accountOfTelegramKey(conversationKey: string): string | null {
  return /^tg:(\d+):/.exec(conversationKey)?.[1] ?? null;
}
