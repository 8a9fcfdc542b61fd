/**
 * Which adapter a reply leaves through: the one of its channel whose account received the message
 * (records, streams, reactions and schedules carry that account). A reply is never sent through
 * another bot of the channel; when its account is gone it has no route, and a reason that says so.
 */
import type { ChannelAdapter, ChannelName } from "../channels/types.ts";

export type AdapterRoute = { adapter: ChannelAdapter } | { adapter: null; reason: string };

/** The adapter's account id, or null while it is not known (Discord and Slack learn it at start). */
export function knownAccount(adapter: ChannelAdapter): string | null {
  try {
    return adapter.account;
  } catch {
    return null;
  }
}

/**
 * The adapter of `channel` whose account is `account`. A channel with one adapter whose account is
 * not known yet gets that adapter (it has no other; its send fails until it started). Pure.
 */
export function routeToAccount(
  adapters: Iterable<ChannelAdapter>,
  channel: ChannelName,
  account: string,
): AdapterRoute {
  const candidates = [...adapters].filter((adapter) => adapter.channel === channel);
  const accounts = candidates.map(knownAccount);
  const index = accounts.indexOf(account);
  if (index >= 0) return { adapter: candidates[index]! };
  if (candidates.length === 1 && accounts[0] === null) return { adapter: candidates[0]! };
  if (candidates.length === 0)
    return { adapter: null, reason: `the ${channel} channel is not configured; configure it and retry` };
  const configured = accounts.map((id) => id ?? "(not started)").join(", ");
  return {
    adapter: null,
    reason: `the ${channel} account ${account} that received this conversation is not configured any more (configured: ${configured}); it is not sent through another bot. Add the account back and \`switchboard outbox retry\` it, or cancel it`,
  };
}

/**
 * Any adapter of `channel`, for what all its accounts share (capabilities, limits, markup, file
 * limits, admission); undefined when the channel has none.
 */
export function adapterOfChannel(
  adapters: Iterable<ChannelAdapter>,
  channel: ChannelName,
): ChannelAdapter | undefined {
  for (const adapter of adapters) if (adapter.channel === channel) return adapter;
  return undefined;
}
