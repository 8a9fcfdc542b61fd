/**
 * What the config's bindings match, read off an inbound message or a run's context, and the
 * settings that then apply. Every part of the gateway that reads a setting asks here.
 */
import type { ChannelName, InboundMessage, InboundWhere, SurfaceKind } from "../../channels/types.ts";
import type { RunContext } from "../run-context.ts";
import {
  type BindingFacts,
  type ConversationSettings,
  conversationSettings,
  DEFAULT_ACCOUNT,
  type FileConfig,
} from "./config/index.ts";

/**
 * The configured name of the account a message came through. Every channel has one account,
 * `default`, until `accounts` are configured; then this maps the adapter's account to its name.
 */
export function accountNameOf(_channel: ChannelName, _account: string): string {
  return DEFAULT_ACCOUNT;
}

/** Where a message (or a run answering one) is, as bindings match it. */
export function bindingFactsOf(from: {
  channel: ChannelName;
  account: string;
  surface: SurfaceKind;
  user?: string;
  where?: InboundWhere | undefined;
}): BindingFacts {
  const { where } = from;
  return {
    channel: from.channel,
    account: accountNameOf(from.channel, from.account),
    surface: from.surface,
    ...(from.user === undefined ? {} : { user: from.user }),
    ...(where?.chat === undefined ? {} : { chat: where.chat }),
    ...(where?.team === undefined ? {} : { team: where.team }),
    ...(where?.guild === undefined ? {} : { guild: where.guild }),
    ...(where?.roles === undefined ? {} : { roles: where.roles }),
  };
}

/** The settings for an inbound message: its binding's over its surface's. */
export function settingsForMessage(
  file: FileConfig,
  message: Pick<InboundMessage, "channel" | "account" | "surface" | "principal" | "where">,
): ConversationSettings {
  return conversationSettings(file, bindingFactsOf({ ...message, user: message.principal.id }));
}

/** The settings for a run, from the context its message (or schedule) gave it. */
export function settingsForContext(
  file: FileConfig,
  context: Pick<RunContext, "channel" | "account" | "surface" | "principal" | "where">,
): ConversationSettings {
  return conversationSettings(file, bindingFactsOf({ ...context, user: context.principal.id }));
}
