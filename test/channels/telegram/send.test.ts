import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Api, GrammyError } from "grammy";
import { TelegramAdapter } from "../../../channels/telegram/adapter.ts";
import { toSwitchboardError } from "../../../channels/telegram/errors.ts";
import type { OutgoingMessage } from "../../../channels/types.ts";
import { escapeTelegramHtml } from "../../../outbox/format/index.ts";
import { formatRenderer, isFormattingRejection, isNotModified } from "../../../outbox/render.ts";
import { isSwitchboardError } from "../../../src/errors.ts";
import {
  privateChat,
  startTelegramEmulator,
  supergroupChat,
  type TelegramEmulator,
  user,
} from "../../emulators/telegram/index.ts";

const alice = user(1001, "Alice");
const REQUEST_TIMEOUT_MS = 300;

let emulator: TelegramEmulator;
let adapter: TelegramAdapter;

beforeEach(() => {
  emulator = startTelegramEmulator();
  emulator.addChat(privateChat(alice));
  adapter = new TelegramAdapter({
    mode: "polling",
    token: emulator.token,
    apiRoot: emulator.url,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
  });
});

afterEach(async () => {
  await emulator.close();
});

function out(text: string, extra: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return { text, format: "plain", idempotencyKey: "obx_1", ...extra };
}

async function failureOf(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isSwitchboardError(error)) throw new Error(`expected a SwitchboardError, got ${String(error)}`);
  return error;
}

describe("Telegram adapter, sending", () => {
  test("send renders rich text as HTML, replies to the given message, and returns the message id", async () => {
    const question = emulator.incoming({
      chat: privateChat(alice),
      from: alice,
      text: "what is 1 < 2?",
    }).message;
    const receipt = await adapter.send(
      "1001",
      out(`<b>Yes</b>: ${escapeTelegramHtml("1 < 2 & 2 > 1")}`, {
        format: "rich",
        replyTo: String(question.message_id),
      }),
    );
    const [shown] = emulator.messages(1001).filter((m) => m.fromBot);
    expect(receipt).toEqual({ messageIds: [String(shown?.messageId)] });
    expect(shown).toMatchObject({
      visibleText: "Yes: 1 < 2 & 2 > 1",
      parseMode: "HTML",
      replyToMessageId: question.message_id,
    });
    expect(emulator.callsOf("sendMessage")[0]?.params).toMatchObject({
      reply_parameters: { message_id: question.message_id, allow_sending_without_reply: true },
    });
  });

  test("plain text goes without parse_mode; a reply to a deleted message is still sent", async () => {
    await adapter.send("1001", out("a <b> stays literal", { replyTo: "999" }));
    const [shown] = emulator.messages(1001);
    expect(shown).toMatchObject({
      visibleText: "a <b> stays literal",
      parseMode: undefined,
      replyToMessageId: undefined,
    });
    expect(emulator.callsOf("sendMessage")[0]?.params.parse_mode).toBeUndefined();
  });

  test("a forum-topic target sends into the topic, and typing goes to the topic too", async () => {
    const forum = supergroupChat(-1005001, "Team", { isForum: true });
    emulator.addChat(forum);
    emulator.addTopic(forum.id, 77, "Deploys");
    await adapter.send("-1005001:77", out("in the topic"));
    await adapter.typing("-1005001:77");
    expect(emulator.messages(forum.id)[0]).toMatchObject({ threadId: 77, visibleText: "in the topic" });
    expect(emulator.chat(forum.id)?.actions).toEqual([
      expect.objectContaining({ action: "typing", threadId: 77 }),
    ]);
  });

  test("edit replaces the text; editing to the same text again succeeds; delete removes it, twice is fine", async () => {
    const receipt = await adapter.send("1001", out("draft"));
    const id = receipt.messageIds[0] ?? "";
    await adapter.edit("1001", id, out("<i>final</i>", { format: "rich" }));
    await adapter.edit("1001", id, out("<i>final</i>", { format: "rich" }));
    expect(emulator.messages(1001)[0]).toMatchObject({
      visibleText: "final",
      previousVersions: [{ text: "draft" }],
    });
    expect(emulator.callsOf("editMessageText")[1]?.response).toMatchObject({ ok: false, error_code: 400 });

    await adapter.delete("1001", id);
    await adapter.delete("1001", id);
    expect(emulator.messages(1001)).toEqual([]);
  });

  test("429 with retry_after → platform_rate_limited, retryable, retryAfterMs, for the whole bot", async () => {
    emulator.injectFault("sendMessage", { kind: "rate_limited", retryAfterSeconds: 7 });
    const error = await failureOf(adapter.send("1001", out("hi")));
    expect(error).toMatchObject({
      code: "platform_rate_limited",
      retryable: true,
      retryAfterMs: 7_000,
      details: { global: true },
    });
    expect(emulator.messages(1001)).toEqual([]);
  });

  test("500 → platform_unavailable, retryable; a connection reset mid-call → platform_timeout (outcome unknown)", async () => {
    emulator.injectFault("sendMessage", { kind: "server_error" });
    expect(await failureOf(adapter.send("1001", out("hi")))).toMatchObject({
      code: "platform_unavailable",
      retryable: true,
    });
    emulator.injectFault("sendChatAction", { kind: "reset" });
    const reset = await failureOf(adapter.typing("1001"));
    // The request reached Telegram before the connection broke: a repeated send could show it twice.
    expect(reset).toMatchObject({ code: "platform_timeout", retryable: true });
    expect(`${reset.message} ${String((reset.cause as Error).message)}`).not.toContain(emulator.token);
  });

  test("a hung call → platform_timeout within requestTimeoutMs", async () => {
    emulator.injectFault("sendMessage", { kind: "hang" });
    const startedAt = performance.now();
    const error = await failureOf(adapter.send("1001", out("hi")));
    const elapsedMs = performance.now() - startedAt;
    expect(error).toMatchObject({ code: "platform_timeout", retryable: true });
    expect(error.message).toContain("Raise TELEGRAM_REQUEST_TIMEOUT_MS");
    expect(elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 5);
    expect(elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 500);
  }, 5_000);

  test("400 chat not found and 403 blocked → platform_rejected, not retryable, with Telegram's description", async () => {
    const notFound = await failureOf(adapter.send("424242", out("hi")));
    expect(notFound).toMatchObject({ code: "platform_rejected", retryable: false });
    expect(notFound.message).toContain("Bad Request: chat not found");

    emulator.blockBot(alice.id);
    const blocked = await failureOf(adapter.send("1001", out("hi")));
    expect(blocked).toMatchObject({ code: "platform_rejected", retryable: false });
    expect(blocked.message).toContain("Forbidden: bot was blocked by the user");
  });

  test("unbalanced HTML and over-long text are rejected by Telegram as platform_rejected", async () => {
    const badHtml = await failureOf(adapter.send("1001", out("<b>open", { format: "rich" })));
    expect(badHtml.message).toContain("can't parse entities");
    const tooLong = await failureOf(adapter.send("1001", out("x".repeat(4097))));
    expect(tooLong.message).toContain("message is too long");
    await adapter.send("1001", out("x".repeat(4096)));
  });

  test("a refused markup is tagged rejection: markup, for send and edit; other refusals carry no tag", async () => {
    const badSend = await failureOf(adapter.send("1001", out("<b>open", { format: "rich" })));
    expect(badSend).toMatchObject({ code: "platform_rejected", rejection: "markup", retryable: false });
    expect(isFormattingRejection(badSend)).toBe(true);

    const id = (await adapter.send("1001", out("draft"))).messageIds[0] ?? "";
    const badEdit = await failureOf(adapter.edit("1001", id, out("<i>x</b>", { format: "rich" })));
    expect(badEdit).toMatchObject({ code: "platform_rejected", rejection: "markup" });

    // The same unbalanced text as plain goes through: that is what the outbox's fallback relies on.
    await adapter.send("1001", out("<b>open"));

    const tooLong = await failureOf(adapter.send("1001", out("x".repeat(4097))));
    expect(tooLong.rejection).toBeUndefined();
    expect(isFormattingRejection(tooLong)).toBe(false);
    const notFound = await failureOf(adapter.send("424242", out("hi")));
    expect(notFound.rejection).toBeUndefined();
  });

  test("Telegram's 400 for an edit to the same text maps to rejection: unchanged", async () => {
    const id = Number((await adapter.send("1001", out("same"))).messageIds[0]);
    const api = new Api(emulator.token, { apiRoot: emulator.url });
    const answer = await api.editMessageText(1001, id, "same").then(
      () => null,
      (error: unknown) => error,
    );
    expect(answer).toBeInstanceOf(GrammyError);
    const mapped = toSwitchboardError(answer, { method: "editMessageText" });
    expect(mapped).toMatchObject({ code: "platform_rejected", rejection: "unchanged" });
    expect(isNotModified(mapped)).toBe(true);
    expect(isFormattingRejection(mapped)).toBe(false);
  });

  test("a malformed target or message id is input_invalid before any call", async () => {
    expect(await failureOf(adapter.send("tg:dm:1", out("hi")))).toMatchObject({ code: "input_invalid" });
    expect(await failureOf(adapter.edit("1001", "abc", out("hi")))).toMatchObject({ code: "input_invalid" });
    expect(emulator.calls).toEqual([]);
  });

  test("capabilities, markup and limits", () => {
    expect(adapter.capabilities).toEqual({ idempotentSend: false });
    for (const method of [adapter.edit, adapter.delete, adapter.typing]) expect(method).toBeFunction();
    expect(adapter.files?.limits.maxCaptionChars).toBe(1024);
    expect(adapter.limits).toEqual({
      maxMessageChars: 4096,
      perChatIntervalMs: 1000,
      perAccountPerSecond: 30,
      editIntervalMs: 1000,
    });
    expect(adapter.markup).toBe("telegram-html");
    expect(formatRenderer.render("<a & b>", adapter.markup, "rich", 4096).chunks).toEqual([
      "&lt;a &amp; b&gt;",
    ]);
  });
});
