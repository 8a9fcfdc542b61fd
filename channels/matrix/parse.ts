/**
 * One room event from /sync → what the adapter does with it: an inbound message (a redaction is one
 * that withdraws the message it redacts), a reaction that may be a button press, an encrypted event
 * (refused), or a skip with its reason.
 */
import type { InboundAttachment, InboundMessage, SurfaceKind } from "../types.ts";
import type { MatrixEvent } from "./client.ts";
import { conversationKeyOf, encodeTarget } from "./keys.ts";

export interface ParseContext {
  /** The bot's user id. */
  account: string;
  /** Whether conversation keys carry the bot's user id (a named account's: see keys.ts). */
  accountKeys?: boolean;
  roomId: string;
  /** The room has the bot and one other member. */
  isDm: boolean;
  /** The sender's display name in the room, when they set one. */
  senderName?: string;
  /** The sender of the event this one replies to, when the adapter looked it up. */
  repliedToSender?: string;
}

export type ParseOutcome =
  | { kind: "message"; message: InboundMessage }
  | { kind: "reaction"; eventId: string; sender: string; reactsTo: string; key: string }
  | { kind: "encrypted"; eventId: string; sender: string }
  | { kind: "skip"; reason: string };

/** The account conversation keys carry, if they carry one. */
const keyAccount = (context: ParseContext): string | undefined =>
  context.accountKeys ? context.account : undefined;

const skip = (reason: string): ParseOutcome => ({ kind: "skip", reason });

const ATTACHMENT_KINDS: Record<string, InboundAttachment["kind"]> = {
  "m.image": "photo",
  "m.file": "file",
  "m.audio": "audio",
  "m.video": "video",
};

type Content = Record<string, unknown>;

function record(value: unknown): Content | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Content)
    : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The event a message replies to, from `m.relates_to.m.in_reply_to` (also inside a thread). */
export function replyToOf(content: Content): string | undefined {
  const relates = record(content["m.relates_to"]);
  if (relates?.rel_type === "m.thread" && relates.is_falling_back === true) return undefined;
  return text(record(relates?.["m.in_reply_to"])?.event_id);
}

/** The thread root of an event in an `m.thread`. */
export function threadRootOf(content: Content): string | undefined {
  const relates = record(content["m.relates_to"]);
  return relates?.rel_type === "m.thread" ? text(relates.event_id) : undefined;
}

/** Drops the legacy reply fallback ("> <@user> quoted" lines and the blank line after them). */
function stripReplyFallback(body: string): string {
  if (!body.startsWith("> ")) return body;
  const lines = body.split("\n");
  let index = 0;
  while (index < lines.length && lines[index]!.startsWith(">")) index += 1;
  if (lines[index] === "") index += 1;
  return lines.slice(index).join("\n");
}

/** Whether the message names the bot: `m.mentions`, its id in the text, or a pill linking to it. */
function mentions(content: Content, account: string): boolean {
  const userIds = record(content["m.mentions"])?.user_ids;
  if (Array.isArray(userIds) && userIds.includes(account)) return true;
  const body = text(content.body) ?? "";
  const formatted = text(content.formatted_body) ?? "";
  return (
    body.includes(account) ||
    formatted.includes(`matrix.to/#/${account}`) ||
    formatted.includes(`matrix.to/#/${encodeURIComponent(account)}`)
  );
}

export function parseMatrixEvent(event: MatrixEvent, context: ParseContext): ParseOutcome {
  const eventId = event.event_id;
  const sender = event.sender;
  if (eventId === undefined || sender === undefined) return skip("event without id or sender");
  if (sender === context.account) return skip("the bot's own event");
  if (event.type === "m.room.encrypted") return { kind: "encrypted", eventId, sender };
  if (event.type === "m.room.redaction") {
    const redacts = event.redacts ?? text(event.content.redacts);
    if (redacts === undefined) return skip("redaction without a target");
    return { kind: "message", message: withdrawal(event, { eventId, sender, redacts }, context) };
  }
  if (event.type === "m.reaction") {
    const relates = record(event.content["m.relates_to"]);
    const reactsTo = text(relates?.event_id);
    const key = text(relates?.key);
    if (relates?.rel_type !== "m.annotation" || reactsTo === undefined || key === undefined)
      return skip("reaction without an annotation");
    return { kind: "reaction", eventId, sender, reactsTo, key };
  }
  if (event.type !== "m.room.message") return skip(`event type ${event.type}`);
  if (event.unsigned?.redacted_because !== undefined) return skip("redacted message");

  let content = event.content;
  const relates = record(content["m.relates_to"]);
  let edits: string | undefined;
  if (relates?.rel_type === "m.replace") {
    const replaced = record(content["m.new_content"]);
    edits = text(relates.event_id);
    if (replaced === undefined || edits === undefined) return skip("edit without m.new_content");
    content = { ...replaced, "m.relates_to": relates };
  }
  const msgtype = text(content.msgtype);
  const body = text(content.body) ?? "";
  const threadRoot = threadRootOf(event.content);
  const replyTo = replyToOf(event.content);
  const attachmentKind = msgtype === undefined ? undefined : ATTACHMENT_KINDS[msgtype];
  let messageText: string;
  const attachments: InboundAttachment[] = [];
  if (attachmentKind !== undefined) {
    const url = text(content.url);
    if (url === undefined) return skip(`${msgtype} without a url (encrypted media is not supported)`);
    const info = record(content.info) ?? {};
    const filename = text(content.filename);
    const size = typeof info.size === "number" ? info.size : undefined;
    const duration = typeof info.duration === "number" ? info.duration / 1000 : undefined;
    const voice =
      attachmentKind === "audio" &&
      (content["org.matrix.msc3245.voice"] !== undefined || content["m.voice"] !== undefined);
    attachments.push({
      kind: voice ? "voice" : attachmentKind,
      ref: url,
      ...(filename !== undefined || body !== "" ? { name: filename ?? body } : {}),
      ...(typeof info.mimetype === "string" ? { mediaType: info.mimetype } : {}),
      ...(size !== undefined ? { sizeBytes: size } : {}),
      ...(duration !== undefined ? { durationSeconds: duration } : {}),
    });
    // Matrix 1.10 captions: with a filename, a body that differs from it is the caption.
    messageText = filename !== undefined && body !== filename ? body : "";
  } else if (msgtype === "m.text" || msgtype === "m.notice" || msgtype === "m.emote") {
    const plain = stripReplyFallback(body);
    messageText = msgtype === "m.emote" ? `* ${plain}` : plain;
  } else {
    return skip(`message type ${msgtype ?? "(none)"}`);
  }

  const surface: SurfaceKind = threadRoot !== undefined ? "thread" : context.isDm ? "dm" : "group";
  const target = encodeTarget({
    roomId: context.roomId,
    ...(threadRoot === undefined ? {} : { threadRoot }),
  });
  const addressedToBot =
    context.isDm || mentions(content, context.account) || context.repliedToSender === context.account;
  const message: InboundMessage = {
    channel: "matrix",
    account: context.account,
    updateKey: eventId,
    principal: {
      id: sender,
      ...(context.senderName === undefined ? {} : { name: context.senderName }),
      isBot: false,
    },
    conversationKey: conversationKeyOf(
      { roomId: context.roomId, ...(threadRoot === undefined ? {} : { threadRoot }) },
      keyAccount(context),
    ),
    ...(threadRoot === undefined
      ? {}
      : { roomKey: conversationKeyOf({ roomId: context.roomId }, keyAccount(context)) }),
    replyTarget: target,
    surface,
    where: { chat: context.roomId },
    text: messageText,
    ...(replyTo === undefined ? {} : { replyTo }),
    // An edit answers (and is found by) the message it edits.
    messageId: edits ?? eventId,
    addressedToBot,
    attachments,
    receivedAtMs: event.origin_server_ts ?? Date.now(),
    ...(edits === undefined ? {} : { edited: { messageId: edits } }),
  };
  return { kind: "message", message };
}

/**
 * A redaction as the withdrawal of the event it redacts (its run is cancelled or stopped; ingress
 * goes by that event's receipt). Keyed by the redaction's own event id, so a redelivery is a
 * duplicate. A redaction does not say which thread the event was in: the chat named is the room.
 */
function withdrawal(
  event: MatrixEvent,
  ids: { eventId: string; sender: string; redacts: string },
  context: ParseContext,
): InboundMessage {
  const room = encodeTarget({ roomId: context.roomId });
  return {
    channel: "matrix",
    account: context.account,
    updateKey: ids.eventId,
    principal: {
      id: ids.sender,
      ...(context.senderName === undefined ? {} : { name: context.senderName }),
      isBot: false,
    },
    conversationKey: conversationKeyOf({ roomId: context.roomId }, keyAccount(context)),
    replyTarget: room,
    surface: context.isDm ? "dm" : "group",
    where: { chat: context.roomId },
    text: "",
    messageId: ids.redacts,
    addressedToBot: true,
    attachments: [],
    receivedAtMs: event.origin_server_ts ?? Date.now(),
    withdrawn: { updateKey: ids.redacts },
  };
}
