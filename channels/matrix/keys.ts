/**
 * Conversation keys and reply targets of the Matrix channel, encoded and decoded only here.
 * A room is `mx:<roomId>`; a thread in it `mx:<roomId>/<root event id>` (room ids never hold a
 * "/": the server name is a host and port). A conversation key is the target, and for a named
 * account's bot `mx:<bot user id>~<roomId>[/<root>]` ("~" is in no user id), so two bots in one
 * room keep two conversations; the `default` bot's keys stay as they always were.
 */
import { createHash } from "node:crypto";
import { SwitchboardError } from "../../src/errors.ts";

export interface MatrixTarget {
  roomId: string;
  /** The thread's root event, for a target inside an `m.thread`. */
  threadRoot?: string;
}

const PREFIX = "mx:";

export function encodeTarget(target: MatrixTarget): string {
  return `${PREFIX}${target.roomId}${target.threadRoot === undefined ? "" : `/${target.threadRoot}`}`;
}

/** The conversation key of a target; `account`: the bot's user id for a named account's keys. */
export function conversationKeyOf(target: MatrixTarget, account?: string): string {
  const encoded = encodeTarget(target);
  return account === undefined ? encoded : `${PREFIX}${account}~${encoded.slice(PREFIX.length)}`;
}

/** The bot a named account's conversation key belongs to; null for the `default` bot's keys. */
export function accountOfMatrixKey(key: string): string | null {
  return /^mx:(@[^~\s]+)~!/.exec(key)?.[1] ?? null;
}

export function decodeTarget(target: string): MatrixTarget {
  if (!target.startsWith(`${PREFIX}!`))
    throw new SwitchboardError(
      "input_invalid",
      `Not a Matrix reply target: ${JSON.stringify(target.slice(0, 80))}`,
    );
  const rest = target.slice(PREFIX.length);
  const slash = rest.indexOf("/");
  return slash === -1
    ? { roomId: rest }
    : { roomId: rest.slice(0, slash), threadRoot: rest.slice(slash + 1) };
}

/**
 * The transaction id of one send, from the outbox's idempotency key (`<record key>#<chunk>`):
 * the same record and chunk give the same txnId, so a send retried after a crash shows once.
 * `part` tells apart the events one send makes (a reaction under a prompt).
 */
export function txnIdFor(idempotencyKey: string, part?: string): string {
  const raw = part === undefined ? idempotencyKey : `${idempotencyKey}.${part}`;
  // Transaction ids are opaque path segments; keep them readable, and short enough for any server.
  const safe = raw.replace(/[^A-Za-z0-9._~#:-]/g, (c) => `_${c.codePointAt(0)!.toString(16)}_`);
  // A long key is hashed whole rather than cut, so two keys never share a txnId.
  return safe.length <= 200 ? `sb.${safe}` : `sb.h.${createHash("sha256").update(raw).digest("hex")}`;
}
