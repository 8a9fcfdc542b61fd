import { describe, expect, test } from "bun:test";
import type { Update } from "grammy/types";
import { parseTelegramConfig } from "../../../channels/telegram/config.ts";
import { type ParseContext, parseUpdate } from "../../../channels/telegram/parse.ts";
import { decodeTarget } from "../../../channels/telegram/target.ts";
import { inboundMessageSchema } from "../../../channels/types.ts";
import {
  botUser,
  editedMessageUpdate,
  groupChat,
  message,
  messageUpdate,
  privateChat,
  supergroupChat,
  type UpdateBody,
  user,
} from "../../emulators/telegram/index.ts";

const BOT = botUser(555000111, "switchboard_bot", "Switchboard");
const context: ParseContext = {
  account: "555000111",
  botId: BOT.id,
  botUsername: "switchboard_bot",
  groupSessions: "shared",
};
const alice = user(1001, "Alice", { last_name: "Liddell", username: "alice" });
const helperBot = botUser(777, "helper_bot", "Helper");
const group = supergroupChat(-1001234567890, "Engineering");
const forum = supergroupChat(-1009876543210, "Support", { isForum: true });
const DATE = 1_767_225_600;

function withId(body: UpdateBody, updateId = 424_242): Update {
  return { ...body, update_id: updateId } as Update;
}

function parsed(body: UpdateBody, ctx: ParseContext = context) {
  const result = parseUpdate(withId(body), ctx);
  if (result.kind !== "message") throw new Error(`expected a message, got skip: ${result.reason}`);
  return result.message;
}

describe("parseUpdate", () => {
  test("private text message", () => {
    const msg = message({
      chat: privateChat(alice),
      from: alice,
      messageId: 12,
      dateSeconds: DATE,
      text: "hi",
    });
    expect(parsed(messageUpdate(msg))).toEqual({
      channel: "telegram",
      account: "555000111",
      updateKey: "424242",
      principal: { id: "1001", name: "Alice Liddell", isBot: false },
      conversationKey: "tg:555000111:dm:1001",
      replyTarget: "1001",
      surface: "dm",
      where: { chat: "1001" },
      text: "hi",
      messageId: "12",
      addressedToBot: true,
      attachments: [],
      receivedAtMs: DATE * 1000,
    });
  });

  test("group message without mention is not addressed; with @mention (any case) it is", () => {
    const plain = parsed(messageUpdate(message({ chat: group, from: alice, messageId: 5, text: "lunch?" })));
    expect(plain).toMatchObject({
      surface: "group",
      addressedToBot: false,
      conversationKey: "tg:555000111:chat:-1001234567890",
      replyTarget: "-1001234567890",
    });
    const mention = parsed(
      messageUpdate(
        message({ chat: group, from: alice, messageId: 6, text: "@Switchboard_Bot summarise please" }),
      ),
    );
    expect(mention.addressedToBot).toBe(true);
    const otherMention = parsed(
      messageUpdate(message({ chat: group, from: alice, messageId: 7, text: "ask @helper_bot" })),
    );
    expect(otherMention.addressedToBot).toBe(false);
  });

  test("text_mention of the bot and commands addressed to it", () => {
    const textMention = message({
      chat: group,
      from: alice,
      messageId: 8,
      text: "Switchboard, help",
      entities: [{ type: "text_mention", offset: 0, length: 11, user: BOT }],
    });
    expect(parsed(messageUpdate(textMention)).addressedToBot).toBe(true);
    const mine = message({ chat: group, from: alice, messageId: 9, text: "/reset@switchboard_bot now" });
    expect(parsed(messageUpdate(mine)).addressedToBot).toBe(true);
    const bare = message({ chat: groupChat(-55, "Old group"), from: alice, messageId: 10, text: "/status" });
    expect(parsed(messageUpdate(bare)).addressedToBot).toBe(true);
    const theirs = message({ chat: group, from: alice, messageId: 11, text: "/reset@helper_bot" });
    expect(parsed(messageUpdate(theirs)).addressedToBot).toBe(false);
  });

  test("a reply to one of the bot's messages is addressed and carries replyTo", () => {
    const botsMessage = message({ chat: group, from: BOT, messageId: 40, text: "Here is the summary" });
    const reply = message({
      chat: group,
      from: alice,
      messageId: 41,
      text: "thanks, more detail?",
      replyTo: botsMessage,
    });
    const inbound = parsed(messageUpdate(reply));
    expect(inbound).toMatchObject({ addressedToBot: true, replyTo: "40", messageId: "41" });
    const toHuman = message({ chat: group, from: alice, messageId: 42, text: "agreed", replyTo: reply });
    expect(parsed(messageUpdate(toHuman))).toMatchObject({ addressedToBot: false, replyTo: "41" });
  });

  test("forum topic: its own conversation and target; the implicit topic reply is not a reply", () => {
    const inTopic = message({
      chat: forum,
      from: alice,
      messageId: 101,
      text: "deploy failed",
      topic: { threadId: 88, name: "Incidents", createdBy: BOT },
    });
    const inbound = parsed(messageUpdate(inTopic));
    expect(inbound).toMatchObject({
      surface: "thread",
      conversationKey: "tg:555000111:chat:-1009876543210:topic:88",
      roomKey: "tg:555000111:chat:-1009876543210",
      replyTarget: "-1009876543210:88",
      addressedToBot: false,
    });
    expect(inbound.replyTo).toBeUndefined();
    expect(decodeTarget(inbound.replyTarget)).toEqual({ chatId: -1009876543210, threadId: 88 });

    const botsAnswer = message({
      chat: forum,
      from: BOT,
      messageId: 102,
      text: "on it",
      topic: { threadId: 88, name: "Incidents" },
    });
    const replyInTopic = message({
      chat: forum,
      from: alice,
      messageId: 103,
      text: "status?",
      topic: { threadId: 88, name: "Incidents" },
      replyTo: botsAnswer,
    });
    expect(parsed(messageUpdate(replyInTopic))).toMatchObject({ addressedToBot: true, replyTo: "102" });
  });

  test("per-user group sessions append the user to the conversation key", () => {
    const msg = message({
      chat: forum,
      from: alice,
      messageId: 3,
      text: "x",
      topic: { threadId: 88, name: "T" },
    });
    const inbound = parsed(messageUpdate(msg), { ...context, groupSessions: "per-user" });
    expect(inbound.conversationKey).toBe("tg:555000111:chat:-1009876543210:topic:88:user:1001");
    expect(inbound.roomKey).toBe("tg:555000111:chat:-1009876543210");
    const dm = parsed(
      messageUpdate(message({ chat: privateChat(alice), from: alice, messageId: 4, text: "x" })),
      {
        ...context,
        groupSessions: "per-user",
      },
    );
    expect(dm.conversationKey).toBe("tg:555000111:dm:1001");
  });

  test("captions are the text; attachments carry metadata (largest photo, document, voice, audio, video, sticker)", () => {
    const photo = message({
      chat: group,
      from: alice,
      messageId: 20,
      caption: "@switchboard_bot what is this?",
      media: { kind: "photo", fileId: "AgACphoto" },
    });
    const inbound = parsed(messageUpdate(photo));
    expect(inbound.text).toBe("@switchboard_bot what is this?");
    expect(inbound.addressedToBot).toBe(true);
    expect(inbound.attachments).toEqual([
      { kind: "photo", ref: "AgACphoto-2", mediaType: "image/jpeg", sizeBytes: 120_000 },
    ]);

    const kinds = [
      {
        kind: "document",
        fileId: "BQAdoc",
        fileName: "report.pdf",
        mimeType: "application/pdf",
        fileSize: 52_000,
      },
      { kind: "voice", fileId: "AwAvoice", durationSeconds: 3, fileSize: 9_000 },
      { kind: "audio", fileId: "CQAaudio", durationSeconds: 200, title: "Song" },
      { kind: "video", fileId: "BAAvideo", width: 640, height: 360, durationSeconds: 10 },
      { kind: "sticker", fileId: "CAAsticker", emoji: "👍" },
    ] as const;
    const attachments = kinds.map(
      (media, index) =>
        parsed(
          messageUpdate(message({ chat: privateChat(alice), from: alice, messageId: 30 + index, media })),
        ).attachments,
    );
    expect(attachments).toEqual([
      [{ kind: "file", ref: "BQAdoc", name: "report.pdf", mediaType: "application/pdf", sizeBytes: 52_000 }],
      [{ kind: "voice", ref: "AwAvoice", mediaType: "audio/ogg", sizeBytes: 9_000, durationSeconds: 3 }],
      [{ kind: "audio", ref: "CQAaudio", name: "Song", mediaType: "audio/mpeg", durationSeconds: 200 }],
      [{ kind: "video", ref: "BAAvideo", mediaType: "video/mp4", durationSeconds: 10 }],
      [{ kind: "sticker", ref: "CAAsticker", mediaType: "image/webp", name: "👍" }],
    ]);
  });

  test("edited messages: keyed by chat, message and edit date, naming the message they edit", () => {
    const original = message({
      chat: privateChat(alice),
      from: alice,
      messageId: 50,
      dateSeconds: DATE,
      text: "helo",
    });
    const edit = editedMessageUpdate(original, "hello", DATE + 30);
    const inbound = parsed(edit);
    expect(inbound).toMatchObject({
      updateKey: `edit:1001:50:${DATE + 30}`,
      text: "hello",
      messageId: "50",
      edited: { messageId: "50" },
      receivedAtMs: (DATE + 30) * 1000,
    });
    expect(parsed(messageUpdate(original)).edited).toBeUndefined();
  });

  test("messages from bots are marked isBot", () => {
    const fromBot = message({ chat: group, from: helperBot, messageId: 60, text: "@switchboard_bot ping" });
    expect(parsed(messageUpdate(fromBot)).principal).toEqual({ id: "777", name: "Helper", isBot: true });
  });

  test("anonymous admins speak as the group", () => {
    const anonymous = message({
      chat: group,
      from: botUser(1087968824, "GroupAnonymousBot", "Group"),
      senderChat: group,
      messageId: 61,
      text: "announcement",
    });
    expect(parsed(messageUpdate(anonymous)).principal).toEqual({
      id: "-1001234567890",
      name: "Engineering",
      isBot: false,
    });
  });

  test("unknown update kinds, service messages and channel posts are skipped with a reason, never thrown", () => {
    const skips = [
      { callback_query: { id: "9", from: alice, chat_instance: "ci", data: "x" } },
      { my_chat_member: { chat: group, from: alice, date: DATE } },
      {
        message: { message_id: 70, date: DATE, chat: group, from: alice, pinned_message: { message_id: 1 } },
      },
      {
        message: {
          message_id: 71,
          date: DATE,
          chat: group,
          from: alice,
          location: { latitude: 1, longitude: 2 },
        },
      },
      {
        channel_post: {
          message_id: 1,
          date: DATE,
          chat: { id: -100777, type: "channel", title: "News" },
          text: "x",
        },
      },
      {},
    ].map((body) => parseUpdate(withId(body as UpdateBody), context));
    expect(skips).toEqual([
      { kind: "skip", reason: "callback query without its message" },
      { kind: "skip", reason: 'unsupported update kind "my_chat_member"' },
      { kind: "skip", reason: "message without text or media (pinned_message)" },
      { kind: "skip", reason: "message without text or media (location)" },
      { kind: "skip", reason: 'unsupported update kind "channel_post"' },
      { kind: "skip", reason: 'unsupported update kind "empty"' },
    ]);
  });
});

describe("parseUpdate: button presses", () => {
  const sent = {
    message_id: 77,
    date: DATE,
    chat: group,
    from: { id: 42, is_bot: true, first_name: "bot" },
    text: "Approval needed",
  };

  test("a callback query becomes the inbound shape with its data and query id, in the message's conversation", () => {
    const parsed = parseUpdate(
      withId({
        callback_query: { id: "q1", from: alice, message: sent, chat_instance: "ci", data: "ap:x" },
      } as UpdateBody),
      context,
    );
    expect(parsed.kind).toBe("message");
    const message = (parsed as { message: Record<string, unknown> }).message;
    expect(message).toMatchObject({
      channel: "telegram",
      principal: { id: String(alice.id), isBot: false },
      conversationKey: `tg:${context.account}:chat:${group.id}`,
      surface: "group",
      text: "",
      messageId: "77",
      addressedToBot: true,
      action: { data: "ap:x", interactionId: "q1" },
    });
    expect(inboundMessageSchema.safeParse(message).success).toBe(true);
  });

  test("a press without data or its message is skipped with a reason", () => {
    const noData = parseUpdate(
      withId({ callback_query: { id: "q2", from: alice, message: sent, chat_instance: "ci" } } as UpdateBody),
      context,
    );
    expect(noData).toEqual({ kind: "skip", reason: "callback query without data" });
  });
});

describe("parseTelegramConfig", () => {
  test("applies defaults for polling", () => {
    expect(parseTelegramConfig({ mode: "polling", token: "123:AAAAAAAAAAAAAAAAAAAAAAAAAAAA" })).toEqual({
      mode: "polling",
      token: "123:AAAAAAAAAAAAAAAAAAAAAAAAAAAA",
      apiRoot: "https://api.telegram.org",
      groupSessions: "shared",
      requestTimeoutMs: 10_000,
      pollTimeoutSeconds: 30,
    });
  });

  test("webhook mode requires url and secret; errors name fields, never the token", () => {
    const error = (() => {
      try {
        parseTelegramConfig({ mode: "webhook", token: "123:tooshort-secret" });
      } catch (e) {
        return e as Error & { code: string };
      }
      throw new Error("expected config_invalid");
    })();
    expect(error.code).toBe("config_invalid");
    expect(error.message).toContain("token:");
    expect(error.message).toContain("webhookUrl:");
    expect(error.message).toContain("webhookSecret:");
    expect(error.message).not.toContain("tooshort-secret");
    expect(() =>
      parseTelegramConfig({
        mode: "polling",
        token: "123:AAAAAAAAAAAAAAAAAAAAAAAA",
        apiRoot: "http://127.0.0.1:1/",
      }),
    ).toThrow("apiRoot: remove the trailing '/'");
  });
});
