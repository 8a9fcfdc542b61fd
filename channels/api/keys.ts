/**
 * Conversation keys and reply targets of the `api` channel, encoded and decoded only here.
 *
 * A conversation made with `POST /api/conversations` is keyed `api:<owner>:dm:<ref>`: `owner` is
 * who created it (`operator`, or `app.<name>` for an app token), `ref` a random id. The owner in
 * the key is what the conversation API's access check reads, so ownership needs no table of its
 * own and survives a restart with the conversation. The reply target is `<owner>:<ref>`.
 */
import { SwitchboardError } from "../../src/errors.ts";

/** The one account of the api channel (the gateway itself is the bot). */
export const API_ACCOUNT = "api";

/** An app's name as SWITCHBOARD_APP_TOKENS gives it. */
export const APP_NAME = /^[A-Za-z0-9._-]{1,64}$/;

const REF = /^[A-Za-z0-9_-]{8,64}$/;
const KEY = /^api:(operator|app\.[A-Za-z0-9._-]{1,64}):dm:([A-Za-z0-9_-]{8,64})$/;
const TARGET = /^(operator|app\.[A-Za-z0-9._-]{1,64}):([A-Za-z0-9_-]{8,64})$/;

/** Who made an api conversation: an operator token (any of them) or a named app. */
export type ApiOwner = "operator" | `app.${string}`;

export function ownerOfApp(name: string): ApiOwner {
  if (!APP_NAME.test(name)) throw new Error(`Not an app name: "${name.slice(0, 70)}".`);
  return `app.${name}`;
}

export function conversationKeyFor(owner: ApiOwner, ref: string): string {
  if (!REF.test(ref)) throw new Error(`Not a conversation ref: "${ref.slice(0, 70)}".`);
  return `api:${owner}:dm:${ref}`;
}

export function replyTargetFor(owner: ApiOwner, ref: string): string {
  return `${owner}:${ref}`;
}

/** The owner and ref of an api conversation key; null for any other key (another channel's). */
export function parseConversationKey(key: string): { owner: ApiOwner; ref: string } | null {
  const match = KEY.exec(key);
  return match ? { owner: match[1] as ApiOwner, ref: match[2]! } : null;
}

/** Checks a reply target this channel made; another adapter's target is `platform_rejected`. */
export function decodeTarget(target: string): { owner: ApiOwner; ref: string } {
  const match = TARGET.exec(target);
  if (!match)
    throw new SwitchboardError(
      "platform_rejected",
      `"${target.slice(0, 80)}" is not an api reply target (expected <owner>:<ref>); it was made by another adapter or corrupted.`,
      { retryable: false },
    );
  return { owner: match[1] as ApiOwner, ref: match[2]! };
}
