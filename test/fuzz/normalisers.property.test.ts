/**
 * Property tests for the inbound normalisers: whatever a platform (or an attacker who can reach a
 * webhook) sends, parsing never throws, and anything it turns into a message is one ingress
 * accepts. A message ingress would refuse as malformed is a parser bug: it was dropped silently.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import type { Update } from "grammy/types";
import { type DiscordMessageFacts, toInbound } from "../../channels/discord/index.ts";
import { parseSlackEvent, type ParseContext as SlackParseContext } from "../../channels/slack/parse.ts";
import { parseUpdate, type ParseContext as TelegramParseContext } from "../../channels/telegram/parse.ts";
import { type InboundAttachment, inboundMessageSchema } from "../../channels/types.ts";
import {
  botUser,
  editedMessageUpdate,
  groupChat,
  message,
  messageUpdate,
  privateChat,
  supergroupChat,
  user,
} from "../emulators/telegram/index.ts";
import { hostilePayload, hostileString } from "./support/mutate.ts";

// A fixed seed keeps CI deterministic: a random seed once drew a case whose shrinking overflowed
// fast-check's stack. Set FUZZ_SEED to explore other seeds locally.
fc.configureGlobal({ seed: Number(process.env.FUZZ_SEED ?? 20_261_130) });

const RUNS = Number(process.env.FUZZ_RUNS ?? 1500);

/** Fails with ingress's own complaint, so a counterexample says which field was wrong. */
function expectIngressAccepts(message: unknown): void {
  const parsed = inboundMessageSchema.safeParse(message);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`ingress would drop this parsed message as malformed (${issues})`);
  }
}

describe("telegram parseUpdate", () => {
  const bot = botUser(555000111, "switchboard_bot", "Switchboard");
  const context: TelegramParseContext = {
    account: "555000111",
    botId: bot.id,
    botUsername: "switchboard_bot",
    groupSessions: "per-user",
  };
  const alice = user(1001, "Alice", { last_name: "Liddell", username: "alice" });
  const forum = supergroupChat(-1009876543210, "Support", { isForum: true });
  const first = message({ chat: privateChat(alice), from: alice, messageId: 10, text: "hi there" });
  const bases = [
    messageUpdate(first, 1),
    messageUpdate(
      message({
        chat: groupChat(-5001, "Team"),
        from: alice,
        messageId: 11,
        text: "@switchboard_bot what now /help@switchboard_bot",
        replyTo: first,
      }),
      2,
    ),
    messageUpdate(
      message({
        chat: groupChat(-5002, "Others"),
        from: alice,
        messageId: 15,
        text: "Switchboard, hello",
        entities: [{ type: "text_mention", offset: 0, length: 11, user: bot }],
      }),
      7,
    ),
    messageUpdate(
      message({
        chat: forum,
        from: alice,
        messageId: 12,
        text: "in a topic",
        topic: { threadId: 7, name: "Bugs" },
      }),
      3,
    ),
    messageUpdate(
      message({
        chat: privateChat(alice),
        from: alice,
        messageId: 13,
        caption: "a photo",
        media: { kind: "photo", fileId: "AgACphoto", sizes: [{ width: 90, height: 90, fileSize: 1200 }] },
      }),
      4,
    ),
    messageUpdate(
      message({
        chat: privateChat(alice),
        from: alice,
        messageId: 14,
        media: {
          kind: "document",
          fileId: "BQACdoc",
          fileName: "a.pdf",
          mimeType: "application/pdf",
          fileSize: 9,
        },
      }),
      5,
    ),
    { ...editedMessageUpdate(first, "hi there, edited", 1_767_225_700), update_id: 6 },
  ];

  test("never throws, and every message it produces passes the ingress schema", () => {
    fc.assert(
      fc.property(hostilePayload(bases), (update) => {
        const result = parseUpdate(update as Update, context);
        if (result.kind === "message") expectIngressAccepts(result.message);
        else expect(result.reason.length).toBeGreaterThan(0);
      }),
      { numRuns: RUNS },
    );
  });

  test("an unknown update kind is skipped with its name", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("poll", "chat_member", "my_chat_member", "business_message"),
        fc.jsonValue({ maxDepth: 2 }),
        (kind, value) => {
          const result = parseUpdate({ update_id: 9, [kind]: value } as unknown as Update, context);
          expect(result).toEqual({ kind: "skip", reason: `unsupported update kind "${kind}"` });
        },
      ),
      { numRuns: 100 },
    );
  });

  test("any callback_query is skipped with a reason or becomes a valid button press, never a throw", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), (value) => {
        const result = parseUpdate({ update_id: 9, callback_query: value } as unknown as Update, context);
        if (result.kind === "message") {
          expect(inboundMessageSchema.safeParse(result.message).success).toBe(true);
          expect(result.message.action).toBeDefined();
        } else expect(typeof result.reason).toBe("string");
      }),
      { numRuns: 200 },
    );
  });
});

describe("slack parseSlackEvent", () => {
  const context: SlackParseContext = {
    account: "T061EG9R6:A0PNCHHK2",
    botUserId: "U0LAN0Z89",
    botId: "B0LAN0Z89",
    allowOtherBots: true,
    receivedAtMs: 1_700_000_000_000,
  };
  const fixtures = join(import.meta.dir, "..", "channels", "slack", "fixtures");
  const bases = [
    "app_mention",
    "app_mention_message_twin",
    "bot_message",
    "dm",
    "file_share",
    "message_changed",
    "thread_reply",
  ].map((name) => JSON.parse(readFileSync(join(fixtures, `${name}.json`), "utf8")) as unknown);

  test("never throws, and every message it produces passes the ingress schema", () => {
    fc.assert(
      fc.property(hostilePayload(bases), (body) => {
        const result = parseSlackEvent(body, context);
        if (result.kind === "message") expectIngressAccepts(result.message);
      }),
      { numRuns: RUNS },
    );
  });
});

describe("discord toInbound", () => {
  // Facts come from discord.js, which has already typed the payload: ids are snowflakes and
  // numbers are numbers. What a user controls is the content, names, mentions and attachments.
  const BOT = "900000000000000001";
  const snowflake = fc.bigInt({ min: 1n << 22n, max: (1n << 63n) - 1n }).map(String);
  const attachment: fc.Arbitrary<InboundAttachment> = fc.record(
    {
      kind: fc.constantFrom("photo", "file", "audio", "video", "sticker", "other"),
      ref: fc.webUrl(),
      name: hostileString,
      mediaType: fc.string({ maxLength: 30 }),
      sizeBytes: fc.nat(),
    },
    { requiredKeys: ["kind", "ref"] },
  );
  const facts: fc.Arbitrary<DiscordMessageFacts> = fc.record(
    {
      id: snowflake,
      channelId: snowflake,
      place: fc.constantFrom("dm", "channel", "thread"),
      author: fc.record({
        id: fc.oneof(snowflake, fc.constant(BOT)),
        name: fc.string({ maxLength: 32 }),
        isBot: fc.boolean(),
      }),
      isSystem: fc.boolean(),
      content: fc.oneof(
        hostileString,
        fc.constant(`<@${BOT}> hello`),
        snowflake.map((id) => `<@!${BOT}>, ask <@${id}>`),
      ),
      mentionedUsers: fc
        .array(fc.tuple(fc.oneof(snowflake, fc.constant(BOT)), fc.string({ maxLength: 32 })), {
          maxLength: 3,
        })
        .map((pairs) => new Map(pairs)),
      replyTo: fc.record(
        { messageId: snowflake, authorId: fc.oneof(snowflake, fc.constant(BOT)) },
        { requiredKeys: ["messageId"] },
      ),
      botOwnsOrJoinedThread: fc.boolean(),
      attachments: fc.array(attachment, { maxLength: 10 }),
      createdAtMs: fc.integer({ min: 1_420_070_400_000, max: 4_102_444_800_000 }),
    },
    {
      requiredKeys: [
        "id",
        "channelId",
        "place",
        "author",
        "isSystem",
        "content",
        "mentionedUsers",
        "botOwnsOrJoinedThread",
        "attachments",
        "createdAtMs",
      ],
    },
  );

  test("never throws, and every message it produces passes the ingress schema", () => {
    fc.assert(
      fc.property(
        facts,
        fc.constantFrom("shared", "per-user" as const),
        fc.boolean(),
        (f, groupSessions, allowBots) => {
          const result = toInbound(f, { botUserId: BOT, groupSessions, allowBots });
          if (result.kind === "message") expectIngressAccepts(result.message);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
