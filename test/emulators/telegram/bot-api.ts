/**
 * The Bot API methods the emulator implements, with Telegram's validation and error texts.
 * Each returns the JSON envelope Telegram would answer; the HTTP status equals error_code.
 */

import type { Message, User } from "grammy/types";
import type { ChatState, ChatStore, InlineButton, SentFile, VisibleMessage } from "./chats.ts";
import { parseTelegramHtml } from "./html.ts";
import type { BotCommandMenus } from "./menus.ts";
import type { RateLimiter } from "./rate-limit.ts";
import type { UpdateQueue } from "./update-queue.ts";

export const MAX_MESSAGE_CHARS = 4096;
export const MAX_CAPTION_CHARS = 1024;
/** What the Bot API server takes from bots: photos to 10 MB, other files to 50 MB. */
export const MAX_PHOTO_UPLOAD_BYTES = 10 * 1024 * 1024;
export const MAX_FILE_UPLOAD_BYTES = 50 * 1024 * 1024;

/** A multipart file part, read whole by the emulator's request parser. */
export interface UploadedFile {
  filename: string;
  bytes: Uint8Array;
}

const isUploadedFile = (value: unknown): value is UploadedFile =>
  typeof value === "object" && value !== null && (value as UploadedFile).bytes instanceof Uint8Array;

export type ApiAnswer =
  | { ok: true; result: unknown }
  | { ok: false; error_code: number; description: string; parameters?: Record<string, unknown> };

export type Params = Record<string, unknown>;

export interface WebhookRegistration {
  url: string;
  secretToken: string | undefined;
  allowedUpdates: string[] | undefined;
}

export interface BotApiDeps {
  bot: User;
  chats: ChatStore;
  queue: UpdateQueue;
  rateLimiter: () => RateLimiter | null;
  webhook: {
    current(): WebhookRegistration | null;
    set(registration: WebhookRegistration): void;
    clear(): void;
  };
  now: () => number;
  /** setMyCommands and its siblings. */
  menus: BotCommandMenus;
}

const CHAT_ACTIONS = new Set([
  "typing",
  "upload_photo",
  "record_video",
  "upload_video",
  "record_voice",
  "upload_voice",
  "upload_document",
  "choose_sticker",
  "find_location",
  "record_video_note",
  "upload_video_note",
]);

export function ok(result: unknown): ApiAnswer {
  return { ok: true, result };
}

export function apiError(
  errorCode: number,
  description: string,
  parameters?: Record<string, unknown>,
): ApiAnswer {
  return { ok: false, error_code: errorCode, description, ...(parameters ? { parameters } : {}) };
}

const badRequest = (detail: string) => apiError(400, `Bad Request: ${detail}`);

/** The emoji a bot may react with (Bot API ReactionTypeEmoji); any other is REACTION_INVALID. */
const REACTION_EMOJI = new Set(
  "👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳 ❤‍🔥 🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 🤨 😐 🍓 🍾 💋 🖕 😈 😴 😭 🤓 👻 👨‍💻 👀 🎃 🙈 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿 🆒 💘 🙉 🦄 😘 💊 🙊 😎 👾 🤷‍♂ 🤷 🤷‍♀ 😡".split(
    " ",
  ),
);

export class BotApi {
  constructor(private readonly deps: BotApiDeps) {}

  has(method: string): boolean {
    return method === "getUpdates" || Object.hasOwn(this.sync, method);
  }

  async call(method: string, params: Params, signal: AbortSignal): Promise<ApiAnswer> {
    if (method === "getUpdates") return await this.getUpdates(params, signal);
    const handler = Object.hasOwn(this.sync, method) ? this.sync[method] : undefined;
    return handler ? handler(params) : apiError(404, "Not Found");
  }

  private readonly sync: Record<string, (params: Params) => ApiAnswer> = {
    getMe: () => ok(this.deps.bot),
    setWebhook: (params) => this.setWebhook(params),
    deleteWebhook: (params) => {
      this.deps.webhook.clear();
      if (params.drop_pending_updates === true) this.deps.queue.dropAll();
      return ok(true);
    },
    getWebhookInfo: () => {
      const hook = this.deps.webhook.current();
      return ok({
        url: hook?.url ?? "",
        has_custom_certificate: false,
        pending_update_count: this.deps.queue.pendingIds().length,
        ...(hook?.allowedUpdates ? { allowed_updates: hook.allowedUpdates } : {}),
      });
    },
    sendMessage: (params) => this.sendMessage(params),
    sendPhoto: (params) => this.sendFile("sendPhoto", "photo", params),
    sendDocument: (params) => this.sendFile("sendDocument", "document", params),
    sendVoice: (params) => this.sendFile("sendVoice", "voice", params),
    editMessageText: (params) => this.editMessageText(params),
    deleteMessage: (params) => this.deleteMessage(params),
    setMessageReaction: (params) => this.setMessageReaction(params),
    sendChatAction: (params) => this.sendChatAction(params),
    sendMessageDraft: (params) => this.sendMessageDraft(params),
    answerCallbackQuery: (params) => this.answerCallbackQuery(params),
    setMyCommands: (params) => this.deps.menus.setMyCommands(params),
    getMyCommands: (params) => this.deps.menus.getMyCommands(params),
    deleteMyCommands: (params) => this.deps.menus.deleteMyCommands(params),
  };

  /** Callback query ids pushed and not yet answered; each may be answered once, as on Telegram. */
  readonly openCallbackQueries = new Set<string>();
  /** Every answered press: the query id and the toast text. */
  readonly callbackAnswers: Array<{ id: string; text: string }> = [];
  /** The bot's reactions now, by `<chat id>:<message id>` (setMessageReaction replaces them). */
  readonly reactions = new Map<string, string[]>();

  private answerCallbackQuery(params: Params): ApiAnswer {
    const id = typeof params.callback_query_id === "string" ? params.callback_query_id : "";
    if (!this.openCallbackQueries.delete(id)) {
      return badRequest("query is too old and response timeout expired or query ID is invalid");
    }
    const text = typeof params.text === "string" ? params.text : "";
    if (text.length > 200) return badRequest("MESSAGE_TOO_LONG");
    this.callbackAnswers.push({ id, text });
    return ok(true);
  }

  private async getUpdates(params: Params, signal: AbortSignal): Promise<ApiAnswer> {
    if (this.deps.webhook.current()) {
      return apiError(
        409,
        "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      );
    }
    const result = await this.deps.queue.getUpdates(
      {
        offset: optionalNumber(params.offset),
        limit: optionalNumber(params.limit),
        timeoutSeconds: optionalNumber(params.timeout),
        allowedUpdates: Array.isArray(params.allowed_updates)
          ? params.allowed_updates.map(String)
          : undefined,
      },
      signal,
    );
    if (result.kind === "conflict") {
      return apiError(
        409,
        "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
      );
    }
    return ok(result.updates);
  }

  private setWebhook(params: Params): ApiAnswer {
    const url = typeof params.url === "string" ? params.url : "";
    if (url === "") {
      this.deps.webhook.clear();
      return ok(true);
    }
    if (!/^https?:\/\//.test(url))
      return badRequest("bad webhook: An HTTPS URL must be provided for webhook");
    const secretToken = typeof params.secret_token === "string" ? params.secret_token : undefined;
    if (secretToken !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(secretToken)) {
      return badRequest("secret token contains unallowed characters");
    }
    if (params.drop_pending_updates === true) this.deps.queue.dropAll();
    const allowedUpdates = Array.isArray(params.allowed_updates)
      ? params.allowed_updates.map(String)
      : undefined;
    this.deps.queue.setAllowedUpdates(allowedUpdates);
    this.deps.webhook.set({ url, secretToken, allowedUpdates });
    return ok(true);
  }

  private sendMessage(params: Params): ApiAnswer {
    const target = this.resolveChat(params.chat_id);
    if ("ok" in target) return target;
    const text = typeof params.text === "string" ? params.text : "";
    if (text.trim() === "") return badRequest("message text is empty");
    const parsed = this.parseText(text, params.parse_mode);
    if (!parsed.ok) return parsed.answer;
    if (parsed.visibleText.length > MAX_MESSAGE_CHARS) return badRequest("message is too long");
    const thread = this.resolveThread(target, params.message_thread_id);
    if (thread.error) return thread.error;
    const reply = this.resolveReply(target, params);
    if (reply.error) return reply.error;
    const keyboard = parseKeyboard(params.reply_markup);
    if ("error" in keyboard) return keyboard.error;
    const limited = this.checkRateLimit("sendMessage", target);
    if (limited) return limited;

    const messageId = this.deps.chats.allocateMessageId(target.chat.id);
    const nowMs = this.deps.now();
    const raw = {
      message_id: messageId,
      from: this.deps.bot,
      chat: target.chat,
      date: Math.floor(nowMs / 1000),
      ...(thread.threadId === undefined
        ? {}
        : { message_thread_id: thread.threadId, is_topic_message: true }),
      ...(reply.message ? { reply_to_message: reply.message.raw } : {}),
      text: parsed.visibleText,
    } as unknown as Message;
    target.messages.set(messageId, {
      messageId,
      chatId: target.chat.id,
      threadId: thread.threadId,
      fromBot: true,
      fromId: this.deps.bot.id,
      text,
      parseMode: parsed.parseMode,
      visibleText: parsed.visibleText,
      replyToMessageId: reply.message?.messageId,
      sentAtMs: nowMs,
      previousVersions: [],
      raw,
      ...(keyboard.buttons ? { buttons: keyboard.buttons } : {}),
    });
    return ok(raw);
  }

  /**
   * sendPhoto / sendDocument / sendVoice with a multipart upload (`attach://<part>` or the part
   * under the field's own name). A file_id or URL is refused: the emulator records uploads only.
   */
  private sendFile(method: SentFile["method"], field: string, params: Params): ApiAnswer {
    const target = this.resolveChat(params.chat_id);
    if ("ok" in target) return target;
    const reference = params[field];
    const upload =
      typeof reference === "string" && reference.startsWith("attach://")
        ? params[reference.slice("attach://".length)]
        : reference;
    if (!isUploadedFile(upload)) return badRequest(`there is no ${field} in the request`);
    if (upload.bytes.byteLength === 0) return badRequest("file must be non-empty");
    const maxBytes = method === "sendPhoto" ? MAX_PHOTO_UPLOAD_BYTES : MAX_FILE_UPLOAD_BYTES;
    if (upload.bytes.byteLength > maxBytes) return apiError(413, "Request Entity Too Large");
    const caption = typeof params.caption === "string" ? params.caption : "";
    const parsed = this.parseText(caption, params.parse_mode);
    if (!parsed.ok) return parsed.answer;
    if (parsed.visibleText.length > MAX_CAPTION_CHARS) return badRequest("message caption is too long");
    const thread = this.resolveThread(target, params.message_thread_id);
    if (thread.error) return thread.error;
    const reply = this.resolveReply(target, params);
    if (reply.error) return reply.error;
    const limited = this.checkRateLimit(method, target);
    if (limited) return limited;

    const messageId = this.deps.chats.allocateMessageId(target.chat.id);
    const nowMs = this.deps.now();
    const fileId = `emulated-${method}-${target.chat.id}-${messageId}`;
    const described = { file_id: fileId, file_unique_id: `${fileId}-u`, file_size: upload.bytes.byteLength };
    const attachment =
      method === "sendPhoto"
        ? { photo: [{ ...described, width: 1, height: 1 }] }
        : method === "sendVoice"
          ? { voice: { ...described, duration: 1 } }
          : { document: { ...described, file_name: upload.filename } };
    const raw = {
      message_id: messageId,
      from: this.deps.bot,
      chat: target.chat,
      date: Math.floor(nowMs / 1000),
      ...(thread.threadId === undefined
        ? {}
        : { message_thread_id: thread.threadId, is_topic_message: true }),
      ...(reply.message ? { reply_to_message: reply.message.raw } : {}),
      ...attachment,
      ...(caption === "" ? {} : { caption: parsed.visibleText }),
    } as unknown as Message;
    target.messages.set(messageId, {
      messageId,
      chatId: target.chat.id,
      threadId: thread.threadId,
      fromBot: true,
      fromId: this.deps.bot.id,
      text: caption,
      parseMode: parsed.parseMode,
      visibleText: parsed.visibleText,
      replyToMessageId: reply.message?.messageId,
      sentAtMs: nowMs,
      previousVersions: [],
      raw,
      file: { method, filename: upload.filename, bytes: upload.bytes },
    });
    return ok(raw);
  }

  private editMessageText(params: Params): ApiAnswer {
    if (params.inline_message_id !== undefined)
      return badRequest("inline messages are not supported by the emulator");
    const target = this.resolveChat(params.chat_id);
    if ("ok" in target) return target;
    const existing = target.messages.get(Number(params.message_id));
    if (!existing) return badRequest("message to edit not found");
    if (!existing.fromBot || existing.fromId !== this.deps.bot.id)
      return badRequest("message can't be edited");
    const text = typeof params.text === "string" ? params.text : "";
    if (text.trim() === "") return badRequest("message text is empty");
    const parsed = this.parseText(text, params.parse_mode);
    if (!parsed.ok) return parsed.answer;
    if (parsed.visibleText.length > MAX_MESSAGE_CHARS) return badRequest("message is too long");
    const keyboard = parseKeyboard(params.reply_markup);
    if ("error" in keyboard) return keyboard.error;
    if (
      text === existing.text &&
      parsed.parseMode === existing.parseMode &&
      JSON.stringify(keyboard.buttons) === JSON.stringify(existing.buttons)
    ) {
      return badRequest(
        "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
      );
    }
    const limited = this.checkRateLimit("editMessageText", target);
    if (limited) return limited;
    const nowMs = this.deps.now();
    existing.previousVersions.push({
      text: existing.text,
      parseMode: existing.parseMode,
      atMs: existing.sentAtMs,
    });
    existing.text = text;
    // As on Telegram, an edit without reply_markup removes the inline keyboard.
    if (keyboard.buttons) existing.buttons = keyboard.buttons;
    else delete existing.buttons;
    existing.parseMode = parsed.parseMode;
    existing.visibleText = parsed.visibleText;
    existing.sentAtMs = nowMs;
    existing.raw = {
      ...existing.raw,
      text: parsed.visibleText,
      edit_date: Math.floor(nowMs / 1000),
    } as Message;
    return ok(existing.raw);
  }

  private deleteMessage(params: Params): ApiAnswer {
    const target = this.resolveChat(params.chat_id);
    if ("ok" in target) return target;
    const messageId = Number(params.message_id);
    const existing = target.messages.get(messageId);
    if (!existing) return badRequest("message to delete not found");
    if (target.chat.type !== "private" && !existing.fromBot) {
      return badRequest("message can't be deleted");
    }
    target.messages.delete(messageId);
    target.deleted.push(existing);
    return ok(true);
  }

  private setMessageReaction(params: Params): ApiAnswer {
    const target = this.resolveChat(params.chat_id);
    if ("ok" in target) return target;
    const messageId = Number(params.message_id);
    if (!target.messages.has(messageId)) return badRequest("message to react not found");
    const reaction = Array.isArray(params.reaction) ? params.reaction : [];
    const emoji: string[] = [];
    for (const item of reaction) {
      const value = (item as { type?: unknown; emoji?: unknown } | null) ?? {};
      if (value.type !== "emoji" || typeof value.emoji !== "string" || !REACTION_EMOJI.has(value.emoji))
        return badRequest("REACTION_INVALID");
      emoji.push(value.emoji);
    }
    if (emoji.length > 1) return badRequest("REACTIONS_TOO_MANY");
    this.reactions.set(`${target.chat.id}:${messageId}`, emoji);
    return ok(true);
  }

  private sendChatAction(params: Params): ApiAnswer {
    const target = this.resolveChat(params.chat_id);
    if ("ok" in target) return target;
    const action = typeof params.action === "string" ? params.action : "";
    if (!CHAT_ACTIONS.has(action)) return badRequest("wrong parameter action in request");
    const thread = this.resolveThread(target, params.message_thread_id);
    if (thread.error) return thread.error;
    target.actions.push({ action, threadId: thread.threadId, atMs: this.deps.now() });
    return ok(true);
  }

  private sendMessageDraft(params: Params): ApiAnswer {
    const target = this.resolveChat(params.chat_id);
    if ("ok" in target) return target;
    if (target.chat.type !== "private") return badRequest("message drafts can be sent only to private chats");
    const draftId = Number(params.draft_id);
    if (!Number.isInteger(draftId) || draftId === 0) return badRequest("draft_id must be non-zero");
    const text = typeof params.text === "string" ? params.text : "";
    const parsed = this.parseText(text, params.parse_mode);
    if (!parsed.ok) return parsed.answer;
    if (parsed.visibleText.length > MAX_MESSAGE_CHARS) return badRequest("message is too long");
    target.drafts.set(draftId, parsed.visibleText);
    return ok(true);
  }

  private resolveChat(chatId: unknown): ChatState | ApiAnswer {
    const id = typeof chatId === "number" ? chatId : typeof chatId === "string" ? Number(chatId) : Number.NaN;
    const state = Number.isSafeInteger(id) ? this.deps.chats.get(id) : undefined;
    if (!state) return badRequest("chat not found");
    if (state.chat.type === "private" && this.deps.chats.isBlocked(state.chat.id)) {
      return apiError(403, "Forbidden: bot was blocked by the user");
    }
    return state;
  }

  private parseText(
    text: string,
    parseMode: unknown,
  ): { ok: true; visibleText: string; parseMode: string | undefined } | { ok: false; answer: ApiAnswer } {
    if (parseMode === undefined || parseMode === "")
      return { ok: true, visibleText: text, parseMode: undefined };
    if (parseMode === "HTML") {
      const parsed = parseTelegramHtml(text);
      return parsed.ok
        ? { ok: true, visibleText: parsed.visibleText, parseMode: "HTML" }
        : { ok: false, answer: apiError(400, parsed.description) };
    }
    if (parseMode === "MarkdownV2" || parseMode === "Markdown") {
      return { ok: true, visibleText: text, parseMode };
    }
    return { ok: false, answer: badRequest("unsupported parse_mode") };
  }

  private resolveThread(target: ChatState, threadParam: unknown): { threadId?: number; error?: ApiAnswer } {
    if (threadParam === undefined || threadParam === null) return {};
    const threadId = Number(threadParam);
    if (!target.topics.has(threadId)) return { error: badRequest("message thread not found") };
    return { threadId };
  }

  private resolveReply(target: ChatState, params: Params): { message?: VisibleMessage; error?: ApiAnswer } {
    const replyParameters = params.reply_parameters as
      | { message_id?: unknown; allow_sending_without_reply?: unknown }
      | undefined;
    const replyId = replyParameters?.message_id ?? params.reply_to_message_id;
    if (replyId === undefined) return {};
    const allowWithout =
      replyParameters?.allow_sending_without_reply === true || params.allow_sending_without_reply === true;
    const message = target.messages.get(Number(replyId));
    if (message) return { message };
    return allowWithout ? {} : { error: badRequest("message to be replied not found") };
  }

  private checkRateLimit(method: string, target: ChatState): ApiAnswer | null {
    const limiter = this.deps.rateLimiter();
    if (!limiter?.counts(method)) return null;
    const isGroup = target.chat.type === "group" || target.chat.type === "supergroup";
    const decision = limiter.admit(target.chat.id, isGroup);
    if (decision.allowed) return null;
    return apiError(429, `Too Many Requests: retry after ${decision.retryAfterSeconds}`, {
      retry_after: decision.retryAfterSeconds,
    });
  }
}

function optionalNumber(value: unknown): number | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  const number = Number(value);
  return Number.isFinite(number) ? number : undefined;
}

/** An inline keyboard as Telegram checks it: rows of buttons with text and 1–64 bytes of callback_data. */
function parseKeyboard(markup: unknown): { buttons: InlineButton[][] | undefined } | { error: ApiAnswer } {
  if (markup === undefined) return { buttons: undefined };
  const value = typeof markup === "string" ? (JSON.parse(markup) as unknown) : markup;
  const rows = (value as { inline_keyboard?: unknown })?.inline_keyboard;
  if (!Array.isArray(rows)) return { error: badRequest("can't parse reply keyboard markup JSON object") };
  const buttons: InlineButton[][] = [];
  for (const row of rows) {
    if (!Array.isArray(row))
      return { error: badRequest("can't parse inline keyboard button: row is not an array") };
    const parsed: InlineButton[] = [];
    for (const button of row as Array<{ text?: unknown; callback_data?: unknown }>) {
      if (typeof button?.text !== "string" || button.text === "")
        return { error: badRequest("can't parse inline keyboard button: Text must be non-empty") };
      const data = button.callback_data;
      if (typeof data !== "string" || Buffer.byteLength(data) < 1 || Buffer.byteLength(data) > 64)
        return { error: badRequest("BUTTON_DATA_INVALID") };
      parsed.push({ text: button.text, callbackData: data });
    }
    buttons.push(parsed);
  }
  return { buttons };
}
