/**
 * Who calls the conversation API, and what they may touch. An operator token may use every route
 * and conversation; an app token (SWITCHBOARD_APP_TOKENS) only the conversation API's routes, on
 * the api conversations it created and on the platform conversations and chats a binding's `apps`
 * names it in. The decisions are pure functions: `mayUseConversation` and `maySendTo`.
 */
import { type ApiOwner, ownerOfApp, parseConversationKey } from "../../../channels/api/keys.ts";
import type { ChannelName } from "../../../channels/types.ts";
import {
  BINDING_MATCH_KEYS,
  type Binding,
  firstMatchingBinding,
  type MatchFacts,
} from "../config/bindings.ts";
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
 * Where a platform conversation is, as far as app access goes: its channel and the `apps` of the
 * binding that matches it (none: no binding matches, or it names no apps).
 */
export interface ConversationBinding {
  channel: ChannelName;
  apps: readonly string[];
}

/**
 * Whether `caller` may read and act on the conversation whose current key is `key` (null: it has
 * none, e.g. after /new moved its key to a fresh conversation). Operators may use any; an app the
 * api conversations it created, whose key names it as owner, and a platform conversation whose
 * binding (`bound`) lists it in `apps`. Another app's api conversation is never reachable through
 * a binding: it is that app's alone.
 */
export function mayUseConversation(
  caller: ApiCaller,
  key: string | null,
  bound: ConversationBinding | null = null,
): boolean {
  if (caller.kind === "operator") return true;
  if (key !== null && parseConversationKey(key)?.owner === ownerOf(caller)) return true;
  if (bound === null || bound.channel === "api") return false;
  if (key !== null && parseConversationKey(key) !== null) return false;
  return bound.apps.includes(caller.name);
}

/**
 * Whether `caller` may send a proactive message to a platform target with these facts (channel,
 * account name, chat; the rest absent). Operators may; an app when the first binding matching the
 * target lists it in `apps`. `reason` says which binding setting would allow it.
 */
export function maySendTo(
  caller: ApiCaller,
  bindings: readonly Pick<Binding, "match" | "apps">[],
  target: MatchFacts,
): { allowed: true } | { allowed: false; reason: string } {
  if (caller.kind === "operator") return { allowed: true };
  const where = `${target.channel} account ${target.account} chat ${target.chat ?? "(none)"}`;
  const index = firstMatchingBinding(bindings, target);
  if (index === null)
    return {
      allowed: false,
      reason: `App ${caller.name} may not send to ${where}: no binding matches it. Add a binding to SWITCHBOARD_CONFIG such as {"match": {"channel": "${target.channel}", "chat": "${target.chat ?? "…"}"}, "apps": ["${caller.name}"]} (only channel, account and chat are known of a send's target, so a match naming other keys never holds), or send with an operator token.`,
    };
  if (bindings[index]!.apps?.includes(caller.name)) return { allowed: true };
  const match = bindings[index]!.match;
  const matched = BINDING_MATCH_KEYS.filter((key) => match[key] !== undefined)
    .map((key) => `${key}=${match[key]}`)
    .join(" ");
  return {
    allowed: false,
    reason: `App ${caller.name} may not send to ${where}: bindings.${index} (match ${matched || "(everything)"}) is the binding that matches it, and its "apps" does not list ${caller.name}. Add "${caller.name}" to bindings.${index}.apps, or send with an operator token.`,
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
