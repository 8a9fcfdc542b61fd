/**
 * What the config's bindings match, read off an inbound message or a run's context, and the
 * settings that then apply. Every part of the gateway that reads a setting asks here.
 */
import type { ChannelName, InboundMessage, InboundWhere, SurfaceKind } from "../../channels/types.ts";
import type { RunContext } from "../run-context.ts";
import {
  type AccountNames,
  type BindingFacts,
  type ConversationSettings,
  conversationSettings,
  DEFAULT_ACCOUNT,
  type FileConfig,
} from "./config/index.ts";

/**
 * The configured name of the account a message came through: the adapter's account id mapped by
 * `file.accountNames`. A channel whose ids are not known from its settings has one account,
 * `default`; an id no account has any more (its account removed) stays itself, so no binding of
 * another account applies to it.
 */
export function accountNameOf(
  file: Pick<FileConfig, "accountNames">,
  channel: ChannelName,
  account: string,
): string {
  const names = file.accountNames?.[channel as keyof AccountNames];
  if (names === undefined) return DEFAULT_ACCOUNT;
  return names[account] ?? account;
}

/** The account's name when it is a named one; undefined for the channel's `default` account. */
export function namedAccountOf(
  file: Pick<FileConfig, "accountNames">,
  channel: ChannelName,
  account: string,
): string | undefined {
  const name = accountNameOf(file, channel, account);
  return name === DEFAULT_ACCOUNT ? undefined : name;
}

/** Where a message (or a run answering one) is, as bindings match it. */
export function bindingFactsOf(
  file: Pick<FileConfig, "accountNames">,
  from: {
    channel: ChannelName;
    account: string;
    surface: SurfaceKind;
    user?: string;
    where?: InboundWhere | undefined;
  },
): BindingFacts {
  const { where } = from;
  return {
    channel: from.channel,
    account: accountNameOf(file, from.channel, from.account),
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
  return conversationSettings(file, bindingFactsOf(file, { ...message, user: message.principal.id }));
}

/** The settings for a run, from the context its message (or schedule) gave it. */
export function settingsForContext(
  file: FileConfig,
  context: Pick<RunContext, "channel" | "account" | "surface" | "principal" | "where">,
): ConversationSettings {
  return conversationSettings(file, bindingFactsOf(file, { ...context, user: context.principal.id }));
}
