import { describe, expect, test } from "bun:test";
import { inboundMessageSchema } from "../../../channels/types.ts";
import { parseWhatsAppMessage } from "../../../channels/whatsapp/parse.ts";
import { toStatusUpdate } from "../../../channels/whatsapp/status.ts";
import { ACCOUNT, fixture, itemsOf, receivedOf, USER } from "./helpers.ts";

const context = { account: ACCOUNT };
const CONVERSATION = `wa:${ACCOUNT}:dm:${USER}`;

function messageOf(name: string, ctx: Parameters<typeof parseWhatsAppMessage>[1] = context) {
  const outcome = parseWhatsAppMessage(receivedOf(name), ctx);
  if (outcome.kind !== "message")
    throw new Error(`${name}: expected a message, got ${JSON.stringify(outcome)}`);
  // What ingress validates, once the gateway names the channel.
  inboundMessageSchema.parse({ channel: "telegram", ...outcome.message });
  return outcome.message;
}

describe("parseWhatsAppMessage", () => {
  test("a text is a DM addressed to the bot, keyed by its wamid, dated by its timestamp", () => {
    expect(messageOf("text")).toEqual({
      account: ACCOUNT,
      updateKey: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUFFQUJCRjk5RTM2MzREMjQ3MAA=",
      principal: { id: USER, name: "Sheena Nelson", isBot: false },
      conversationKey: CONVERSATION,
      replyTarget: USER,
      surface: "dm",
      where: { chat: USER },
      text: "Does it come in another color?",
      messageId: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUFFQUJCRjk5RTM2MzREMjQ3MAA=",
      addressedToBot: true,
      attachments: [],
      receivedAtMs: 1749416383000,
    });
  });

  test("media become attachments by media id: photo, voice note, file, video, sticker as a photo", () => {
    expect(messageOf("image")).toMatchObject({
      text: "Which one is better?",
      attachments: [{ kind: "photo", ref: "1003383421387256", mediaType: "image/jpeg" }],
    });
    expect(messageOf("voice").attachments).toEqual([
      { kind: "voice", ref: "1286485442643239", mediaType: "audio/ogg; codecs=opus" },
    ]);
    expect(messageOf("document")).toMatchObject({
      text: "Invoice attached",
      attachments: [
        { kind: "file", ref: "2196765650694217", name: "invoice-2026-11.pdf", mediaType: "application/pdf" },
      ],
    });
    expect(messageOf("video").attachments[0]).toMatchObject({ kind: "video", ref: "1184787406503216" });
    expect(messageOf("sticker").attachments[0]).toMatchObject({ kind: "photo", mediaType: "image/webp" });
  });

  test("location and contact cards become text", () => {
    expect(messageOf("location").text).toBe(
      "Location: Main Office, 1 Hacker Way, Menlo Park, CA 94025 (37.483253479004, -122.14960479736) https://www.metacareers.com/",
    );
    expect(messageOf("contacts").text).toBe(
      "Contact: Barbara J. Johnson, +1 (940) 555-1234, +1 (650) 555-1234, bjohnson@example.com, Wind & Wave",
    );
  });

  test("button and list replies are button presses on the message they answer", () => {
    const press = messageOf("button_reply");
    expect(press).toMatchObject({
      text: "",
      action: {
        data: "sb1.ap_3f2a9c1b7d4e.approve.Zm9vYmFy",
        interactionId: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTk4MkU4NkQ1MkQ3MjI0AA==",
      },
      messageId: "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI1QUJDQTk5RkVBNjlGNkUyNzAA",
      updateKey: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTk4MkU4NkQ1MkQ3MjI0AA==",
    });
    expect(press.replyTo).toBeUndefined();
    expect(messageOf("list_reply").action?.data).toBe("priority_express");
  });

  test("a template's quick-reply button is what the user wrote", () => {
    const message = messageOf("template_button");
    expect(message.text).toBe("Continue");
    expect(message.action).toBeUndefined();
  });

  test("a reply carries replyTo, and the quoted text when the adapter still knows it", () => {
    const quotedId = "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJEOUY4NkVCQkJGNzg5NjQ4AA==";
    expect(messageOf("reply_with_context")).toMatchObject({ replyTo: quotedId, text: "Yes, that one" });
    const known = messageOf("reply_with_context", {
      account: ACCOUNT,
      quotedText: (id) => (id === quotedId ? "We have it in red\nand in blue" : undefined),
    });
    expect(known.text).toBe("> We have it in red\n> and in blue\n\nYes, that one");
    const long = messageOf("reply_with_context", { account: ACCOUNT, quotedText: () => "x".repeat(600) });
    expect(long.text).toBe(`> ${"x".repeat(500)}…\n\nYes, that one`);
  });

  test("a reaction is a note for the conversation, not a message", () => {
    expect(parseWhatsAppMessage(receivedOf("reaction"), context)).toEqual({
      kind: "reaction",
      reaction: {
        updateKey: "reaction:wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUVGQkY4MjZCMUREQjI3AA==",
        conversationKey: CONVERSATION,
        principal: { id: USER, name: "Sheena Nelson", isBot: false },
        messageId: "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJEOUY4NkVCQkJGNzg5NjQ4AA==",
        emoji: "👍",
        receivedAtMs: 1749416383000,
        note: "Sheena Nelson reacted 👍 to a message",
      },
    });
    const removed = receivedOf("reaction");
    if (removed.message.known && removed.message.value.type === "reaction")
      delete removed.message.value.reaction.emoji;
    const outcome = parseWhatsAppMessage(removed, context);
    expect(outcome.kind === "reaction" && outcome.reaction).toMatchObject({
      emoji: null,
      note: "Sheena Nelson removed their reaction to a message",
    });
  });

  test("skips kinds it does not read and messages to another number of the app", () => {
    expect(parseWhatsAppMessage(receivedOf("unsupported"), context)).toEqual({
      kind: "skip",
      reason: "unsupported_type",
      detail: "unsupported",
    });
    expect(parseWhatsAppMessage(receivedOf("text"), { account: "999" })).toEqual({
      kind: "skip",
      reason: "other_number",
    });
  });
});

describe("toStatusUpdate", () => {
  test("sent and delivered settle as delivered with the outbox record id; failed carries code and title", () => {
    const updates = itemsOf(fixture("statuses")).statuses.map((s) => toStatusUpdate(s, ACCOUNT));
    expect(updates[0]).toEqual({
      updateKey: "status:wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJEOUY4NkVCQkJGNzg5NjQ4AA==:sent",
      messageId: "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJEOUY4NkVCQkJGNzg5NjQ4AA==",
      recipient: USER,
      outboxRecordId: "ob_01JEX3Q9M2",
      outcome: "delivered",
      status: "sent",
      atMs: 1750263773000,
    });
    expect(updates[1]).toMatchObject({ outcome: "delivered", status: "delivered" });
    expect(updates[2]).toMatchObject({
      outcome: "failed",
      outboxRecordId: "ob_01JEX3QB77",
      failure: {
        code: 131047,
        title: "Re-engagement message",
        outsideServiceWindow: true,
        details: expect.stringContaining("24 hours"),
      },
    });
  });

  test("a status for another number is not ours", () => {
    const [status] = itemsOf(fixture("statuses")).statuses;
    expect(toStatusUpdate(status!, "999")).toBeNull();
  });
});
