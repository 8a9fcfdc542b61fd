/**
 * What each chat looks like to its members: visible messages (edits applied, deletions removed),
 * forum topics, drafts and chat actions. Message ids are allocated per chat, shared between users'
 * messages and the bot's, as in Telegram.
 */
import type { Chat, Message } from "grammy/types";

export interface MessageVersion {
  text: string;
  parseMode: string | undefined;
  atMs: number;
}

export interface VisibleMessage {
  messageId: number;
  chatId: number;
  threadId: number | undefined;
  fromBot: boolean;
  fromId: number;
  /** Text as sent, markup included when parseMode is set. */
  text: string;
  parseMode: string | undefined;
  /** What a member sees: markup removed, entities decoded. */
  visibleText: string;
  replyToMessageId: number | undefined;
  sentAtMs: number;
  /** Earlier versions, oldest first; empty when never edited. */
  previousVersions: MessageVersion[];
  /** The Bot API message object last returned or received for it. */
  raw: Message;
  /** The file a sendPhoto / sendDocument / sendVoice carried (its caption is `text`). */
  file?: SentFile;
  /** Inline keyboard buttons (rows) under the bot's message; absent when none. */
  buttons?: InlineButton[][];
}

export interface SentFile {
  method: "sendPhoto" | "sendDocument" | "sendVoice";
  filename: string;
  bytes: Uint8Array;
}

export interface InlineButton {
  text: string;
  callbackData: string;
}

export interface ChatState {
  chat: Chat;
  nextMessageId: number;
  messages: Map<number, VisibleMessage>;
  deleted: VisibleMessage[];
  topics: Map<number, string>;
  /** Current sendMessageDraft text per draft_id. */
  drafts: Map<number, string>;
  actions: { action: string; threadId: number | undefined; atMs: number }[];
}

export class ChatStore {
  private readonly chats = new Map<number, ChatState>();
  private readonly blocked = new Set<number>();

  remember(chat: Chat): ChatState {
    let state = this.chats.get(chat.id);
    if (!state) {
      state = {
        chat,
        nextMessageId: 1,
        messages: new Map(),
        deleted: [],
        topics: new Map(),
        drafts: new Map(),
        actions: [],
      };
      this.chats.set(chat.id, state);
    }
    return state;
  }

  get(chatId: number): ChatState | undefined {
    return this.chats.get(chatId);
  }

  ids(): number[] {
    return [...this.chats.keys()];
  }

  allocateMessageId(chatId: number): number {
    const state = this.chats.get(chatId);
    if (!state) throw new Error(`chat ${chatId} is unknown to the emulator`);
    const id = state.nextMessageId;
    state.nextMessageId += 1;
    return id;
  }

  /** Records a message a user (or another bot) wrote, as it appears in the chat. */
  recordIncoming(msg: Message, atMs: number): void {
    const state = this.remember(msg.chat);
    state.nextMessageId = Math.max(state.nextMessageId, msg.message_id + 1);
    const threadId = msg.is_topic_message ? msg.message_thread_id : undefined;
    if (threadId !== undefined && !state.topics.has(threadId))
      state.topics.set(threadId, `topic ${threadId}`);
    const reply = msg.reply_to_message;
    if (reply) {
      state.nextMessageId = Math.max(state.nextMessageId, reply.message_id + 1);
      const created = (reply as { forum_topic_created?: { name: string } }).forum_topic_created;
      if (created) state.topics.set(reply.message_id, created.name);
    }
    const text = msg.text ?? msg.caption ?? "";
    state.messages.set(msg.message_id, {
      messageId: msg.message_id,
      chatId: msg.chat.id,
      threadId,
      fromBot: msg.from?.is_bot ?? false,
      fromId: msg.from?.id ?? msg.chat.id,
      text,
      parseMode: undefined,
      visibleText: text,
      replyToMessageId: reply && reply.message_id !== threadId ? reply.message_id : undefined,
      sentAtMs: atMs,
      previousVersions: [],
      raw: msg,
    });
  }

  addTopic(chatId: number, threadId: number, name: string): void {
    const state = this.chats.get(chatId);
    if (!state) throw new Error(`chat ${chatId} is unknown to the emulator`);
    state.topics.set(threadId, name);
    state.nextMessageId = Math.max(state.nextMessageId, threadId + 1);
  }

  block(userId: number): void {
    this.blocked.add(userId);
  }

  isBlocked(chatId: number): boolean {
    return this.blocked.has(chatId);
  }

  visibleMessages(chatId: number): VisibleMessage[] {
    const state = this.chats.get(chatId);
    return state ? [...state.messages.values()].sort((a, b) => a.messageId - b.messageId) : [];
  }
}
