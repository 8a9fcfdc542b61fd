/**
 * A Discord bot token is three dot-separated parts, the first the bot's user id in base64
 * (`base64(id).timestamp.hmac`), so the account a token connects is known before it logs in: the
 * gateway tells accounts apart by it, and a reply queued for a bot routes to it before its start.
 */

/** The bot user id a token's first part encodes; null for a token of another shape (an emulator's). */
export function botUserIdOfToken(token: string): string | null {
  const first = token.split(".")[0] ?? "";
  if (!/^[A-Za-z0-9+/_-]+=*$/.test(first)) return null;
  const decoded = Buffer.from(first.replaceAll("-", "+").replaceAll("_", "/"), "base64").toString("utf8");
  return /^\d{15,21}$/.test(decoded) ? decoded : null;
}
