import { SwitchboardError } from "../../src/errors.ts";

/**
 * The opaque keys only this adapter encodes and decodes.
 *
 * conversationKey: `sl:<account>:dm:<user>` | `sl:<account>:dm:<user>:thread:<thread_ts>` |
 *                  `sl:<account>:ch:<channel>` | `sl:<account>:ch:<channel>:thread:<thread_ts>`
 * replyTarget:     `<channel>` (top level) | `<channel>:<thread_ts>` (in that thread)
 *
 * Channel ids are [A-Z0-9] and ts values are digits and one dot, so ":" never occurs inside a part.
 */

/** The account (`<team>:<app>`) a conversation key belongs to; null for a key of another shape. */
export function accountOfSlackKey(key: string): string | null {
  return /^sl:([^:]+:[^:]+):(?:dm|ch):/.exec(key)?.[1] ?? null;
}

export function dmConversationKey(account: string, user: string): string {
  return `sl:${account}:dm:${user}`;
}

/** A thread in the person's DM with the app (every assistant thread is one): its own conversation. */
export function dmThreadConversationKey(account: string, user: string, threadTs: string): string {
  return `sl:${account}:dm:${user}:thread:${threadTs}`;
}

export function channelConversationKey(account: string, channel: string): string {
  return `sl:${account}:ch:${channel}`;
}

export function threadConversationKey(account: string, channel: string, threadTs: string): string {
  return `sl:${account}:ch:${channel}:thread:${threadTs}`;
}

export interface ReplyTarget {
  channel: string;
  /** Post into this thread; absent = top level of the channel. */
  threadTs?: string;
}

export function encodeReplyTarget(target: ReplyTarget): string {
  return target.threadTs === undefined ? target.channel : `${target.channel}:${target.threadTs}`;
}

/** Throws SwitchboardError("input_invalid") for a target this adapter did not make. */
export function decodeReplyTarget(encoded: string): ReplyTarget {
  const match = /^([CDG][A-Z0-9]+)(?::(\d+\.\d+))?$/.exec(encoded);
  if (match === null || match[1] === undefined) {
    throw new SwitchboardError(
      "input_invalid",
      `"${encoded}" is not a Slack reply target; expected "<channel id>" or "<channel id>:<thread ts>" as made by the Slack adapter`,
    );
  }
  return match[2] === undefined ? { channel: match[1] } : { channel: match[1], threadTs: match[2] };
}
