/**
 * The web user's id: what the gateway knows a browser session by everywhere outside the session
 * check. The session id the page holds is the only key to its transcript, so it must never be
 * stored, logged, labelled or shown; the id derived from it may be, because it opens nothing: it
 * is an HMAC under a key only the gateway holds, and presenting it as a session id yields the id
 * of another, empty, session. Pure; the gateway loads the key (a secret kept in its database).
 */
import { createHmac } from "node:crypto";

/** The name the key is kept under in the runtime store's secrets (`loadOrCreateSecret`). */
export const WEB_USER_ID_SECRET = "web-user-id";

/** 16 bytes of the HMAC (128 bits), base64url: 22 characters of A-Z a-z 0-9 _ -. */
const USER_ID_BYTES = 16;
const USER_ID = /^[A-Za-z0-9_-]{22}$/;

/** Derives user ids from session ids under one key. */
export type WebUserIds = (sessionId: string) => string;

/** Pure: the derivation under `key` (a secret of at least 16 characters). */
export function webUserIds(key: string): WebUserIds {
  if (key.length < 16)
    throw new Error("the web user id key is shorter than 16 characters; it must be a random secret");
  return (sessionId) =>
    createHmac("sha256", key).update(sessionId).digest().subarray(0, USER_ID_BYTES).toString("base64url");
}

/** Whether `value` has the shape of a derived user id (a reply target the web channel accepts). */
export function isWebUserId(value: string): boolean {
  return USER_ID.test(value);
}
