import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Api, GrammyError, HttpError } from "grammy";
import {
  parseTelegramHtml,
  privateChat,
  startTelegramEmulator,
  supergroupChat,
  type TelegramEmulator,
  TelegramEmulatorRemote,
  user,
} from "./index.ts";

const alice = user(1001, "Alice");

let emulator: TelegramEmulator;
let api: Api;

beforeEach(() => {
  emulator = startTelegramEmulator();
  api = new Api(emulator.token, { apiRoot: emulator.url });
});

afterEach(async () => {
  await emulator.close();
});

async function apiError(promise: Promise<unknown>): Promise<GrammyError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof GrammyError)) throw new Error(`expected a GrammyError, got ${String(error)}`);
  return error;
}

describe("Telegram emulator: Bot API", () => {
  test("checks the token and knows its methods", async () => {
    expect((await api.getMe()).username).toBe("switchboard_test_bot");
    const wrong = new Api("42:AAnotTheRightTokenAtAllxxxx", { apiRoot: emulator.url });
    expect((await apiError(wrong.getMe())).error_code).toBe(401);
    const response = await fetch(`${emulator.url}/bot${emulator.token}/sendInvoice`, { method: "POST" });
    expect(response.status).toBe(404);
  });

  test("getUpdates long-polls, honours offset and limit, and confirms below the offset", async () => {
    const early = await api.getUpdates({ offset: 0, timeout: 0 });
    expect(early).toEqual([]);
    const waiting = api.getUpdates({ timeout: 5 });
    await Bun.sleep(30);
    const first = emulator.incoming({ chat: privateChat(alice), from: alice, text: "one" }).update;
    expect((await waiting).map((u) => u.update_id)).toEqual([first.update_id]);
    const second = emulator.incoming({ chat: privateChat(alice), from: alice, text: "two" }).update;

    // Not confirmed until a later call asks for a higher offset.
    expect((await api.getUpdates({ offset: first.update_id, limit: 1 })).map((u) => u.update_id)).toEqual([
      first.update_id,
    ]);
    expect(emulator.pendingUpdateIds()).toEqual([first.update_id, second.update_id]);
    expect((await api.getUpdates({ offset: first.update_id + 1 })).map((u) => u.update_id)).toEqual([
      second.update_id,
    ]);
    expect(emulator.confirmedUpdateIds()).toEqual([first.update_id]);

    const startedAt = performance.now();
    expect(await api.getUpdates({ offset: second.update_id + 1, timeout: 1 })).toEqual([]);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(950);
    expect(emulator.pendingUpdateIds()).toEqual([]);
  }, 5_000);

  test("a second poller terminates the first with 409; getUpdates while a webhook is set is 409", async () => {
    const firstPoll = apiError(api.getUpdates({ timeout: 5 }));
    await Bun.sleep(20);
    const secondPoll = api.getUpdates({ timeout: 0 });
    expect((await firstPoll).description).toContain("terminated by other getUpdates request");
    await secondPoll;
    await api.setWebhook("http://127.0.0.1:9/hook", { secret_token: "s3cret" });
    expect((await apiError(api.getUpdates())).error_code).toBe(409);
  });

  test("deliverAgain replays an update the client already confirmed", async () => {
    const { update } = emulator.incoming({ chat: privateChat(alice), from: alice, text: "hi" });
    await api.getUpdates({ offset: 0 });
    await api.getUpdates({ offset: update.update_id + 1 });
    expect(emulator.confirmedUpdateIds()).toEqual([update.update_id]);
    emulator.deliverAgain(update.update_id);
    const replayed = await api.getUpdates({ offset: update.update_id + 1 });
    expect(replayed.map((u) => u.update_id)).toEqual([update.update_id]);
    await api.getUpdates({ offset: update.update_id + 1 });
    expect(emulator.pendingUpdateIds()).toEqual([]);
  });

  test("sendMessage validates HTML, length, threads and replies like Telegram", async () => {
    emulator.addChat(privateChat(alice));
    expect((await apiError(api.sendMessage(1001, "<b>bold", { parse_mode: "HTML" }))).description).toBe(
      `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`,
    );
    expect((await apiError(api.sendMessage(1001, "1 < 2", { parse_mode: "HTML" }))).description).toBe(
      "Bad Request: can't parse entities: Unclosed start tag at byte offset 2",
    );
    expect(
      (await apiError(api.sendMessage(1001, "<script>x</script>", { parse_mode: "HTML" }))).description,
    ).toBe(`Bad Request: can't parse entities: Unsupported start tag "script" at byte offset 0`);
    expect((await apiError(api.sendMessage(1001, "y".repeat(4097)))).description).toBe(
      "Bad Request: message is too long",
    );
    expect((await apiError(api.sendMessage(1001, "x", { message_thread_id: 5 }))).description).toBe(
      "Bad Request: message thread not found",
    );
    expect(
      (await apiError(api.sendMessage(1001, "x", { reply_parameters: { message_id: 99 } }))).description,
    ).toBe("Bad Request: message to be replied not found");
    expect((await apiError(api.sendMessage(-1, "x"))).description).toBe("Bad Request: chat not found");
    const sent = await api.sendMessage(1001, "<b>a</b> &amp; &lt;b&gt; & more", { parse_mode: "HTML" });
    expect(sent.text).toBe("a & <b> & more");
    expect(emulator.messages(1001)[0]).toMatchObject({
      messageId: sent.message_id,
      visibleText: "a & <b> & more",
    });
  });

  test("edits, not-modified, deletes, chat actions and drafts", async () => {
    emulator.addChat(privateChat(alice));
    const sent = await api.sendMessage(1001, "v1");
    await api.editMessageText(1001, sent.message_id, "v2");
    expect((await apiError(api.editMessageText(1001, sent.message_id, "v2"))).description).toContain(
      "message is not modified",
    );
    await api.sendChatAction(1001, "typing");
    expect((await apiError(api.sendChatAction(1001, "dancing" as "typing"))).error_code).toBe(400);
    await api.sendMessageDraft(1001, 7, "partial answer");
    expect((await apiError(api.sendMessageDraft(1001, 0, "x"))).error_code).toBe(400);
    expect(emulator.chat(1001)?.drafts.get(7)).toBe("partial answer");
    expect(emulator.messages(1001)[0]?.previousVersions.map((v) => v.text)).toEqual(["v1"]);
    await api.deleteMessage(1001, sent.message_id);
    expect(emulator.messages(1001)).toEqual([]);
    expect((await apiError(api.deleteMessage(1001, sent.message_id))).description).toBe(
      "Bad Request: message to delete not found",
    );
    expect(emulator.chat(1001)?.actions.map((a) => a.action)).toEqual(["typing"]);
  });

  test("faults: 429, 5xx, reset and hang (released, and ended by close)", async () => {
    emulator.addChat(privateChat(alice));
    emulator.injectFault("sendMessage", { kind: "rate_limited", retryAfterSeconds: 3 });
    emulator.injectFault("sendMessage", { kind: "server_error", status: 502, description: "Bad Gateway" });
    emulator.injectFault("sendMessage", { kind: "reset" });
    const limited = await apiError(api.sendMessage(1001, "a"));
    expect([limited.error_code, limited.parameters.retry_after]).toEqual([429, 3]);
    expect((await apiError(api.sendMessage(1001, "b"))).error_code).toBe(502);
    expect(await api.sendMessage(1001, "c").catch((e: unknown) => e)).toBeInstanceOf(HttpError);
    expect((await api.sendMessage(1001, "d")).text).toBe("d");

    emulator.injectFault("sendChatAction", { kind: "hang" }, 2);
    const hung = api.sendChatAction(1001, "typing");
    await emulator.waitFor(() => emulator.faults.hungCount() === 1, 1_000, "the hung call");
    emulator.releaseHung();
    expect(await hung).toBe(true);
    const hungUntilClose = api.sendChatAction(1001, "typing").catch((e: unknown) => e);
    await emulator.waitFor(() => emulator.faults.hungCount() === 1, 1_000, "the second hung call");
    await emulator.close();
    expect(await hungUntilClose).toBeInstanceOf(HttpError);
  });

  test("rate limits: 1 msg/s per chat, 20/min per group, with counters", async () => {
    let nowMs = 1_000_000;
    await emulator.close();
    emulator = startTelegramEmulator({ rateLimits: true, now: () => nowMs });
    api = new Api(emulator.token, { apiRoot: emulator.url });
    const group = supergroupChat(-1007, "Busy");
    emulator.addChat(privateChat(alice));
    emulator.addChat(group);

    await api.sendMessage(1001, "1");
    const limited = await apiError(api.sendMessage(1001, "2"));
    expect([limited.error_code, limited.parameters.retry_after]).toEqual([429, 1]);
    nowMs += 1_000;
    await api.sendMessage(1001, "3");

    for (let i = 0; i < 20; i += 1) {
      nowMs += 1_000;
      await api.sendMessage(group.id, `g${i}`);
    }
    nowMs += 1_000;
    const groupLimited = await apiError(api.sendMessage(group.id, "g20"));
    expect(groupLimited.parameters.retry_after).toBe(40);
    expect(emulator.rateLimitStats()).toMatchObject({
      accepted: 22,
      rejected: 2,
      rejectedByScope: { chat: 1, group: 1, global: 0 },
      perChat: { "1001": { accepted: 2, rejected: 1 }, "-1007": { accepted: 20, rejected: 1 } },
    });
  });

  test("webhook mode POSTs with the secret header and retries non-2xx", async () => {
    const received: { secret: string | null; updateId: number }[] = [];
    let failuresLeft = 2;
    const bot = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (request) => {
        const update = (await request.json()) as { update_id: number };
        received.push({
          secret: request.headers.get("x-telegram-bot-api-secret-token"),
          updateId: update.update_id,
        });
        if (failuresLeft > 0) {
          failuresLeft -= 1;
          return new Response("busy", { status: 503 });
        }
        return new Response("ok");
      },
    });
    try {
      await emulator.close();
      emulator = startTelegramEmulator({ webhook: { firstRetryDelayMs: 10 } });
      api = new Api(emulator.token, { apiRoot: emulator.url });
      await api.setWebhook(`http://127.0.0.1:${bot.port}/hook`, { secret_token: "hook_secret" });
      const { update } = emulator.incoming({ chat: privateChat(alice), from: alice, text: "hi" });
      await emulator.waitForConfirmed(update.update_id, 2_000);
      expect(received).toEqual([1, 2, 3].map(() => ({ secret: "hook_secret", updateId: update.update_id })));
      expect(emulator.webhookAttempts().map((a) => a.status)).toEqual([503, 503, 200]);
    } finally {
      await bot.stop(true);
    }
  });
});

describe("Telegram emulator: control over HTTP", () => {
  test("a remote client injects messages and faults and reads the transcript", async () => {
    const remote = new TelegramEmulatorRemote(emulator.url);
    const forum = supergroupChat(-1003, "Forum", { isForum: true });
    const { update, message } = await remote.incoming({
      chat: forum,
      from: alice,
      text: "@switchboard_test_bot hi",
      topic: { threadId: 12, name: "Help" },
    });
    expect(message.message_thread_id).toBe(12);
    expect((await remote.state()).pendingUpdateIds).toEqual([update.update_id]);
    await remote.injectFault("sendMessage", {
      kind: "api_error",
      status: 403,
      description: "Forbidden: bot was kicked",
    });
    expect((await apiError(api.sendMessage(forum.id, "x", { message_thread_id: 12 }))).error_code).toBe(403);
    await api.sendMessage(forum.id, "answer", { message_thread_id: 12 });
    const calls = await remote.calls("sendMessage");
    expect(calls.map((c) => [c.fault ?? null, c.response?.ok])).toEqual([
      ["api_error", false],
      [null, true],
    ]);
    const shown = await remote.messages(forum.id);
    expect(shown.map((m) => [m.visibleText, m.threadId])).toEqual([
      ["@switchboard_test_bot hi", 12],
      ["answer", 12],
    ]);
  });
});

describe("parseTelegramHtml", () => {
  test("nesting, attributes and entities", () => {
    expect(parseTelegramHtml('<b>x <i>y</i></b> <a href="https://e.x">l</a> &#65;&#x42;')).toEqual({
      ok: true,
      visibleText: "x y l AB",
    });
    expect(parseTelegramHtml("<b><i>x</b></i>")).toEqual({
      ok: false,
      description: `Bad Request: can't parse entities: Unmatched end tag at byte offset 7, expected "</i>", found "</b>"`,
    });
    expect(parseTelegramHtml("x</b>").ok).toBe(false);
  });
});

describe("Telegram emulator: command menus", () => {
  test("setMyCommands keeps one list per scope and language, validated like the Bot API", async () => {
    await api.setMyCommands([{ command: "new", description: "Start over" }], {
      scope: { type: "all_private_chats" },
    });
    await api.setMyCommands([{ command: "new", description: "Neu anfangen" }], {
      scope: { type: "all_private_chats" },
      language_code: "de",
    });
    expect(emulator.menus.get("all_private_chats")).toEqual([{ command: "new", description: "Start over" }]);
    expect(await api.getMyCommands({ scope: { type: "all_private_chats" }, language_code: "de" })).toEqual([
      { command: "new", description: "Neu anfangen" },
    ]);
    expect(emulator.menus.get("all_group_chats")).toBeUndefined();

    const invalid = await apiError(api.setMyCommands([{ command: "New-Chat", description: "x" }]));
    expect(invalid.description).toBe("Bad Request: BOT_COMMAND_INVALID");
    const tooLong = await apiError(api.setMyCommands([{ command: "new", description: "x".repeat(257) }]));
    expect(tooLong.description).toBe("Bad Request: BOT_COMMAND_DESCRIPTION_INVALID");
    const tooMany = Array.from({ length: 101 }, (_, i) => ({ command: `c${i}`, description: "d" }));
    expect((await apiError(api.setMyCommands(tooMany))).description).toBe(
      "Bad Request: BOT_COMMANDS_TOO_MUCH",
    );

    await api.deleteMyCommands({ scope: { type: "all_private_chats" }, language_code: "de" });
    expect(emulator.menus.all()).toEqual({
      "all_private_chats/": [{ command: "new", description: "Start over" }],
    });
  });
});
