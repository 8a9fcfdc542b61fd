import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type ParseContext, parseSlackAction, parseSlackEvent } from "../../../channels/slack/parse.ts";

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(import.meta.dir, "fixtures", `${name}.json`), "utf8"));
}

/** The fixtures come from workspace T061EG9R6, app A0PNCHHK2, bot user U0LAN0Z89 / bot B0LAN0Z89. */
const context: ParseContext = {
  account: "T061EG9R6:A0PNCHHK2",
  botUserId: "U0LAN0Z89",
  botId: "B0LAN0Z89",
  allowOtherBots: false,
  receivedAtMs: 1_800_000_000_000,
};

function parsedMessage(body: unknown, ctx: ParseContext = context) {
  const outcome = parseSlackEvent(body, ctx);
  if (outcome.kind !== "message") throw new Error(`expected a message, got skip: ${outcome.reason}`);
  return outcome.message;
}

describe("parseSlackEvent", () => {
  test("DM → dm surface keyed by user, top-level reply, addressed to the bot", () => {
    expect(parsedMessage(fixture("dm"))).toEqual({
      channel: "slack",
      account: "T061EG9R6:A0PNCHHK2",
      updateKey: "Ev0PV52K21",
      principal: { id: "U061F7AUR", isBot: false },
      conversationKey: "sl:T061EG9R6:A0PNCHHK2:dm:U061F7AUR",
      replyTarget: "D0PNCRP9N",
      surface: "dm",
      where: { chat: "D0PNCRP9N", team: "T061EG9R6" },
      text: "what's on my calendar today?",
      messageId: "1700000000.000100",
      addressedToBot: true,
      attachments: [],
      receivedAtMs: 1_700_000_000_000,
    });
  });

  test("top-level app_mention → thread conversation on the mention, leading mention stripped", () => {
    const message = parsedMessage(fixture("app_mention"));
    expect(message).toMatchObject({
      updateKey: "Ev0LAN670R",
      conversationKey: "sl:T061EG9R6:A0PNCHHK2:ch:C0LAN2Q65:thread:1700000100.000200",
      replyTarget: "C0LAN2Q65:1700000100.000200",
      surface: "thread",
      text: "is it everything a river should be?",
      addressedToBot: true,
      messageId: "1700000100.000200",
    });
    expect(message.replyTo).toBeUndefined();
  });

  test("the plain message twin of a mention is skipped (answered via app_mention)", () => {
    expect(parseSlackEvent(fixture("app_mention_message_twin"), context)).toEqual({
      kind: "skip",
      reason: "mention_answered_via_app_mention",
    });
  });

  test("a thread reply joins the mention's thread conversation and replies in the thread", () => {
    const message = parsedMessage(fixture("thread_reply"));
    expect(message).toMatchObject({
      updateKey: "Ev0LAN7000",
      conversationKey: "sl:T061EG9R6:A0PNCHHK2:ch:C0LAN2Q65:thread:1700000100.000200",
      // The thread's room is its channel: what historyScope "channel" searches.
      roomKey: "sl:T061EG9R6:A0PNCHHK2:ch:C0LAN2Q65",
      replyTarget: "C0LAN2Q65:1700000100.000200",
      surface: "thread",
      replyTo: "1700000100.000200",
      // The parent was written by a person, not the bot, and there is no mention.
      addressedToBot: false,
    });
  });

  test("a thread reply under the bot's own message is addressed to the bot", () => {
    const body = fixture("thread_reply");
    (body.event as Record<string, unknown>).parent_user_id = "U0LAN0Z89";
    expect(parsedMessage(body).addressedToBot).toBe(true);
  });

  test("a top-level channel message without mention → channel conversation, top-level reply", () => {
    const body = fixture("thread_reply");
    const event = body.event as Record<string, unknown>;
    delete event.thread_ts;
    delete event.parent_user_id;
    const message = parsedMessage(body);
    expect(message).toMatchObject({
      conversationKey: "sl:T061EG9R6:A0PNCHHK2:ch:C0LAN2Q65",
      replyTarget: "C0LAN2Q65",
      surface: "group",
      addressedToBot: false,
    });
    expect(message.roomKey).toBeUndefined();
  });

  test("other bots are skipped by default and passed on when allowed", () => {
    expect(parseSlackEvent(fixture("bot_message"), context)).toEqual({ kind: "skip", reason: "other_bot" });
    expect(parsedMessage(fixture("bot_message"), { ...context, allowOtherBots: true })).toMatchObject({
      principal: { id: "B0DEPLOY01", isBot: true },
      text: "Deploy finished: build #4123 is live",
    });
  });

  test("the bot's own messages are always skipped", () => {
    const allowBots = { ...context, allowOtherBots: true };
    expect(parseSlackEvent(fixture("own_message"), allowBots)).toEqual({
      kind: "skip",
      reason: "own_message",
    });
  });

  test("message_changed → an inbound edit with its own update key and the new text", () => {
    const message = parsedMessage(fixture("message_changed"));
    expect(message).toMatchObject({
      updateKey: "Ev0PV5EDIT",
      text: "what's on my calendar tomorrow?",
      messageId: "1700000000.000100",
      conversationKey: "sl:T061EG9R6:A0PNCHHK2:dm:U061F7AUR",
      receivedAtMs: 1_700_000_050_000,
    });
  });

  test("message_changed names the message it edits", () => {
    expect(parsedMessage(fixture("message_changed")).edited).toEqual({ messageId: "1700000000.000100" });
    expect(parsedMessage(fixture("dm")).edited).toBeUndefined();
  });

  test("message_deleted → a withdrawal of that ts, in the conversation the message was in", () => {
    const message = parsedMessage(fixture("message_deleted"));
    expect(message).toMatchObject({
      updateKey: "Ev0PV5DELE",
      principal: { id: "U061F7AUR", isBot: false },
      conversationKey: "sl:T061EG9R6:A0PNCHHK2:ch:C0PNCHANL:thread:1699999000.000100",
      surface: "thread",
      text: "",
      attachments: [],
      messageId: "1700000000.000100",
      withdrawn: { messageId: "1700000000.000100" },
      receivedAtMs: 1_700_000_060_000,
    });
    const mine = fixture("message_deleted");
    (mine.event as { previous_message: { user: string } }).previous_message.user = "U0LAN0Z89";
    expect(parseSlackEvent(mine, context)).toEqual({ kind: "skip", reason: "own_message" });
    const blind = fixture("message_deleted");
    delete (blind.event as { previous_message?: unknown }).previous_message;
    expect(parseSlackEvent(blind, context)).toEqual({ kind: "skip", reason: "malformed_event" });
  });

  test("message_changed with unchanged text (an unfurl) is skipped", () => {
    const body = fixture("message_changed");
    const event = body.event as { message: { text: string }; previous_message: { text: string } };
    event.previous_message.text = event.message.text;
    expect(parseSlackEvent(body, context)).toEqual({ kind: "skip", reason: "edit_without_text_change" });
  });

  test("without event_id the update key falls back to channel:ts (edits add the edit ts)", () => {
    const dm = fixture("dm");
    delete dm.event_id;
    expect(parsedMessage(dm).updateKey).toBe("D0PNCRP9N:1700000000.000100");
    const edit = fixture("message_changed");
    delete edit.event_id;
    expect(parsedMessage(edit).updateKey).toBe("D0PNCRP9N:1700000000.000100:edit:1700000050.000000");
  });

  test("file_share → attachments referencing the private URL, never downloaded", () => {
    expect(parsedMessage(fixture("file_share")).attachments).toEqual([
      {
        kind: "photo",
        ref: "https://files.slack.com/files-pri/T061EG9R6-F0RECEIPT1/receipt.png",
        name: "receipt.png",
        mediaType: "image/png",
        sizeBytes: 48213,
      },
    ]);
  });

  test("system subtypes, other event types and non-callbacks are skipped", () => {
    expect(parseSlackEvent(fixture("channel_join"), context)).toEqual({
      kind: "skip",
      reason: "unsupported_subtype",
    });
    const reaction = { ...fixture("dm"), event: { type: "reaction_added", user: "U1", reaction: "+1" } };
    expect(parseSlackEvent(reaction, context)).toEqual({ kind: "skip", reason: "unsupported_event" });
    expect(parseSlackEvent({ type: "url_verification", challenge: "x" }, context)).toEqual({
      kind: "skip",
      reason: "not_event_callback",
    });
    const broken = { ...fixture("dm"), event: { type: "message", channel: "D1" } };
    expect(parseSlackEvent(broken, context)).toEqual({ kind: "skip", reason: "malformed_event" });
  });
});

describe("threads in the app's DM (assistant threads)", () => {
  const DM_KEY = "sl:T061EG9R6:A0PNCHHK2:dm:U061F7AUR";
  const THREAD = "1700000000.000100";
  const THREAD_KEY = `${DM_KEY}:thread:${THREAD}`;

  /** The dm fixture's message written in thread THREAD (as every message in an assistant thread is). */
  function inThread(body: Record<string, unknown>, key: "event" | "message" | "previous_message") {
    const copy = structuredClone(body) as Record<string, Record<string, Record<string, unknown>>>;
    const event = copy.event!;
    const message = (key === "event" ? event : event[key]) as Record<string, unknown>;
    message.ts = "1700000020.000200";
    message.thread_ts = THREAD;
    message.parent_user_id = "U0LAN0Z89";
    return copy;
  }

  test("a message in a DM thread is that thread's conversation, answered in the thread", () => {
    expect(parsedMessage(inThread(fixture("dm"), "event"))).toMatchObject({
      conversationKey: THREAD_KEY,
      replyTarget: `D0PNCRP9N:${THREAD}`,
      surface: "dm",
      messageId: "1700000020.000200",
    });
    // Two threads are two conversations; the DM's top level stays one per person.
    const other = inThread(fixture("dm"), "event") as { event: Record<string, unknown> };
    other.event.thread_ts = "1700000010.000100";
    expect(parsedMessage(other).conversationKey).toBe(`${DM_KEY}:thread:1700000010.000100`);
    expect(parsedMessage(fixture("dm")).conversationKey).toBe(DM_KEY);
  });

  test("an edit and a delete of a message in a DM thread are in that thread's conversation", () => {
    const edit = parsedMessage(inThread(fixture("message_changed"), "message"));
    expect(edit).toMatchObject({ conversationKey: THREAD_KEY, edited: { messageId: "1700000020.000200" } });
    const deleted = fixture("message_deleted") as { event: Record<string, unknown> };
    deleted.event.channel = "D0PNCRP9N";
    deleted.event.channel_type = "im";
    const withdrawal = parsedMessage(inThread(deleted, "previous_message"));
    expect(withdrawal).toMatchObject({
      conversationKey: THREAD_KEY,
      replyTarget: `D0PNCRP9N:${THREAD}`,
      withdrawn: { messageId: "1700000020.000200" },
    });
  });

  test("a button pressed in a DM thread answers in that thread's conversation; at the DM's top level, in the DM's", () => {
    const press = (threadTs?: string) => ({
      type: "block_actions",
      user: { id: "U061F7AUR", name: "alice" },
      team: { id: "T061EG9R6" },
      container: {
        message_ts: "1700000030.000100",
        channel_id: "D0PNCRP9N",
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      },
      actions: [{ type: "button", value: "approve:1", action_ts: "1700000031.000001" }],
    });
    const inside = parseSlackAction(press(THREAD), context);
    const outside = parseSlackAction(press(), context);
    if (inside.kind !== "message" || outside.kind !== "message") throw new Error("expected two presses");
    expect(inside.message.conversationKey).toBe(THREAD_KEY);
    expect(outside.message.conversationKey).toBe(DM_KEY);
  });
});
