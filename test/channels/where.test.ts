/**
 * What bindings match on, as each channel's parser reports it in `where`: the chat (a thread's or
 * topic's is the chat that holds it), the Slack workspace, the Discord server and member's roles.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Update } from "grammy/types";
import { type DiscordMessageFacts, pressToInbound, toInbound } from "../../channels/discord/parse.ts";
import { parseSlackAction, parseSlackEvent } from "../../channels/slack/parse.ts";
import { parseUpdate } from "../../channels/telegram/parse.ts";
import { inboundMessageSchema } from "../../channels/types.ts";
import { message, messageUpdate, supergroupChat, user } from "../emulators/telegram/index.ts";

const inbound = (result: { kind: string; message?: unknown; reason?: string }) => {
  if (result.kind !== "message") throw new Error(`skipped: ${result.reason}`);
  return inboundMessageSchema.parse(result.message);
};

describe("telegram", () => {
  test("a forum topic's chat is its group", () => {
    const forum = supergroupChat(-1009876543210, "Support", { isForum: true });
    const alice = user(1001, "Alice");
    const body = messageUpdate(
      message({
        chat: forum,
        from: alice,
        messageId: 5,
        text: "hi",
        topic: { threadId: 88, name: "Incidents" },
      }),
    );
    const parsed = inbound(
      parseUpdate({ ...body, update_id: 1 } as Update, {
        account: "555",
        botId: 555,
        botUsername: "bot",
        groupSessions: "per-user",
      }),
    );
    expect(parsed.where).toEqual({ chat: "-1009876543210" });
  });
});

describe("slack", () => {
  const context = {
    account: "T061EG9R6:A0PNCHHK2",
    botUserId: "U0LAN0Z89",
    botId: "B0LAN0Z89",
    allowOtherBots: false,
    receivedAtMs: 1_800_000_000_000,
  };
  const fixture = (name: string) =>
    JSON.parse(readFileSync(join(import.meta.dir, "slack", "fixtures", `${name}.json`), "utf8")) as Record<
      string,
      unknown
    >;

  test("a thread's chat is its channel; the team is the envelope's", () => {
    const parsed = inbound(parseSlackEvent({ ...fixture("thread_reply"), team_id: "T0OTHER" }, context));
    expect(parsed.surface).toBe("thread");
    expect(parsed.where).toEqual({ chat: "C0LAN2Q65", team: "T0OTHER" });
  });

  test("without a team in the envelope, the bot's own workspace", () => {
    const { team_id: _team, ...body } = fixture("dm");
    expect(inbound(parseSlackEvent(body, context)).where).toEqual({ chat: "D0PNCRP9N", team: "T061EG9R6" });
  });

  test("a button press names its team and channel", () => {
    const press = {
      type: "block_actions",
      user: { id: "U061F7AUR", username: "sam" },
      team: { id: "T0ACME" },
      container: { message_ts: "1700000000.000100", channel_id: "C0SALES", thread_ts: "1700000000.000100" },
      actions: [{ type: "button", value: "approve:1", action_ts: "1700000001.000200" }],
    };
    expect(inbound(parseSlackAction(press, context)).where).toEqual({ chat: "C0SALES", team: "T0ACME" });
  });
});

describe("discord", () => {
  const context = { botUserId: "900", groupSessions: "shared" as const, allowBots: false };
  const facts = (overrides: Partial<DiscordMessageFacts>): DiscordMessageFacts => ({
    id: "500",
    channelId: "700",
    place: "channel",
    author: { id: "100", name: "quinn", isBot: false },
    isSystem: false,
    content: "hello",
    mentionedUsers: new Map(),
    botOwnsOrJoinedThread: true,
    attachments: [],
    createdAtMs: 1_700_000_000_000,
    ...overrides,
  });

  test("a guild channel message names the guild and the author's roles", () => {
    const parsed = inbound(toInbound(facts({ guildId: "123", roleIds: ["456", "789"] }), context));
    expect(parsed.where).toEqual({ chat: "700", guild: "123", roles: ["456", "789"] });
  });

  test("a thread's chat is its parent channel", () => {
    const parsed = inbound(
      toInbound(
        facts({ place: "thread", channelId: "701", parentChannelId: "700", guildId: "123", roleIds: [] }),
        context,
      ),
    );
    expect(parsed.where).toEqual({ chat: "700", guild: "123", roles: [] });
  });

  test("a DM names only its channel", () => {
    expect(inbound(toInbound(facts({ place: "dm", channelId: "800" }), context)).where).toEqual({
      chat: "800",
    });
  });

  test("a button press carries the presser's roles", () => {
    const parsed = inbound(
      pressToInbound(
        {
          interactionId: "1",
          customId: "approve:1",
          channelId: "700",
          place: "channel",
          guildId: "123",
          roleIds: ["456"],
          user: { id: "100", name: "quinn", isBot: false },
          messageId: "600",
          createdAtMs: 1_700_000_000_000,
        },
        context,
      ),
    );
    expect(parsed.where).toEqual({ chat: "700", guild: "123", roles: ["456"] });
  });
});
