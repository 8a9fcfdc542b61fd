import { type ChannelAdmission, type InboundMessage, isBlank } from "../../channels/types.ts";
import type { RunContext } from "../run-context.ts";
import type { InputPart } from "../runtime/types.ts";
import { namedAccountOf, settingsForMessage } from "./binding-facts.ts";
import type { AllowList, FileConfig, SurfacePolicy } from "./config/index.ts";

/** Longest input text admitted to the model, in characters. */
export const MAX_INPUT_CHARS = 16_000;

/** Why ingress let an update go without a run; counted in /metrics by this text. */
export type IgnoreReason = "from a bot" | "user not allowed" | "not addressed to the bot" | "empty";

/** What ingress does with one valid inbound message, decided before anything is written. */
export type IngressDecision<Command extends string = string> =
  | { kind: "ignore"; reason: IgnoreReason }
  /** A user off the allowlist, in a DM, where the list has `pairing`: they get a pairing code. */
  | { kind: "pair" }
  | { kind: "command"; name: Command }
  | { kind: "oversized"; chars: number; limitChars: number }
  | { kind: "admit"; parts: InputPart[]; context: RunContext; policy: SurfacePolicy };

export interface IngressRules<Command extends string = string> {
  file: FileConfig;
  /** Who may write to each channel's `default` account (the one its variables configure). */
  allowLists: Partial<Record<InboundMessage["channel"], AllowList>>;
  /**
   * The named accounts' lists (their `allowedUsers`), by allowListKey: a message to one of them is
   * judged by its own list, never by another account's.
   */
  accountAllowLists?: ReadonlyMap<string, AllowList>;
  /** What the message's channel decides itself (its adapter's `admission`); absent: ingress decides all. */
  admission?: ChannelAdmission;
  /** The sender holds a stored access grant (an approved pairing code); checked by the caller. */
  granted?: boolean;
  /** The chat command the text names, or null for input to the model. */
  matchCommand(text: string): Command | null;
}

/** The key of a named account's allow list: its channel and account id. */
export function allowListKey(channel: InboundMessage["channel"], account: string): string {
  return `${channel}\u0000${account}`;
}

/** The allow list a message is judged by: its account's, or its channel's for the `default` account. */
export function allowListOf(
  rules: Pick<IngressRules, "allowLists" | "accountAllowLists">,
  message: Pick<InboundMessage, "channel" | "account">,
): AllowList | undefined {
  return (
    rules.accountAllowLists?.get(allowListKey(message.channel, message.account)) ??
    rules.allowLists[message.channel]
  );
}

/**
 * The gatekeeping of ingress, in order: bots (unless allowed), users off the allowlist (unless the
 * channel controls access itself, as the web chat does), group and thread messages not addressed to the bot where the surface requires a
 * mention, then commands, oversized text and empty messages. What is left is admitted with its
 * input parts and the context its answer is delivered by.
 */
export function decideIngress<Command extends string>(
  message: InboundMessage,
  rules: IngressRules<Command>,
): IngressDecision<Command> {
  if (message.principal.isBot && !rules.file.allowBots) return { kind: "ignore", reason: "from a bot" };
  if (!rules.admission?.ownAccessControl) {
    const list = allowListOf(rules, message);
    if (!isAllowed(list, message.principal.id) && !(pairs(list) && rules.granted)) {
      return pairs(list) && message.surface === "dm"
        ? { kind: "pair" }
        : { kind: "ignore", reason: "user not allowed" };
    }
  }
  const policy = settingsForMessage(rules.file, message);
  if (message.surface !== "dm" && policy.requireMention && !message.addressedToBot) {
    return { kind: "ignore", reason: "not addressed to the bot" };
  }
  const text = message.text.trim();
  const command = rules.matchCommand(text);
  if (command !== null) return { kind: "command", name: command };
  if (text.length > MAX_INPUT_CHARS)
    return { kind: "oversized", chars: text.length, limitChars: MAX_INPUT_CHARS };
  if (isBlank(text) && message.attachments.length === 0) return { kind: "ignore", reason: "empty" };
  return {
    kind: "admit",
    parts: inputParts(isBlank(text) ? "" : text, message),
    context: runContext(message, policy, namedAccountOf(rules.file, message.channel, message.account)),
    policy,
  };
}

function isAllowed(list: AllowList | undefined, userId: string): boolean {
  if (!list) return false;
  return list.kind === "everyone" || list.ids.has(userId);
}

/** Whether users off the list can ask for access with a pairing code (and grants count). */
export function pairs(list: AllowList | undefined): boolean {
  return list?.kind === "ids" && list.pairing === true;
}

/** Whether the sender needs a stored grant to pass: the list has `pairing` and does not name them. */
export function needsGrant(list: AllowList | undefined, userId: string): boolean {
  return pairs(list) && !isAllowed(list, userId);
}

/** The trimmed text, then one file part per attachment (by reference; nothing is downloaded). */
function inputParts(text: string, message: InboundMessage): InputPart[] {
  const parts: InputPart[] = [];
  if (text !== "") parts.push({ type: "text", text });
  for (const a of message.attachments) {
    parts.push({
      type: "file",
      ref: a.ref,
      kind: a.kind,
      ...(a.mediaType ? { mediaType: a.mediaType } : {}),
      ...(a.name ? { name: a.name } : {}),
      ...(a.sizeBytes === undefined ? {} : { sizeBytes: a.sizeBytes }),
      ...(a.durationSeconds === undefined ? {} : { durationSeconds: a.durationSeconds }),
    });
  }
  return parts;
}

function runContext(
  message: InboundMessage,
  policy: SurfacePolicy,
  accountName: string | undefined,
): RunContext {
  return {
    channel: message.channel,
    account: message.account,
    ...(accountName === undefined ? {} : { accountName }),
    target: message.replyTarget,
    ...(message.messageId ? { replyTo: message.messageId } : {}),
    surface: message.surface,
    ...(message.where ? { where: message.where } : {}),
    delivery: policy.delivery,
    ...(policy.nativeStreaming ? { nativeStreaming: true } : {}),
    conversationKey: message.conversationKey,
    ...(message.roomKey ? { roomKey: message.roomKey } : {}),
    principal: {
      id: message.principal.id,
      ...(message.principal.name ? { name: message.principal.name } : {}),
    },
    origin: "user",
  };
}
