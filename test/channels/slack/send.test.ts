import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createSlackAdapter, type SlackAdapter } from "../../../channels/slack/adapter.ts";
import type { ChannelAdapter, OutgoingMessage } from "../../../channels/types.ts";
import { formatRenderer, isFormattingRejection } from "../../../outbox/render.ts";
import { isSwitchboardError, type SwitchboardError } from "../../../src/errors.ts";
import { type SlackEmulator, startSlackEmulator } from "../../emulators/slack/index.ts";
import { recordingIngress, recordingLogger } from "./helpers.ts";

const requestTimeoutMs = 300;
let emulator: SlackEmulator;
let adapter: SlackAdapter;

beforeAll(async () => {
  emulator = startSlackEmulator();
  adapter = createSlackAdapter(
    {
      mode: "http",
      botToken: emulator.botToken,
      signingSecret: "unused-in-these-tests",
      apiUrl: emulator.apiUrl,
      requestTimeoutMs,
    },
    { logger: recordingLogger() },
  );
  await adapter.start(recordingIngress());
});

afterEach(() => emulator.reset());

afterAll(async () => {
  await adapter.stop();
  await emulator.close();
});

function outgoing(text: string, format: OutgoingMessage["format"] = "rich"): OutgoingMessage {
  return { text, format, idempotencyKey: `out_${text.length}` };
}

async function failure(promise: Promise<unknown>): Promise<SwitchboardError> {
  try {
    await promise;
  } catch (error) {
    if (isSwitchboardError(error)) return error;
    throw new Error(`expected a SwitchboardError, got ${String(error)}`);
  }
  throw new Error("expected the call to fail");
}

describe("Slack adapter sends through Bolt's WebClient", () => {
  test("capabilities, markup and limits: edits and deletes, no typing indicator", () => {
    expect(adapter.capabilities).toEqual({ idempotentSend: false });
    expect(adapter.edit).toBeFunction();
    expect(adapter.delete).toBeFunction();
    expect((adapter as ChannelAdapter).typing).toBeUndefined();
    expect(adapter.limits).toEqual({
      maxMessageChars: 4000,
      perChatIntervalMs: 1000,
      perAccountPerSecond: 20,
      editIntervalMs: 1000,
    });
    expect(adapter.markup).toBe("slack-mrkdwn");
    expect(formatRenderer.render("**bold** _it_", adapter.markup, "rich", 4000).chunks).toEqual([
      "*bold* _it_",
    ]);
  });

  test("send to a channel top level: chat.postMessage with mrkdwn, ts as message id", async () => {
    const receipt = await adapter.send("C0SEND0001", outgoing("*hello*"));
    const [call] = emulator.calls("chat.postMessage");
    expect(call?.params).toMatchObject({ channel: "C0SEND0001", text: "*hello*", mrkdwn: "true" });
    expect(call?.params.thread_ts).toBeUndefined();
    expect(call?.tokenKind).toBe("bot");
    const [visible] = emulator.messages("C0SEND0001");
    expect(receipt).toEqual({ messageIds: [visible?.ts ?? "missing"] });
    expect(visible).toMatchObject({ text: "*hello*", mrkdwn: true, user: emulator.identity.botUserId });
  });

  test("send into a thread takes thread_ts from the target; plain turns mrkdwn off", async () => {
    await adapter.send("C0SEND0001:1700000000.000100", outgoing("in thread", "plain"));
    expect(emulator.messages("C0SEND0001")).toMatchObject([
      { text: "in thread", threadTs: "1700000000.000100", mrkdwn: false },
    ]);
  });

  test("edit applies chat.update; delete removes the message", async () => {
    const { messageIds } = await adapter.send("D0SEND0001", outgoing("draft"));
    const ts = messageIds[0] ?? "";
    await adapter.edit("D0SEND0001", ts, outgoing("final"));
    expect(emulator.messages("D0SEND0001")).toMatchObject([{ ts, text: "final", edited: true }]);
    await adapter.delete("D0SEND0001", ts);
    expect(emulator.messages("D0SEND0001")).toEqual([]);
    // A retried delete of a message already gone succeeds.
    await adapter.delete("D0SEND0001", ts);
    expect(emulator.calls("chat.delete").map((call) => call.error)).toEqual([undefined, "message_not_found"]);
  });

  test("429 → platform_rate_limited with retryAfterMs from Retry-After, no retry by web-api", async () => {
    emulator.failNext("chat.postMessage", { kind: "rate_limited", retryAfterSeconds: 7 });
    const error = await failure(adapter.send("C0SEND0001", outgoing("x")));
    expect(error.code).toBe("platform_rate_limited");
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBe(7000);
    expect(emulator.calls("chat.postMessage")).toHaveLength(1);
  });

  test("the per-channel rate limit surfaces the same way and is counted", async () => {
    emulator.setChannelRateLimit(1000);
    await adapter.send("C0BUSY0001", outgoing("one"));
    const error = await failure(adapter.send("C0BUSY0001", outgoing("two")));
    expect(error.code).toBe("platform_rate_limited");
    expect(error.retryAfterMs).toBe(1000);
    expect(emulator.rateLimitRejections("C0BUSY0001")).toBe(1);
    emulator.setChannelRateLimit(null);
  });

  test("HTTP 500 → platform_unavailable (retryable)", async () => {
    emulator.failNext("chat.postMessage", { kind: "server_error", status: 500 });
    const error = await failure(adapter.send("C0SEND0001", outgoing("x")));
    expect(error).toMatchObject({ code: "platform_unavailable", retryable: true });
    expect(error.details).toMatchObject({ httpStatus: 500, method: "chat.postMessage" });
  });

  test("a hanging call → platform_timeout after requestTimeoutMs", async () => {
    emulator.failNext("chat.update", { kind: "hang" });
    const started = Date.now();
    const error = await failure(adapter.edit("C0SEND0001", "1700000000.000100", outgoing("x")));
    expect(error).toMatchObject({ code: "platform_timeout", retryable: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(requestTimeoutMs - 50);
    expect(Date.now() - started).toBeLessThan(requestTimeoutMs + 1500);
  }, 5000);

  test("a reset connection → platform_unavailable", async () => {
    emulator.failNext("chat.postMessage", { kind: "reset" });
    const error = await failure(adapter.send("C0SEND0001", outgoing("x")));
    expect(error).toMatchObject({ code: "platform_unavailable", retryable: true });
  });

  test("channel problems and bad auth → platform_rejected (not retryable), with the Slack code", async () => {
    emulator.setChannelState("C0ARCHIVE1", { archived: true });
    emulator.setChannelState("C0NOTIN001", { botIsMember: false });
    emulator.failNext("chat.postMessage", { kind: "platform_error", error: "invalid_auth" });
    const authError = await failure(adapter.send("C0SEND0001", outgoing("x")));
    const cases = [
      [authError, "invalid_auth"],
      [await failure(adapter.send("C0ARCHIVE1", outgoing("x"))), "is_archived"],
      [await failure(adapter.send("C0NOTIN001", outgoing("x"))), "not_in_channel"],
      [await failure(adapter.edit("C0SEND0001", "1.000001", outgoing("x"))), "message_not_found"],
    ] as const;
    for (const [error, slackError] of cases) {
      expect(error).toMatchObject({ code: "platform_rejected", retryable: false });
      expect(error.details?.slackError).toBe(slackError);
      expect(error.message).toContain(slackError);
      expect(error.message).not.toContain(emulator.botToken);
    }
  });

  test("a refused formatting (invalid_blocks) is tagged rejection: markup; other refusals carry no tag", async () => {
    emulator.failNext("chat.postMessage", { kind: "platform_error", error: "invalid_blocks" });
    const markup = await failure(adapter.send("C0SEND0001", outgoing("*x*")));
    expect(markup).toMatchObject({ code: "platform_rejected", rejection: "markup", retryable: false });
    expect(isFormattingRejection(markup)).toBe(true);

    emulator.failNext("chat.update", { kind: "platform_error", error: "invalid_blocks_format" });
    const sent = await adapter.send("C0SEND0001", outgoing("draft"));
    const editError = await failure(adapter.edit("C0SEND0001", sent.messageIds[0] ?? "", outgoing("*y*")));
    expect(editError).toMatchObject({ code: "platform_rejected", rejection: "markup" });

    emulator.setChannelState("C0ARCHIVE2", { archived: true });
    const archived = await failure(adapter.send("C0ARCHIVE2", outgoing("x")));
    expect(archived).toMatchObject({ code: "platform_rejected" });
    expect(archived.rejection).toBeUndefined();
    expect(isFormattingRejection(archived)).toBe(false);
  });

  test("transient Slack errors (internal_error) → platform_unavailable", async () => {
    emulator.failNext("chat.postMessage", { kind: "platform_error", error: "internal_error" });
    expect(await failure(adapter.send("C0SEND0001", outgoing("x")))).toMatchObject({
      code: "platform_unavailable",
      retryable: true,
    });
  });

  test("over-long or empty text and foreign targets fail before any call", async () => {
    expect((await failure(adapter.send("C0SEND0001", outgoing("a".repeat(4001))))).code).toBe(
      "input_invalid",
    );
    expect((await failure(adapter.send("C0SEND0001", outgoing("")))).code).toBe("input_invalid");
    expect((await failure(adapter.send("tg:12345", outgoing("x")))).code).toBe("input_invalid");
    expect(emulator.calls("chat.postMessage")).toHaveLength(0);
  });

  test("a wrong bot token fails start() with platform_rejected naming the fix", async () => {
    const wrong = createSlackAdapter(
      { mode: "http", botToken: "xoxb-wrong", signingSecret: "s", apiUrl: emulator.apiUrl },
      { logger: recordingLogger() },
    );
    const error = await failure(wrong.start(recordingIngress()));
    expect(error.code).toBe("platform_rejected");
    expect(error.message).toContain("slack.botToken");
    expect(error.message).not.toContain("xoxb-wrong");
  });
});

describe("Slack native streaming (chat.startStream / appendStream / stopStream)", () => {
  const thread = "C0AAAAAAA1:1700000000.000100";

  test("only threads stream; a stream grows by appends and ends as one message", async () => {
    expect(adapter.nativeStreamFor("C0AAAAAAA1", "U0ALICE")).toBeNull();
    const stream = adapter.nativeStreamFor(thread, "U0ALICE")!;
    expect(stream.maxChars).toBe(4000);
    const { messageIds } = await stream.start("Hello");
    await stream.append(messageIds[0]!, ", world");
    expect(emulator.messages("C0AAAAAAA1")[0]).toMatchObject({ text: "Hello, world", stream: "streaming" });
    await stream.stop(messageIds[0]!, "!");
    await stream.stop(messageIds[0]!, "");
    expect(emulator.messages("C0AAAAAAA1")[0]).toMatchObject({ text: "Hello, world!", stream: "stopped" });
    const start = emulator.calls("chat.startStream")[0]!;
    expect(start.params).toMatchObject({
      channel: "C0AAAAAAA1",
      thread_ts: "1700000000.000100",
      markdown_text: "Hello",
      recipient_user_id: "U0ALICE",
      recipient_team_id: emulator.identity.teamId,
    });
  });

  test("editing a message whose stream was cut off stops the stream first, then edits it", async () => {
    const stream = adapter.nativeStreamFor(thread, "U0ALICE")!;
    const { messageIds } = await stream.start("partial ans");
    await adapter.edit(thread, messageIds[0]!, outgoing("the whole answer"));
    expect(emulator.messages("C0AAAAAAA1")[0]).toMatchObject({ text: "the whole answer", stream: "stopped" });
    expect(emulator.calls().map((c) => `${c.method}:${c.ok ? "ok" : c.error}`)).toEqual([
      "chat.startStream:ok",
      "chat.update:message_is_streaming",
      "chat.stopStream:ok",
      "chat.update:ok",
    ]);
  });

  test("a streaming call over Slack's 12,000-character limit is refused before it is made", async () => {
    const stream = adapter.nativeStreamFor(thread, "U0ALICE")!;
    const error = await failure(stream.start("x".repeat(12_001)));
    expect(error.code).toBe("input_invalid");
    expect(emulator.calls("chat.startStream").length).toBe(0);
  });
});
