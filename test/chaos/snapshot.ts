/**
 * What a chaos run looks like from the outside once it has settled: the database (read-only), the
 * chats as the emulators show them, the model's request log and what the driver sent. The
 * invariants (invariants.ts) are pure functions of this.
 */

import { decodeTarget as decodeDiscordTarget } from "../../channels/discord/keys.ts";
import { decodeTarget as decodeMatrixTarget } from "../../channels/matrix/keys.ts";
import { decodeTarget as decodeTelegramTarget } from "../../channels/telegram/target.ts";
import { decodeReplyTarget as decodeWhatsAppTarget } from "../../channels/whatsapp/keys.ts";
import { RESOLVED_BY_PLATFORM_STATUS } from "../../outbox/platform-status.ts";
import type { DiscordEmulator } from "../emulators/discord/index.ts";
import type { Call as MatrixCall, MatrixEmulator } from "../emulators/matrix/index.ts";
import type { TelegramEmulator } from "../emulators/telegram/index.ts";
import type { WhatsAppEmulator } from "../emulators/whatsapp/index.ts";
import { lastToolInputOf } from "../support/llm/fake-llm-rules.ts";
import type { FakeLlmRequest } from "../support/llm/fake-llm-server.ts";
import { type ChaosChannel, telegramChatPrefix } from "./cast.ts";
import type { ChaosDatabase } from "./database.ts";
import type { LeaseSnapshot } from "./leases.ts";

/**
 * `answer`: must be answered; `ignored`: must never reach the model; `schedule`: an `/in` command;
 * `purged`: written before a `/forget confirm` in its chat, so it may have been answered (once),
 * and after the purge nothing of it may be anywhere.
 */
/** `command`: a command other than `/in` and `/forget` (`/stop`, `/export`), answered by the gateway itself. */
/**
 * `spawn`: answered with `spawn_agent` (see SpawnInput); its child's result is answered instead.
 * `edited`: edited while queued to `correctedTo`: answered once, as corrected (or at a random
 * moment: see `editedAnyTime`). `withdrawn`: deleted while queued: never answered.
 */
export type Expectation =
  | "answer"
  | "ignored"
  | "schedule"
  | "command"
  | "purged"
  | "spawn"
  | "edited"
  | "withdrawn";

/** One message the driver posted (not its duplicates and replays, which must change nothing). */
export interface SentInput {
  /**
   * Unique token in the text (`q00042`, `s00003`; `t…` asks for a tool call that runs at once,
   * `r…` for one of an idempotent tool, `p…` for one that needs approval; `c…` marks a command);
   * the model's scripted answer starts `a-<id>`.
   */
  id: string;
  place: string;
  channel: ChaosChannel;
  updateKey: string;
  chat: string;
  expect: Expectation;
  /** The place answers in input order (queue policy). */
  ordered: boolean;
  /** Who wrote it (the only one, with approvers, who may decide its approval). */
  speaker?: string;
  /** Telegram: the account (bot id) of the bot that received it; every answer must leave through it. */
  account?: string;
  /** `purged` inputs: when the `/forget confirm` that purges their conversation was posted. */
  forgetAtMs?: number;
  /** `edited` inputs: the id the edit put in place of this one (`e…`). */
  correctedTo?: string;
  /**
   * `edited` inputs edited at a random moment, not while surely queued: the edit may also find the
   * answer running (both answered, under `queue`) or finished (ignored).
   */
  editedAnyTime?: boolean;
}

/**
 * A message that made the model spawn a child: its id (`g…`), the child's task id (`h…`) and the
 * id in the child's answer (`y…`), which the result's answer in the chat is marked with.
 */
export interface SpawnInput {
  id: string;
  childId: string;
  resultId: string;
  wait: boolean;
  chat: string;
}

/**
 * A conversation API call (`k…`): a message to an api conversation (`POST /api/conversations/:id/
 * messages`) or a proactive send (`POST /api/send`, to `chat`), its idempotency key, and what each
 * of its requests (the first and every repeat) was answered: 2xx bodies, and errors (4xx, or none
 * within the retry window).
 */
export interface ApiInput {
  id: string;
  kind: "message" | "send";
  key: string;
  path?: string;
  body?: Record<string, unknown>;
  chat?: string;
  answers: Array<{ outcome?: string; runId?: string; outboxId?: string; state?: string }>;
  errors: string[];
}

/** A `child_agents` row: one spawn's child. */
export interface ChildRow {
  handle: string;
  parentRunId: string;
  toolCallId: string;
  conversationId: string;
  task: string;
  state: string;
  resultRunId: string | null;
}

/** One approval request as the `approvals` table holds it. */
export interface ApprovalRow {
  id: string;
  runId: string;
  toolName: string;
  /** The call's arguments as JSON (the scripted ones name the input id). */
  input: string;
  state: string;
  successorRunId: string | null;
}

export interface RunRow {
  id: string;
  conversationId: string;
  queueSeq: number;
  state: string;
  absorbedInto: string | null;
  /** How many times an owner acquired the run: each acquisition may call the model again. */
  acquisitions: number;
  steps: number;
  /** Texts of the run's input messages, in order. */
  inputTexts: string[];
  inputMessageIds: string[];
  answerText: string;
}

export interface OutboxRow {
  id: string;
  key: string;
  runId: string;
  state: string;
  kind: string;
  markdown: string;
  /** The chat key (`tg:…`/`dc:…`/`wa:…`) decoded from the record's reply target. */
  chat: string;
  channel: string;
  /** Its history shows the record was `ambiguous` at some point. */
  everAmbiguous: boolean;
  /** When it first became `ambiguous` (wall clock), or null. */
  firstAmbiguousAtMs: number | null;
  /** Its history shows a platform's status report settled it (WhatsApp's status webhooks). */
  resolvedByPlatformStatus: boolean;
  /** How many messages its text was split into (1 until rendered). */
  chunks: number;
  receiptIds: string[];
  /** Why the last attempt failed, if it did. */
  lastError: string | null;
  conversationId?: string;
  /** The account (bot) the record is sent through: Telegram's is the bot id. */
  account?: string;
}

export interface ChatMessage {
  /** Platform message id. */
  id: string;
  text: string;
}

/**
 * A message a bot sent, as the platform recorded it: the account that sent it (Telegram: the bot
 * id the emulator shows as its author) and the chat it is in (the platform's chat id).
 */
export interface BotSend {
  channel: string;
  account: string;
  chatId: string;
  messageId: string;
  text: string;
}

/** The chats a bot is a member of (platform chat ids), by channel and account. */
export interface AccountChats {
  channel: string;
  /** The account's name in the config (`default` for the variables' bot). */
  name: string;
  account: string;
  chatIds: string[];
}

export interface Snapshot {
  sent: SentInput[];
  /** The leases left once the run settled (checkLeases); absent in hand-made snapshots that test other checks. */
  leases?: LeaseSnapshot;
  /** `account`: the source's account (the bot that received the update). */
  receipts: Array<{ channel: string; account?: string; key: string; runId: string | null; outcome: string }>;
  runs: RunRow[];
  outbox: OutboxRow[];
  schedules: Array<{ id: string; prompt: string; state: string }>;
  occurrences: Array<{ scheduleId: string; scheduledForMs: number; state: string; runId: string | null }>;
  /** The bot's visible messages per chat key, oldest first. */
  botMessages: Record<string, ChatMessage[]>;
  /** The last user text of every model request that answers an input, in arrival order. */
  modelRequests: string[];
  /**
   * Requests that answer no input: not streamed and without an input id in the last user message
   * (the runtime's summarising compaction, one `generateText` call per compaction).
   */
  housekeepingCalls: number;
  /** Every user and system text the model was ever shown (to prove ignored input never got there). */
  modelSawText: string;
  /** Telegram updates the gateway never confirmed (a named account's as `<name>:<update id>`). */
  unconfirmedUpdates: Array<number | string>;
  /** WhatsApp webhook POSTs (messages and statuses) never answered 200: Meta would still be redelivering them. */
  unansweredWebhooks: number[];
  /**
   * Every message WhatsApp accepted from the gateway and did not fail, by its
   * `biz_opaque_callback_data` (`<outbox record key>#<chunk>`) and when (wall clock): the platform
   * has it, and its statuses reported it.
   */
  whatsappAccepted: Array<{ callbackData: string; atMs: number }>;
  /**
   * Every transaction the homeserver stored for the bot's sends: its txnId, the event it made, and
   * how many later sends repeated that txnId (answered with the same event, appending nothing).
   */
  matrixTxns: Array<{ txnId: string; eventId: string; repeats: number }>;
  approvals: ApprovalRow[];
  spawns: SpawnInput[];
  api: ApiInput[];
  children: ChildRow[];
  /** The idempotency keys of the inputs that carry a child's result (`child-result:<handle>`), one per message. */
  childResultKeys: string[];
  /** Every approval decision a run holds as input (a `tool-approval-response` part). */
  approvalResponses: Array<{ runId: string; approvalId: string }>;
  /** The lines the MCP tools appended to the notes file: the tool effects, one line each. */
  toolEffects: string[];
  /** Purged conversations, with when the purge committed. */
  tombstones: Array<{ conversationId: string; purgedAtMs: number }>;
  /** Rows still naming a purged conversation, per table (tombstones and outbox rows not counted). */
  purgeLeftovers: Array<{ conversationId: string; table: string; rows: number }>;
  /** Every model request: when it arrived and everything it showed the model. */
  modelRequestLog: Array<{ atMs: number; text: string }>;
  /** Pairing episodes: an unlisted user's codes and grant, and what each approval of the code answered. */
  pairings: PairingOutcome[];
  media: MediaOutcome[];
  /** Every message each Telegram bot sent, in every chat it knows. */
  botSends: BotSend[];
  /** Where each Telegram bot is a member (the cast's chats). */
  accountChats: AccountChats[];
}

/** A captioned photo or voice note: its file's completed downloads, and whether the model got it. */
export interface MediaOutcome {
  id: string;
  kind: "photo" | "voice";
  downloadsCompleted: number;
  /** A request answering it carried an image part (photo) or a voice transcript. */
  modelSawIt: boolean;
}

export interface PairingOutcome {
  /** `telegram:<user id>` */
  user: string;
  /** Rows in pairing_codes for the user (one per update that asked). */
  codesIssued: number;
  /** Distinct codes the bot showed in the user's chat. */
  codesShown: string[];
  /** Rows in access_grants for the user. */
  grants: number;
  /** What `access approve CODE` answered, in order ("approved", "already approved"). */
  redemptions: string[];
}

/**
 * Ids as the driver writes them into texts: q = a message, s = a schedule's prompt, i = ignorable,
 * t = a message the model answers with a tool call, p = one whose tool call needs approval,
 * f = a message in a conversation that is then forgotten, m = a captioned photo or voice note,
 * g = one the model answers with `spawn_agent`, h = that child's task, y = the child's answer
 * (which its result carries), k = a message sent through the conversation API, e = what an edit
 * made of the message `q…` with the same number.
 */
export const INPUT_ID = /\b[qsitprfmghyke]\d{5}\b/g;

export function idsIn(text: string): string[] {
  return text.match(INPUT_ID) ?? [];
}

/** The chat key of a reply target; `account` tells a named Telegram account's chats apart (`tg@<name>:…`). */
export function chatOfTarget(channel: string, target: string, account?: string): string {
  if (channel === "telegram") {
    const { chatId, threadId } = decodeTelegramTarget(target);
    const prefix = telegramChatPrefix(account);
    return threadId === undefined ? `${prefix}:${chatId}` : `${prefix}:${chatId}:${threadId}`;
  }
  if (channel === "discord") return `dc:${decodeDiscordTarget(target)}`;
  if (channel === "whatsapp") return `wa:${decodeWhatsAppTarget(target)}`;
  if (channel === "matrix") return `mx:${decodeMatrixTarget(target).roomId}`;
  return `${channel}:${target}`;
}

function historyOf(json: string): Array<{ action: string; atMs: number }> {
  return JSON.parse(json) as Array<{ action: string; atMs: number }>;
}

function textOfParts(json: string): string {
  const parts = JSON.parse(json) as Array<{ type: string; text?: string }>;
  return parts.flatMap((p) => (p.type === "text" && p.text !== undefined ? [p.text] : [])).join("");
}

/** Reads the gateway's database (safe while it runs). Integers may come back as strings (PostgreSQL). */
export async function readDatabase(
  database: ChaosDatabase,
): Promise<
  Pick<
    Snapshot,
    | "receipts"
    | "runs"
    | "outbox"
    | "schedules"
    | "occurrences"
    | "approvals"
    | "approvalResponses"
    | "tombstones"
    | "purgeLeftovers"
    | "children"
    | "childResultKeys"
  >
> {
  const texts = new Map<string, string>();
  const approvalResponses: Snapshot["approvalResponses"] = [];
  for (const row of await database.read<{ id: string; run_id: string; parts: string }>(
    "SELECT id, run_id, parts FROM messages",
  )) {
    texts.set(row.id, textOfParts(row.parts));
    for (const part of JSON.parse(row.parts) as Array<{ type: string; approvalId?: string }>) {
      if (part.type === "tool-approval-response" && part.approvalId)
        approvalResponses.push({ runId: row.run_id, approvalId: part.approvalId });
    }
  }
  const runs = (
    await database.read<{
      id: string;
      conversation_id: string;
      queue_seq: number | string;
      state: string;
      absorbed_into: string | null;
      fencing_token: number | string;
      steps: number | string;
      input_message_ids: string;
      assistant_message_id: string;
    }>("SELECT * FROM runs ORDER BY queue_seq")
  ).map((r): RunRow => {
    const inputMessageIds = JSON.parse(r.input_message_ids) as string[];
    return {
      id: r.id,
      conversationId: r.conversation_id,
      queueSeq: Number(r.queue_seq),
      state: r.state,
      absorbedInto: r.absorbed_into,
      acquisitions: Number(r.fencing_token),
      steps: Number(r.steps),
      inputMessageIds,
      inputTexts: inputMessageIds.map((id) => texts.get(id) ?? ""),
      answerText: texts.get(r.assistant_message_id) ?? "",
    };
  });
  const receipts = (
    await database.read<{ source: string; key: string; run_id: string | null; outcome: string }>(
      "SELECT source, key, run_id, outcome FROM ingress_receipts",
    )
  ).map((r) => ({
    channel: r.source.split(":")[0] ?? "",
    account: r.source.slice(r.source.indexOf(":") + 1),
    key: r.key,
    runId: r.run_id,
    outcome: r.outcome,
  }));
  const outbox = (
    await database.read<{
      id: string;
      key: string;
      run_id: string;
      conversation_id: string;
      state: string;
      kind: string;
      markdown: string;
      channel: string;
      account: string;
      target: string;
      history: string;
      receipt: string | null;
      last_error: string | null;
      rendered: string | null;
    }>("SELECT * FROM outbox ORDER BY created_at_ms, id")
  ).map(
    (r): OutboxRow => ({
      id: r.id,
      key: r.key,
      runId: r.run_id,
      state: r.state,
      kind: r.kind,
      markdown: r.markdown,
      chat: chatOfTarget(r.channel, r.target, r.account),
      channel: r.channel,
      account: r.account,
      everAmbiguous: historyOf(r.history).some((h) => h.action === "ambiguous"),
      firstAmbiguousAtMs: historyOf(r.history).find((h) => h.action === "ambiguous")?.atMs ?? null,
      resolvedByPlatformStatus: historyOf(r.history).some((h) => h.action === RESOLVED_BY_PLATFORM_STATUS),
      chunks: r.rendered ? (JSON.parse(r.rendered) as { chunks: unknown[] }).chunks.length : 1,
      receiptIds: r.receipt ? ((JSON.parse(r.receipt) as { messageIds?: string[] }).messageIds ?? []) : [],
      lastError: r.last_error,
      conversationId: r.conversation_id,
    }),
  );
  const schedules = await database.read<{ id: string; prompt: string; state: string }>(
    "SELECT id, prompt, state FROM schedules",
  );
  const occurrences = (
    await database.read<{
      schedule_id: string;
      scheduled_for_ms: number | string;
      state: string;
      run_id: string | null;
    }>("SELECT schedule_id, scheduled_for_ms, state, run_id FROM schedule_occurrences")
  ).map((o) => ({
    scheduleId: o.schedule_id,
    scheduledForMs: Number(o.scheduled_for_ms),
    state: o.state,
    runId: o.run_id,
  }));
  const approvals = (
    await database.read<{
      id: string;
      run_id: string;
      tool_name: string;
      input: string;
      state: string;
      successor_run_id: string | null;
    }>("SELECT id, run_id, tool_name, input, state, successor_run_id FROM approvals")
  ).map(
    (a): ApprovalRow => ({
      id: a.id,
      runId: a.run_id,
      toolName: a.tool_name,
      input: a.input,
      state: a.state,
      successorRunId: a.successor_run_id,
    }),
  );
  const tombstones = (
    await database.read<{ conversation_id: string; purged_at_ms: number | string }>(
      "SELECT conversation_id, purged_at_ms FROM conversation_tombstones",
    )
  ).map((t) => ({ conversationId: t.conversation_id, purgedAtMs: Number(t.purged_at_ms) }));
  const purgeLeftovers: Snapshot["purgeLeftovers"] = [];
  if (tombstones.length > 0) {
    const tables = (await database.conversationTables()).filter(
      (t) => t !== "conversation_tombstones" && t !== "outbox",
    );
    for (const table of tables) {
      const rows = await database.read<{ conversation_id: string; n: number | string }>(
        `SELECT conversation_id, count(*) AS n FROM ${table} WHERE conversation_id IN (SELECT conversation_id FROM conversation_tombstones) GROUP BY conversation_id`,
      );
      for (const row of rows)
        purgeLeftovers.push({ conversationId: row.conversation_id, table, rows: Number(row.n) });
    }
  }
  const children = (
    await database.read<{
      handle: string;
      parent_run_id: string;
      tool_call_id: string;
      conversation_id: string;
      task: string;
      state: string;
      result_run_id: string | null;
    }>(
      "SELECT handle, parent_run_id, tool_call_id, conversation_id, task, state, result_run_id FROM child_agents",
    )
  ).map(
    (c): ChildRow => ({
      handle: c.handle,
      parentRunId: c.parent_run_id,
      toolCallId: c.tool_call_id,
      conversationId: c.conversation_id,
      task: c.task,
      state: c.state,
      resultRunId: c.result_run_id,
    }),
  );
  const childResultKeys = (
    await database.read<{ idempotency_key: string }>(
      "SELECT idempotency_key FROM messages WHERE idempotency_key LIKE 'child-result:%'",
    )
  ).map((m) => m.idempotency_key);
  return {
    receipts,
    runs,
    outbox,
    schedules,
    occurrences,
    approvals,
    approvalResponses,
    tombstones,
    purgeLeftovers,
    children,
    childResultKeys,
  };
}

/**
 * The bot's visible messages in every chat the run used. `telegramAccounts`: the named Telegram
 * accounts' bots by name, whose chats are keyed `tg@<name>:…`.
 */
export function readChats(
  chats: readonly string[],
  telegram: TelegramEmulator,
  discord: DiscordEmulator,
  whatsapp: WhatsAppEmulator,
  matrix: MatrixEmulator,
  telegramAccounts: Readonly<Record<string, TelegramEmulator>> = {},
): Record<string, ChatMessage[]> {
  const result: Record<string, ChatMessage[]> = {};
  for (const chat of chats) {
    const [kind, id, thread] = chat.split(":");
    if (kind?.startsWith("tg@")) {
      const bot = telegramAccounts[kind.slice(3)];
      if (!bot) throw new Error(`readChats: no Telegram account ${kind.slice(3)} for chat ${chat}`);
      result[chat] = telegramBotMessages(bot, Number(id), thread);
    } else if (kind === "mx") {
      // Room ids hold a ":" (`!id:server`): the rest of the key is the room.
      result[chat] = matrix
        .shown(chat.slice(3), matrix.bot.userId)
        .map((m) => ({ id: m.eventId, text: m.body }));
    } else if (kind === "tg") {
      result[chat] = telegramBotMessages(telegram, Number(id), thread);
    } else if (kind === "dc") {
      result[chat] = discord
        .visibleMessages(id ?? "")
        .filter((m) => m.author.id === discord.bot.id)
        .map((m) => ({ id: m.id, text: m.content }));
    } else if (kind === "wa") {
      result[chat] = whatsapp.messages(id ?? "").map((m) => ({ id: m.wamid, text: m.text ?? "" }));
    }
  }
  return result;
}

function telegramBotMessages(
  bot: TelegramEmulator,
  chatId: number,
  thread: string | undefined,
): ChatMessage[] {
  return bot
    .messages(chatId)
    .filter(
      (m) => m.fromBot && (thread === undefined ? m.threadId === undefined : m.threadId === Number(thread)),
    )
    .sort((a, b) => a.messageId - b.messageId)
    .map((m) => ({ id: String(m.messageId), text: m.visibleText }));
}

/**
 * Every message the Telegram bots sent, in every chat each knows, with its author as the emulator
 * recorded it (a bot's messages live in its own view of its chats, as on Telegram).
 */
export function readTelegramSends(bots: readonly TelegramEmulator[]): BotSend[] {
  return bots.flatMap((bot) =>
    bot.chatIds().flatMap((chatId) =>
      bot
        .messages(chatId)
        .filter((m) => m.fromBot)
        .map((m) => ({
          channel: "telegram",
          account: String(m.fromId),
          chatId: String(chatId),
          messageId: String(m.messageId),
          text: m.visibleText,
        })),
    ),
  );
}

/** What WhatsApp's side shows once the run settled: webhooks still unanswered, and the sends it accepted. */
export function readWhatsApp(
  whatsapp: WhatsAppEmulator,
  chats: readonly string[],
): Pick<Snapshot, "unansweredWebhooks" | "whatsappAccepted"> {
  return {
    unansweredWebhooks: whatsapp
      .deliveries()
      .filter((d) => d.state !== "delivered")
      .map((d) => d.id),
    whatsappAccepted: chats
      .filter((chat) => chat.startsWith("wa:"))
      .flatMap((chat) => whatsapp.messages(chat.slice(3)))
      .flatMap((m) => (m.callbackData === undefined ? [] : [{ callbackData: m.callbackData, atMs: m.atMs }])),
  };
}

/** A send of a message (a reply), not of a status reaction (`m.reaction`, best effort, no outbox record). */
export function isMatrixReply(call: Pick<MatrixCall, "path">): boolean {
  return call.path.includes("/send/m.room.message/");
}

/** The bot's reply transactions as the homeserver stored them (its access token's). */
export function readMatrix(matrix: MatrixEmulator): Pick<Snapshot, "matrixTxns"> {
  const prefix = `${matrix.bot.token}\u0000send\u0000`;
  const sends = matrix.callsOf("send").filter((c) => c.userId === matrix.bot.userId && isMatrixReply(c));
  const replyTxns = new Set(sends.map((c) => c.txnId));
  return {
    matrixTxns: [...matrix.world.txns]
      .filter(([key]) => key.startsWith(prefix) && replyTxns.has(key.slice(prefix.length)))
      .map(([key, eventId]) => {
        const txnId = key.slice(prefix.length);
        return { txnId, eventId, repeats: sends.filter((c) => c.txnId === txnId && c.deduped).length };
      }),
  };
}

/**
 * The text that names the input a request answers: the last user message, or, right after a tool
 * result, the arguments of the call it answers (a run continued after an approval may come after
 * newer user messages; the scripted calls name their input id).
 */
export function answeredText(request: Pick<FakeLlmRequest, "messages" | "lastUserText">): string {
  if (request.messages.at(-1)?.role === "tool") {
    // A spawn's call names only its child's task (h…): the request continues the spawning input.
    const input = lastToolInputOf(request.messages);
    if (idsIn(input).some((id) => !id.startsWith("h"))) return input;
  }
  return request.lastUserText;
}

export function readModelLog(
  requests: readonly FakeLlmRequest[],
): Pick<Snapshot, "modelRequests" | "housekeepingCalls" | "modelSawText" | "modelRequestLog"> {
  const housekeeping = (r: FakeLlmRequest) => !r.stream && idsIn(answeredText(r)).length === 0;
  return {
    modelRequests: requests.filter((r) => !housekeeping(r)).map(answeredText),
    housekeepingCalls: requests.filter(housekeeping).length,
    modelSawText: requests.map((r) => JSON.stringify(r.messages)).join("\n"),
    modelRequestLog: requests.map((r) => ({ atMs: r.receivedAtMs, text: JSON.stringify(r.messages) })),
  };
}
