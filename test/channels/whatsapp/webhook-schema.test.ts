import { describe, expect, test } from "bun:test";
import { readWebhookBody } from "../../../channels/whatsapp/webhook-schema.ts";
import { ACCOUNT, fixture, itemsOf, USER } from "./helpers.ts";

describe("readWebhookBody", () => {
  test("refuses a body that is not Meta's envelope, naming what is wrong", () => {
    for (const body of [
      null,
      "x",
      {},
      { object: "page", entry: [] },
      { object: "whatsapp_business_account" },
    ]) {
      const reading = readWebhookBody(body);
      expect(reading.ok).toBe(false);
      if (!reading.ok) expect(reading.problem).toStartWith("not a WhatsApp webhook body");
    }
  });

  test("reads every message kind the channel handles, with the sender's profile name", () => {
    const kinds = [
      "text",
      "image",
      "voice",
      "document",
      "video",
      "sticker",
      "location",
      "contacts",
      "button_reply",
      "list_reply",
      "template_button",
      "reaction",
      "reply_with_context",
    ];
    for (const name of kinds) {
      const items = itemsOf(fixture(name));
      expect({ name, problems: items.problems }).toEqual({ name, problems: [] });
      expect(items.messages).toHaveLength(1);
      expect(items.messages[0]).toMatchObject({ phoneNumberId: ACCOUNT, senderName: "Sheena Nelson" });
      expect(items.messages[0]!.message.known).toBe(true);
    }
  });

  test("a kind it does not read is passed on as unknown, not as a problem", () => {
    const items = itemsOf(fixture("unsupported"));
    expect(items.problems).toEqual([]);
    expect(items.messages[0]!.message).toMatchObject({
      known: false,
      value: { type: "unsupported", from: USER },
    });
  });

  test("statuses keep their callback data and errors", () => {
    const { statuses } = itemsOf(fixture("statuses"));
    expect(statuses.map((s) => [s.status.status, s.status.biz_opaque_callback_data])).toEqual([
      ["sent", "ob_01JEX3Q9M2"],
      ["delivered", "ob_01JEX3Q9M2"],
      ["failed", "ob_01JEX3QB77"],
    ]);
    expect(statuses[2]!.status.errors?.[0]).toMatchObject({ code: 131047, title: "Re-engagement message" });
  });

  test("one bad entry, change, message or status does not sink the others", () => {
    const items = itemsOf(fixture("mixed_with_bad_items"));
    expect(items.messages.map((m) => m.message.value.id)).toEqual([
      "wamid.GOOD1",
      "wamid.GOOD2",
      "wamid.GOOD4",
    ]);
    expect(items.messages.at(-1)?.senderName).toBe("Ravi");
    expect(items.statuses.map((s) => s.status.id)).toEqual(["wamid.GOOD3"]);
    expect(items.otherFields).toEqual(["account_update"]);
    expect(items.problems.map((p) => p.path)).toEqual([
      "entry[0].changes[0].value.messages[1]",
      "entry[0].changes[0].value.messages[2]",
      "entry[0].changes[0].value.statuses[0]",
      "entry[0].changes[2].value",
      "entry[1]",
    ]);
    expect(items.problems[0]!.problem).toContain("timestamp");
    expect(items.problems[1]!.problem).toContain("image.id");
  });

  test("a forged sender that is not a wa_id is a problem, not a message", () => {
    const body = fixture("text") as {
      entry: Array<{ changes: Array<{ value: { messages: Array<{ from: string }> } }> }>;
    };
    body.entry[0]!.changes[0]!.value.messages[0]!.from = "x".repeat(500);
    const items = itemsOf(body);
    expect(items.messages).toEqual([]);
    expect(items.problems[0]!.problem).toContain("wa_id");
  });
});
