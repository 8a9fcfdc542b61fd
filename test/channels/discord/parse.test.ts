import { describe, expect, test } from "bun:test";
import {
  type DiscordMessageFacts,
  deletionToInbound,
  editToInbound,
  type ParseResult,
  toInbound,
} from "../../../channels/discord/index.ts";

const BOT = "900000000000000001";
const USER = "100000000000000002";

function facts(overrides: Partial<DiscordMessageFacts> = {}): DiscordMessageFacts {
  return {
    id: "500000000000000003",
    channelId: "700000000000000004",
    place: "channel",
    author: { id: USER, name: "quinn", isBot: false },
    isSystem: false,
    content: "hello",
    mentionedUsers: new Map(),
    botOwnsOrJoinedThread: false,
    attachments: [],
    createdAtMs: 1_700_000_000_000,
    ...overrides,
  };
}

const context = { botUserId: BOT, groupSessions: "shared" as const, allowBots: false };

function message(result: ParseResult) {
  if (result.kind !== "message") throw new Error(`expected a message, skipped: ${result.reason}`);
  return result.message;
}

describe("toInbound: Discord message facts → InboundMessage", () => {
  test("skip reasons", () => {
    expect(toInbound(facts({ author: { id: BOT, name: "me", isBot: true } }), context)).toEqual({
      kind: "skip",
      reason: "own_message",
    });
    expect(toInbound(facts({ author: { id: USER, name: "r", isBot: true } }), context)).toEqual({
      kind: "skip",
      reason: "bot_author",
    });
    // Own messages stay skipped even when other bots are allowed.
    expect(
      toInbound(facts({ author: { id: BOT, name: "me", isBot: true } }), { ...context, allowBots: true }),
    ).toEqual({ kind: "skip", reason: "own_message" });
    expect(toInbound(facts({ isSystem: true }), context)).toEqual({ kind: "skip", reason: "system_message" });
    expect(toInbound(facts({ content: "   " }), context)).toEqual({ kind: "skip", reason: "empty" });
    // Only the mention, nothing said: empty too.
    expect(
      toInbound(facts({ content: `<@${BOT}>`, mentionedUsers: new Map([[BOT, "switchboard"]]) }), context),
    ).toEqual({ kind: "skip", reason: "empty" });
  });

  test("an attachment without text is still a message", () => {
    const attachment = { kind: "photo" as const, ref: "https://cdn.example/cat.png", name: "cat.png" };
    const inbound = message(toInbound(facts({ content: "", attachments: [attachment] }), context));
    expect(inbound.text).toBe("");
    expect(inbound.attachments).toEqual([attachment]);
  });

  test("the addressing mention is dropped, other mentions read as @name, unknown ids stay", () => {
    const mentionedUsers = new Map([
      [BOT, "switchboard"],
      ["200000000000000005", "rita"],
    ]);
    const inbound = message(
      toInbound(
        facts({ content: `<@!${BOT}>, ask <@200000000000000005> and <@300000000000000006>`, mentionedUsers }),
        context,
      ),
    );
    expect(inbound.text).toBe("ask @rita and <@300000000000000006>");
    expect(inbound.addressedToBot).toBe(true);
  });

  test("a mention of the bot mid-sentence addresses it but stays readable", () => {
    const inbound = message(
      toInbound(
        facts({ content: `thanks <@${BOT}>!`, mentionedUsers: new Map([[BOT, "switchboard"]]) }),
        context,
      ),
    );
    expect(inbound.text).toBe("thanks @switchboard!");
    expect(inbound.addressedToBot).toBe(true);
  });

  test("addressedToBot: replies to the bot and threads it owns or joined", () => {
    const replyToBot = facts({ replyTo: { messageId: "1", authorId: BOT } });
    const replyToOther = facts({ replyTo: { messageId: "1", authorId: USER } });
    expect(message(toInbound(replyToBot, context)).addressedToBot).toBe(true);
    expect(message(toInbound(replyToOther, context))).toMatchObject({ addressedToBot: false, replyTo: "1" });
    expect(
      message(toInbound(facts({ place: "thread", botOwnsOrJoinedThread: true }), context)).addressedToBot,
    ).toBe(true);
    expect(message(toInbound(facts({ place: "thread" }), context)).addressedToBot).toBe(false);
    // Joining a thread only matters in threads.
    expect(message(toInbound(facts({ botOwnsOrJoinedThread: true }), context)).addressedToBot).toBe(false);
  });

  test("keys: DM per user, channel shared or per user, thread per thread; target is the channel", () => {
    const dm = message(toInbound(facts({ place: "dm" }), context));
    expect(dm).toMatchObject({
      surface: "dm",
      conversationKey: `dc:${BOT}:dm:${USER}`,
      addressedToBot: true,
    });
    const shared = message(toInbound(facts(), context));
    expect(shared).toMatchObject({ surface: "group", conversationKey: `dc:${BOT}:ch:700000000000000004` });
    const perUser = message(toInbound(facts(), { ...context, groupSessions: "per-user" }));
    expect(perUser.conversationKey).toBe(`dc:${BOT}:ch:700000000000000004:user:${USER}`);
    const thread = message(toInbound(facts({ place: "thread" }), { ...context, groupSessions: "per-user" }));
    expect(thread).toMatchObject({
      surface: "thread",
      conversationKey: `dc:${BOT}:thread:700000000000000004`,
    });
    for (const inbound of [dm, shared, perUser, thread])
      expect(inbound.replyTarget).toBe("dc:700000000000000004");
  });
});

describe("deletionToInbound: MESSAGE_DELETE → a withdrawal of the message", () => {
  const NOW = 1_700_000_100_000;
  const ids = { id: "500000000000000003", channelId: "700000000000000004", guildId: "800000000000000005" };

  test("a cached message: its own conversation, keyed by the delete, naming the deleted message", () => {
    const original = message(toInbound(facts(), context));
    const withdrawal = message(deletionToInbound({ ...ids, facts: facts() }, context, NOW));
    expect(withdrawal).toMatchObject({
      updateKey: `delete:${ids.id}`,
      withdrawn: { updateKey: original.updateKey },
      conversationKey: original.conversationKey,
      replyTarget: original.replyTarget,
      principal: original.principal,
      text: "",
      attachments: [],
      receivedAtMs: NOW,
    });
  });

  test("a message the bot never took in (its own, a system message) is skipped", () => {
    const own = facts({ author: { id: BOT, name: "me", isBot: true } });
    expect(deletionToInbound({ ...ids, facts: own }, context, NOW)).toEqual({
      kind: "skip",
      reason: "own_message",
    });
    expect(deletionToInbound({ ...ids, facts: facts({ isSystem: true }) }, context, NOW)).toEqual({
      kind: "skip",
      reason: "system_message",
    });
  });

  test("an uncached message (ids only): the channel's reply target, its author unknown", () => {
    const withdrawal = message(deletionToInbound({ ...ids, facts: null }, context, NOW));
    expect(withdrawal).toMatchObject({
      updateKey: `delete:${ids.id}`,
      withdrawn: { updateKey: ids.id },
      replyTarget: `dc:${ids.channelId}`,
      surface: "group",
      principal: { id: "unknown", isBot: false },
    });
    const inDm = message(deletionToInbound({ ...ids, guildId: null, facts: null }, context, NOW));
    expect(inDm.surface).toBe("dm");
  });
});

describe("editToInbound: MESSAGE_UPDATE → an edit of the message", () => {
  const EDITED_AT = 1_700_000_200_000;

  test("the new content in the message's conversation, keyed by message and edit time", () => {
    const original = message(toInbound(facts(), context));
    const edit = message(editToInbound(facts({ content: "hello there" }), EDITED_AT, context));
    expect(edit).toMatchObject({
      updateKey: `edit:${original.messageId}:${EDITED_AT}`,
      messageId: original.messageId,
      edited: { messageId: original.messageId },
      conversationKey: original.conversationKey,
      replyTarget: original.replyTarget,
      text: "hello there",
      receivedAtMs: EDITED_AT,
    });
    expect(original.edited).toBeUndefined();
  });

  test("what a message would skip, its edit skips", () => {
    const own = facts({ author: { id: BOT, name: "me", isBot: true } });
    expect(editToInbound(own, EDITED_AT, context)).toEqual({ kind: "skip", reason: "own_message" });
  });
});
