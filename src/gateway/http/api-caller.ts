/**
 * Who calls the conversation API, and what they may touch. An operator token may use every route
 * and conversation; an app token (SWITCHBOARD_APP_TOKENS) only the conversation API's routes, and
 * only on the conversations it created. The decision is one pure function, `mayUseConversation`.
 */
import { type ApiOwner, ownerOfApp, parseConversationKey } from "../../../channels/api/keys.ts";
import { bearerToken, sameToken } from "./auth.ts";

/** Applications' tokens, by name (SWITCHBOARD_APP_TOKENS). */
export type AppTokens = ReadonlyArray<{ name: string; token: string }>;

/** `name` null: the shared operator token. */
export type ApiCaller = { kind: "operator"; name: string | null } | { kind: "app"; name: string };

/** The owner recorded in the key of a conversation this caller creates. */
export function ownerOf(caller: ApiCaller): ApiOwner {
  return caller.kind === "operator" ? "operator" : ownerOfApp(caller.name);
}

/**
 * Whether `caller` may read and act on the conversation whose current key is `key` (null: it has
 * none, e.g. after /new moved its key to a fresh conversation). Operators may use any; an app the
 * api conversations it created, whose key names it as owner. Bindings will extend this.
 */
export function mayUseConversation(caller: ApiCaller, key: string | null): boolean {
  if (caller.kind === "operator") return true;
  if (key === null) return false;
  return parseConversationKey(key)?.owner === ownerOf(caller);
}

/**
 * Whether `caller` may send a proactive message to a platform target. Operators may; an app only
 * where a binding allows the target, and no binding exists yet, so never (`reason` says so).
 */
export function maySendTo(caller: ApiCaller): { allowed: true } | { allowed: false; reason: string } {
  if (caller.kind === "operator") return { allowed: true };
  return {
    allowed: false,
    reason: `App tokens may not send to platform chats yet: a binding must allow the target, and ${caller.name} has none. Send with an operator token instead.`,
  };
}

/**
 * The app whose token the request carries, or null when it carries none of them. Every app's
 * token is compared (on digests) whichever matches, so the time taken says nothing about which.
 */
export function authenticateApp(request: Request, apps: AppTokens): { name: string } | null {
  const presented = bearerToken(request);
  if (presented === null) return null;
  let name: string | null = null;
  for (const app of apps) if (sameToken(presented, app.token) && name === null) name = app.name;
  return name === null ? null : { name };
}
