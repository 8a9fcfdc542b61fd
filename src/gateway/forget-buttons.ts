import { createHmac, timingSafeEqual } from "node:crypto";
import { shortHash } from "../util/ids.ts";

/*
 * The /forget prompt's buttons. A button's data names the conversation it was sent for (a short
 * hash of its id) and the choice, with an HMAC tag over both and the user who asked, keyed like
 * approval buttons. So a press is refused when forged, pressed by someone else, or stale (the
 * chat has another conversation by now: already forgotten, or replaced with /new).
 */

export type ForgetChoice = "confirm" | "keep";

const CODES: Record<ForgetChoice, string> = { confirm: "y", keep: "n" };
const TAG_CHARS = 16;

/** Which conversation a button was made for, as its data carries it. */
export const conversationMark = (conversationId: string) =>
  shortHash(`forget\n${conversationId}`).slice(0, 12);

function tag(secret: string, mark: string, code: string, userId: string): string {
  return createHmac("sha256", secret)
    .update(`forget\n${mark}\n${code}\n${userId}`)
    .digest("base64url")
    .slice(0, TAG_CHARS);
}

/** Whether `data` is a /forget button's (and not an approval's). */
export const isForgetButton = (data: string) => data.startsWith("fg:");

/** `fg:<mark>:<y|n>:<tag>`: 33 bytes, well under Telegram's 64. */
export function signForgetButton(
  secret: string,
  conversationId: string,
  userId: string,
  choice: ForgetChoice,
): string {
  const mark = conversationMark(conversationId);
  const code = CODES[choice];
  return `fg:${mark}:${code}:${tag(secret, mark, code, userId)}`;
}

export type ForgetPressCheck =
  | { ok: true; mark: string; choice: ForgetChoice }
  | { ok: false; reason: "malformed" | "bad signature" };

/** Reads a press back: valid only when signed with `secret` for this presser. */
export function verifyForgetButton(secret: string, data: string, userId: string): ForgetPressCheck {
  const match = /^fg:([0-9a-f]{12}):([yn]):([A-Za-z0-9_-]{16})$/.exec(data);
  if (!match) return { ok: false, reason: "malformed" };
  const [, mark, code, given] = match as unknown as [string, string, string, string];
  const expected = Buffer.from(tag(secret, mark, code, userId));
  const actual = Buffer.from(given);
  if (expected.length !== actual.length || !timingSafeEqual(expected, actual))
    return { ok: false, reason: "bad signature" };
  return { ok: true, mark, choice: code === "y" ? "confirm" : "keep" };
}
