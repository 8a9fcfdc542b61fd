import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { nonceFor } from "../../../channels/discord/index.ts";
import type { OutgoingMessage } from "../../../channels/types.ts";
import { isSwitchboardError, type SwitchboardError } from "../../../src/errors.ts";
import { type Harness, startHarness } from "./harness.ts";

// Every test here talks to a local emulator over HTTP/WebSocket; none should take long.
setDefaultTimeout(5000);

let harness: Harness;
beforeAll(async () => {
  // Sending needs no gateway connection; REST alone is exercised here.
  harness = await startHarness({ config: { requestTimeoutMs: 300 }, start: false });
});
afterAll(() => harness.close());

const general = () => `dc:${harness.emulator.generalChannelId}`;
const text = (
  body: string,
  idempotencyKey: string,
  extra: Partial<OutgoingMessage> = {},
): OutgoingMessage => ({
  text: body,
  format: "plain",
  idempotencyKey,
  ...extra,
});

async function failure(promise: Promise<unknown>): Promise<SwitchboardError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isSwitchboardError(error)) throw new Error(`expected a SwitchboardError, got ${String(error)}`);
  return error;
}

describe("Discord adapter: sending through discord.js REST against the emulator", () => {
  test("buttons become action rows whose custom_id is the data; an edit without buttons removes them", async () => {
    const { emulator, adapter } = harness;
    const buttons = [
      [
        { label: "Approve", data: "ap:ap_0123456789ab:a:tag" },
        { label: "Deny", data: "ap:ap_0123456789ab:d:tag" },
      ],
      [{ label: "Always", data: "ap:ap_0123456789ab:A:tag" }],
    ];
    const sent = await adapter.send(general(), text("choose", "outbox_buttons", { buttons }));
    const id = sent.messageIds[0]!;
    const rows = emulator.message(id)?.message.components as Array<{
      type: number;
      components: Array<{ type: number; label: string; custom_id: string }>;
    }>;
    expect(rows.map((row) => row.type)).toEqual([1, 1]);
    expect(rows.map((row) => row.components.map((b) => [b.type, b.label, b.custom_id]))).toEqual([
      [
        [2, "Approve", "ap:ap_0123456789ab:a:tag"],
        [2, "Deny", "ap:ap_0123456789ab:d:tag"],
      ],
      [[2, "Always", "ap:ap_0123456789ab:A:tag"]],
    ]);

    await adapter.edit(general(), id, text("decided", "outbox_buttons"));
    expect(emulator.message(id)?.message.content).toBe("decided");
    expect(emulator.message(id)?.message.components).toEqual([]);
  });

  test("buttons Discord cannot show are refused before any request", async () => {
    const { emulator, adapter } = harness;
    const before = emulator.restCalls.length;
    const tooLong = [[{ label: "x", data: "d".repeat(101) }]];
    const sixInARow = [Array.from({ length: 6 }, (_, i) => ({ label: `b${i}`, data: `d${i}` }))];
    for (const buttons of [tooLong, sixInARow]) {
      const error = await failure(adapter.send(general(), text("choose", "outbox_bad_buttons", { buttons })));
      expect(error.code).toBe("input_invalid");
    }
    expect(emulator.restCalls.length).toBe(before);
  });

  test("the same outbox record sent twice shows one message (nonce + enforce_nonce)", async () => {
    const { emulator, adapter } = harness;
    const first = await adapter.send(general(), text("exactly once", "outbox_1"));
    const retry = await adapter.send(general(), text("exactly once", "outbox_1"));
    expect(retry.messageIds).toEqual(first.messageIds);
    expect(
      emulator.visibleMessages(emulator.generalChannelId).filter((m) => m.content === "exactly once"),
    ).toHaveLength(1);

    const creates = emulator.restCalls.filter((c) => c.route === "POST /channels/:id/messages");
    const body = creates.at(-1)?.body as Record<string, unknown>;
    expect(body.nonce).toBe(nonceFor("outbox_1"));
    expect(body.enforce_nonce).toBe(true);
    expect(creates.at(-1)?.dedupedByNonce).toBe(true);

    const other = await adapter.send(general(), text("exactly once", "outbox_2"));
    expect(other.messageIds).not.toEqual(first.messageIds);
  });

  test("nonces are deterministic, at most 25 chars, and differ per key", () => {
    expect(nonceFor("a")).toBe(nonceFor("a"));
    expect(nonceFor("a")).not.toBe(nonceFor("b"));
    expect(nonceFor("x".repeat(500)).length).toBeLessThanOrEqual(25);
  });

  test("a send whose answer was lost (reset after commit) is safe to retry", async () => {
    const { emulator, adapter } = harness;
    emulator.failNext("POST /channels/:id/messages", { kind: "reset", afterCommit: true });
    const lost = await failure(adapter.send(general(), text("ambiguous", "outbox_amb")));
    expect(lost.code).toBe("platform_unavailable");
    expect(lost.retryable).toBe(true);
    const retried = await adapter.send(general(), text("ambiguous", "outbox_amb"));
    const visible = emulator
      .visibleMessages(emulator.generalChannelId)
      .filter((m) => m.content === "ambiguous");
    expect(visible.map((m) => m.id)).toEqual(retried.messageIds);
  });

  test("replyTo becomes a message_reference that tolerates a deleted target", async () => {
    const { emulator, adapter } = harness;
    const user = emulator.createUser("lena");
    const question = emulator.sendChannelMessage(emulator.generalChannelId, user.id, "question?");
    const answer = await adapter.send(general(), text("answer", "outbox_reply", { replyTo: question.id }));
    const stored = emulator.message(answer.messageIds[0] ?? "");
    expect(stored?.message.message_reference?.message_id).toBe(question.id);
    const body = emulator.restCalls.at(-1)?.body as Record<string, unknown>;
    expect(body.message_reference).toEqual({ message_id: question.id, fail_if_not_exists: false });
  });

  test("edit, delete (twice) and typing", async () => {
    const { emulator, adapter } = harness;
    const { messageIds } = await adapter.send(general(), text("draft", "outbox_edit"));
    const id = messageIds[0] ?? "";
    await adapter.edit(general(), id, text("final answer", "outbox_edit"));
    expect(emulator.message(id)?.message.content).toBe("final answer");
    expect(emulator.message(id)?.message.edited_timestamp).not.toBeNull();

    await adapter.delete(general(), id);
    await adapter.delete(general(), id); // already gone: still resolves
    expect(emulator.visibleMessages(emulator.generalChannelId).some((m) => m.id === id)).toBe(false);

    await adapter.typing(general());
    expect(emulator.restCalls.at(-1)).toMatchObject({ route: "POST /channels/:id/typing", status: 204 });
  });

  test("429 → platform_rate_limited with retryAfterMs, without discord.js sleeping", async () => {
    const { emulator, adapter } = harness;
    emulator.failNext("POST /channels/:id/typing", { kind: "rate_limit", retryAfterMs: 2500 });
    const startedAtMs = Date.now();
    const error = await failure(adapter.typing(general()));
    expect(Date.now() - startedAtMs).toBeLessThan(500);
    expect(error.code).toBe("platform_rate_limited");
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBeGreaterThanOrEqual(2500);
    expect(error.retryAfterMs).toBeLessThan(4000);
  });

  test("the channel bucket (5 per 5 s) surfaces as platform_rate_limited too", async () => {
    const { emulator, adapter } = harness;
    const channelId = emulator.createTextChannel("busy");
    emulator.setChannelRateLimit({ limit: 5, windowMs: 5000 });
    try {
      const outcomes: string[] = [];
      for (let i = 0; i < 7; i += 1) {
        outcomes.push(
          await adapter.send(`dc:${channelId}`, text(`burst ${i}`, `burst_${i}`)).then(
            () => "sent",
            (e: SwitchboardError) => e.code,
          ),
        );
      }
      expect(outcomes.slice(0, 5)).toEqual(["sent", "sent", "sent", "sent", "sent"]);
      expect(outcomes.slice(5)).toEqual(["platform_rate_limited", "platform_rate_limited"]);
      expect(emulator.visibleMessages(channelId)).toHaveLength(5);
    } finally {
      emulator.setChannelRateLimit(null);
    }
  });

  test("500 → platform_unavailable (retryable), and discord.js does not retry it", async () => {
    const { emulator, adapter } = harness;
    const before = emulator.restCalls.length;
    emulator.failNext("POST /channels/:id/messages", { kind: "server_error", status: 500 });
    const error = await failure(adapter.send(general(), text("during outage", "outbox_500")));
    expect(error.code).toBe("platform_unavailable");
    expect(error.retryable).toBe(true);
    expect(emulator.restCalls.length - before).toBe(1);
  });

  test("no answer → platform_timeout after requestTimeoutMs", async () => {
    const { emulator, adapter } = harness;
    emulator.failNext("POST /channels/:id/messages", { kind: "hang" });
    const startedAtMs = Date.now();
    const error = await failure(adapter.send(general(), text("into the void", "outbox_hang")));
    expect(error.code).toBe("platform_timeout");
    expect(error.retryable).toBe(true);
    expect(error.message).toContain("300 ms");
    expect(error.message).toContain("Raise DISCORD_REQUEST_TIMEOUT_MS");
    expect(Date.now() - startedAtMs).toBeLessThan(1500);
  });

  test("unknown channel, closed DMs and a bad token are rejected without retry", async () => {
    const { emulator, adapter } = harness;
    const unknown = await failure(adapter.send("dc:123456789012345678", text("hello?", "outbox_404")));
    expect(unknown.code).toBe("platform_rejected");
    expect(unknown.retryable).toBe(false);
    expect(unknown.details?.discordCode).toBe(10003);
    expect(unknown.message).toContain("channel was deleted");

    const user = emulator.createUser("mo");
    emulator.failNext("POST /channels/:id/messages", {
      kind: "api_error",
      status: 403,
      code: 50007,
      message: "Cannot send messages to this user",
    });
    const closed = await failure(
      adapter.send(`dc:${emulator.dmChannelId(user.id)}`, text("hi", "outbox_50007")),
    );
    expect(closed.code).toBe("platform_rejected");
    expect(closed.message).toContain("DMs closed");

    emulator.failNext("POST /channels/:id/typing", {
      kind: "api_error",
      status: 401,
      code: 0,
      message: "401: Unauthorized",
    });
    const unauthorized = await failure(adapter.typing(general()));
    expect(unauthorized.code).toBe("unauthorized");
    expect(unauthorized.message).not.toContain(emulator.token);
  });

  test("text over 2000 chars and foreign targets fail before any request", async () => {
    const { emulator, adapter } = harness;
    const before = emulator.restCalls.length;
    const long = await failure(adapter.send(general(), text("x".repeat(2001), "outbox_long")));
    expect(long.code).toBe("input_invalid");
    expect(long.message).toContain("2001");
    const foreign = await failure(adapter.send("tg:12345", text("hi", "outbox_tg")));
    expect(foreign.code).toBe("input_invalid");
    expect(emulator.restCalls.length).toBe(before);
  });
});
