/**
 * Outgoing calls: one attempt each, bounded by requestTimeoutMs, failures mapped through
 * errors.ts. No retries here: the outbox owns them and reads retryable/retryAfterMs.
 */

import type { Api } from "grammy";
import { GrammyError, InputFile } from "grammy";
import type { ReactionTypeEmoji } from "grammy/types";
import type { OutgoingFile, OutgoingMessage, SendReceipt } from "../types.ts";
import { callWithDeadline, type GrammySignal } from "./deadline.ts";
import { telegramFileMethod, uploadFilename } from "./send-file.ts";
import { decodeMessageId, decodeTarget } from "./target.ts";

export class TelegramSender {
  constructor(
    private readonly api: Api,
    private readonly requestTimeoutMs: number,
  ) {}

  async send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    const { chatId, threadId } = decodeTarget(target);
    const replyTo = message.replyTo === undefined ? undefined : decodeMessageId(message.replyTo);
    const sent = await this.call("sendMessage", (signal) =>
      this.api.sendMessage(
        chatId,
        message.text,
        {
          ...(message.format === "rich" ? { parse_mode: "HTML" as const } : {}),
          ...(threadId === undefined ? {} : { message_thread_id: threadId }),
          ...(message.buttons ? { reply_markup: inlineKeyboard(message.buttons) } : {}),
          // The replied-to message may be gone by the time the answer is ready; answer anyway.
          ...(replyTo === undefined
            ? {}
            : { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }),
        },
        signal,
      ),
    );
    return { messageIds: [String(sent.message_id)] };
  }

  /** Uploads `file` (multipart) by the method its type calls for, with its caption. */
  async sendFile(target: string, file: OutgoingFile): Promise<SendReceipt> {
    const { chatId, threadId } = decodeTarget(target);
    const replyTo = file.replyTo === undefined ? undefined : decodeMessageId(file.replyTo);
    const input = new InputFile(file.bytes, uploadFilename(file.filename));
    const options = {
      ...(file.caption === "" ? {} : { caption: file.caption }),
      ...(file.caption !== "" && file.format === "rich" ? { parse_mode: "HTML" as const } : {}),
      ...(threadId === undefined ? {} : { message_thread_id: threadId }),
      ...(replyTo === undefined
        ? {}
        : { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }),
    };
    const method = telegramFileMethod(file.mimeType);
    const sent = await this.call(method, (signal): Promise<{ message_id: number }> => {
      if (method === "sendPhoto") return this.api.sendPhoto(chatId, input, options, signal);
      if (method === "sendVoice") return this.api.sendVoice(chatId, input, options, signal);
      return this.api.sendDocument(chatId, input, options, signal);
    });
    return { messageIds: [String(sent.message_id)] };
  }

  /** Editing to the current text is a success, so a repeated edit after an unknown outcome is safe. */
  async edit(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
    const { chatId } = decodeTarget(target);
    const id = decodeMessageId(messageId);
    await this.call("editMessageText", async (signal) => {
      // Without reply_markup, Telegram removes the message's inline keyboard.
      const options = {
        ...(message.format === "rich" ? { parse_mode: "HTML" as const } : {}),
        ...(message.buttons ? { reply_markup: inlineKeyboard(message.buttons) } : {}),
      };
      await this.api
        .editMessageText(chatId, id, message.text, options, signal)
        .catch(ignoreApiError("message is not modified"));
    });
  }

  /** Deleting a message that is already gone is a success, so a repeated delete is safe. */
  async delete(target: string, messageId: string): Promise<void> {
    const { chatId } = decodeTarget(target);
    const id = decodeMessageId(messageId);
    await this.call("deleteMessage", async (signal) => {
      await this.api.deleteMessage(chatId, id, signal).catch(ignoreApiError("message to delete not found"));
    });
  }

  /** Replaces the bot's reaction on the message with `emoji` (one of Telegram's reaction emoji). */
  async react(target: string, messageId: string, emoji: ReactionTypeEmoji["emoji"]): Promise<void> {
    const { chatId } = decodeTarget(target);
    const id = decodeMessageId(messageId);
    await this.call("setMessageReaction", (signal) =>
      this.api.setMessageReaction(chatId, id, [{ type: "emoji", emoji }], {}, signal),
    );
  }

  /** Telegram's sendMessageDraft (Bot API 9.3): private chats only; an ephemeral animated preview. */
  async draft(target: string, draftId: number, text: string): Promise<void> {
    const { chatId } = decodeTarget(target);
    await this.call("sendMessageDraft", (signal) =>
      this.api.sendMessageDraft(chatId, draftId, text, {}, signal),
    );
  }

  /** Answers a button press (stops the client's spinner), with `text` as a short toast. */
  async answerCallback(queryId: string, text: string): Promise<void> {
    await this.call("answerCallbackQuery", async (signal) => {
      await this.api
        .answerCallbackQuery(queryId, { text: text.slice(0, 200) }, signal)
        .catch(ignoreApiError("query is too old"));
    });
  }

  async typing(target: string): Promise<void> {
    const { chatId, threadId } = decodeTarget(target);
    await this.call("sendChatAction", (signal) =>
      this.api.sendChatAction(
        chatId,
        "typing",
        threadId === undefined ? {} : { message_thread_id: threadId },
        signal,
      ),
    );
  }

  private async call<T>(method: string, run: (signal: GrammySignal) => Promise<T>): Promise<T> {
    return await callWithDeadline(method, this.requestTimeoutMs, run);
  }
}

/** Swallows the 400 whose description contains `fragment` (the goal is already met); rethrows the rest. */
function ignoreApiError(fragment: string): (error: unknown) => void {
  return (error) => {
    if (error instanceof GrammyError && error.error_code === 400 && error.description.includes(fragment))
      return;
    throw error;
  };
}

function inlineKeyboard(rows: NonNullable<OutgoingMessage["buttons"]>) {
  return {
    inline_keyboard: rows.map((row) => row.map((b) => ({ text: b.label, callback_data: b.data }))),
  };
}
