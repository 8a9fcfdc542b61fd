/**
 * The Matrix adapter's own paths against the homeserver emulator: the durable sync token
 * (resumed after a restart, advanced only past admitted events), invites, the stalled and
 * rate-limited /sync, mention gating, threads, edits, media in, encrypted rooms, login.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { encodeTarget, type MatrixAdapter } from "../../../channels/matrix/index.ts";
import type { InboundMessage, IngressOutcome } from "../../../channels/types.ts";
import { type MatrixEmulator, startMatrixEmulator } from "../../emulators/matrix/index.ts";
import { matrixAdapter, memoryStateStore, sinceCovers } from "./helpers.ts";

const WAIT_MS = 5_000;

let emulator: MatrixEmulator;
const running: MatrixAdapter[] = [];

afterEach(async () => {
  for (const adapter of running.splice(0)) await adapter.stop();
  await emulator?.close();
});

function recorder(decide?: (message: InboundMessage) => IngressOutcome) {
  const calls: InboundMessage[] = [];
  const ingress = async (message: InboundMessage): Promise<IngressOutcome> => {
    calls.push(message);
    return decide?.(message) ?? { kind: "admitted", runId: `run_${message.updateKey}`, conversationId: "c" };
  };
  return Object.assign(ingress, { calls });
}

async function started(
  options: Parameters<typeof matrixAdapter>[1] = {},
  decide?: (message: InboundMessage) => IngressOutcome,
) {
  const built = matrixAdapter(emulator, options);
  const ingress = recorder(decide);
  const ignored: string[] = [];
  await built.adapter.start(ingress, { ignored: (reason) => ignored.push(reason) });
  running.push(built.adapter);
  return { ...built, ingress, ignored };
}

async function stop(adapter: MatrixAdapter): Promise<void> {
  running.splice(running.indexOf(adapter), 1);
  await adapter.stop();
}

describe("the sync token", () => {
  test("a restart resumes from the saved token: messages written while down arrive once, nothing twice", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    emulator.sendText(room, alice, "before the bot's first start");
    const state = memoryStateStore();

    const first = await started({ state });
    const one = emulator.sendText(room, alice, "one");
    await emulator.waitFor(() => sinceCovers(emulator, state, room, one), WAIT_MS, "the token past 'one'");
    expect(first.ingress.calls.map((m) => m.text)).toEqual(["one"]);
    await stop(first.adapter);

    emulator.sendText(room, alice, "two, while down");
    emulator.sendText(room, alice, "three, while down");
    const second = await started({ state });
    await emulator.waitFor(
      () => second.ingress.calls.length >= 2,
      WAIT_MS,
      "the messages written while down",
    );
    const four = emulator.sendText(room, alice, "four");
    await emulator.waitFor(() => sinceCovers(emulator, state, room, four), WAIT_MS, "the token past 'four'");
    expect(second.ingress.calls.map((m) => m.text)).toEqual(["two, while down", "three, while down", "four"]);
    expect(emulator.callsOf("sync").filter((c) => c.since === null)).toHaveLength(1);
  });

  test("more events than the timeline limit while down are read back with /messages, in order, each once", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const state = memoryStateStore();
    const config = { timelineLimit: 3 };
    const first = await started({ state, config });
    await stop(first.adapter);
    const written = Array.from({ length: 11 }, (_, n) => `while down ${n + 1}`);
    for (const text of written) emulator.sendText(room, alice, text);
    const second = await started({ state, config });
    await emulator.waitFor(() => second.ingress.calls.length >= written.length, WAIT_MS, "every message");
    expect(second.ingress.calls.map((m) => m.text)).toEqual(written);
    // 8 left out of a timeline of 3: three pages of 3.
    expect(emulator.callsOf("messages")).toHaveLength(3);
    expect(second.logger.records.find((r) => r.event === "matrix.backfilled")).toMatchObject({
      roomId: room,
      events: 8,
    });
  });

  test("a batch ingress refuses is fetched again from the same token; what was admitted comes again by its id", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const state = memoryStateStore();
    let refusals = 1;
    const { ingress } = await started({ state }, (message) => {
      if (message.text === "second" && refusals-- > 0) throw new Error("database is locked");
      return { kind: "admitted", runId: `run_${message.updateKey}`, conversationId: "c" };
    });
    const first = emulator.sendText(room, alice, "first");
    const second = emulator.sendText(room, alice, "second");
    await emulator.waitFor(() => sinceCovers(emulator, state, room, second), WAIT_MS, "the token past both");
    expect(ingress.calls.map((m) => m.updateKey)).toEqual([first, second, first, second]);
    const sinces = emulator.callsOf("sync").map((c) => c.since);
    // The refused batch's token was asked for twice.
    expect(sinces.filter((since, index) => index > 0 && since === sinces[index - 1]).length).toBeGreaterThan(
      0,
    );
  });

  test("a /sync that never answers is abandoned after its timeout plus the margin, and polling goes on", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const { ingress, logger } = await started({ config: { syncTimeoutMs: 200, syncStallMarginMs: 300 } });
    emulator.failNext("sync", { kind: "stall" });
    await emulator.waitFor(
      () => logger.records.find((r) => r.event === "matrix.sync_stalled"),
      WAIT_MS,
      "the stalled sync to be noticed",
    );
    emulator.sendText(room, alice, "after the stall");
    await emulator.waitFor(() => ingress.calls.length === 1, WAIT_MS, "the message after the stall");
    expect(emulator.callsOf("sync").some((c) => c.fault === "stall")).toBe(true);
  });

  test("M_LIMIT_EXCEEDED on /sync waits the homeserver's retry_after_ms", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const { ingress, logger } = await started();
    const before = emulator.callsOf("sync").length;
    emulator.failNext("sync", { kind: "rate_limited", retryAfterMs: 400 });
    // Wake the current long poll so the next one meets the fault.
    emulator.sendText(room, alice, "wake");
    await emulator.waitFor(
      () => logger.records.find((r) => r.event === "matrix.sync_failed"),
      WAIT_MS,
      "the 429",
    );
    const limitedAt = Date.now();
    emulator.sendText(room, alice, "after the limit");
    await emulator.waitFor(
      () => ingress.calls.some((m) => m.text === "after the limit"),
      WAIT_MS,
      "the message",
    );
    expect(Date.now() - limitedAt).toBeGreaterThanOrEqual(350);
    expect(emulator.callsOf("sync").length).toBeGreaterThan(before);
  });
});

describe("rooms", () => {
  test("invites from allowed users are joined; others are declined and logged", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const mallory = emulator.createUser("mallory").userId;
    const { logger, ignored } = await started({ config: { invites: { kind: "users", ids: [alice] } } });
    const welcome = emulator.createRoom(alice);
    const unwanted = emulator.createRoom(mallory);
    await emulator.waitFor(
      () => emulator.membership(welcome, emulator.bot.userId) === "join",
      WAIT_MS,
      "the join",
    );
    await emulator.waitFor(
      () => emulator.membership(unwanted, emulator.bot.userId) === "leave",
      WAIT_MS,
      "the decline",
    );
    expect(logger.records.find((r) => r.event === "matrix.invite_declined")).toMatchObject({
      roomId: unwanted,
      inviter: mallory,
    });
    expect(ignored).toContain("invite_not_allowed");
  });

  test("in a room of several, only a mention or a reply to the bot is addressed to it; a DM always is", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const bob = emulator.createUser("bob").userId;
    const group = emulator.createRoom(alice, { members: [bob], botJoined: true });
    const dm = emulator.createRoom(bob, { botJoined: true });
    const { adapter, ingress } = await started();
    emulator.sendText(group, alice, "just chatting");
    emulator.sendText(group, alice, "hey bot", { "m.mentions": { user_ids: [emulator.bot.userId] } });
    const { messageIds } = await adapter.send(encodeTarget({ roomId: group }), {
      text: "I said something",
      format: "plain",
      idempotencyKey: "obx_group#0",
    });
    emulator.sendText(group, bob, "answering the bot", {
      "m.relates_to": { "m.in_reply_to": { event_id: messageIds[0] } },
    });
    emulator.sendText(dm, bob, "private");
    await emulator.waitFor(() => ingress.calls.length === 4, WAIT_MS, "four messages");
    expect(ingress.calls.map((m) => [m.text, m.surface, m.addressedToBot])).toEqual([
      ["just chatting", "group", false],
      ["hey bot", "group", true],
      ["answering the bot", "group", true],
      ["private", "dm", true],
    ]);
    expect(ingress.calls[2]?.replyTo).toBe(messageIds[0]);
    // The name members see, from the room's member state.
    expect(ingress.calls[0]?.principal).toEqual({ id: alice, name: "Alice", isBot: false });
  });

  test("a message in an m.thread is its own conversation in the room, answered in the thread", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const root = emulator.sendText(room, alice, "root");
    const { adapter, ingress } = await started();
    emulator.sendText(room, alice, "in the thread", {
      "m.relates_to": {
        rel_type: "m.thread",
        event_id: root,
        is_falling_back: true,
        "m.in_reply_to": { event_id: root },
      },
    });
    await emulator.waitFor(() => ingress.calls[0], WAIT_MS, "the thread message");
    const message = ingress.calls[0]!;
    expect(message).toMatchObject({
      surface: "thread",
      conversationKey: encodeTarget({ roomId: room, threadRoot: root }),
      roomKey: encodeTarget({ roomId: room }),
    });
    expect(message.replyTo).toBeUndefined();
    await adapter.send(message.replyTarget, { text: "answer", format: "plain", idempotencyKey: "obx_t#0" });
    expect(emulator.shown(room, emulator.bot.userId, { thread: root }).map((m) => m.body)).toEqual([
      "answer",
    ]);
  });

  test("an encrypted room is refused once: a notice there, a log line and the ignored metric per event", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const state = memoryStateStore();
    const first = await started({ state });
    emulator.encrypt(room, alice);
    emulator.sendEvent(room, alice, "m.room.encrypted", {
      algorithm: "m.megolm.v1.aes-sha2",
      ciphertext: "AwgA",
    });
    emulator.sendEvent(room, alice, "m.room.encrypted", {
      algorithm: "m.megolm.v1.aes-sha2",
      ciphertext: "AwgB",
    });
    const notices = () => emulator.shown(room, emulator.bot.userId).filter((m) => m.msgtype === "m.notice");
    await emulator.waitFor(() => first.ignored.length >= 3, WAIT_MS, "the refusals");
    expect(notices()).toHaveLength(1);
    expect(notices()[0]?.body).toContain("does not support encrypted rooms");
    expect(first.logger.records.filter((r) => r.event === "matrix.encrypted_room_refused")).toHaveLength(1);
    expect(first.ingress.calls).toEqual([]);
    await stop(first.adapter);

    const second = await started({ state });
    emulator.sendEvent(room, alice, "m.room.encrypted", {
      algorithm: "m.megolm.v1.aes-sha2",
      ciphertext: "AwgC",
    });
    await emulator.waitFor(() => second.ignored.length >= 1, WAIT_MS, "the refusal after the restart");
    expect(notices()).toHaveLength(1);
  });
});

describe("messages", () => {
  test("an edit is passed on as an edit of the message it replaces (ingress decides what it does)", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const edit = (original: string, body: string) =>
      emulator.sendText(room, alice, `* ${body}`, {
        "m.new_content": { msgtype: "m.text", body },
        "m.relates_to": { rel_type: "m.replace", event_id: original },
      });
    const { ingress } = await started();
    const original = emulator.sendText(room, alice, "tpyo");
    const editId = edit(original, "typo");
    await emulator.waitFor(() => ingress.calls[1], WAIT_MS, "the edit");
    expect(ingress.calls[0]).toMatchObject({ text: "tpyo", updateKey: original, messageId: original });
    expect(ingress.calls[0]?.edited).toBeUndefined();
    expect(ingress.calls[1]).toMatchObject({
      text: "typo",
      updateKey: editId,
      messageId: original,
      edited: { messageId: original },
    });
  });

  test("a photo arrives as an attachment fetched through the authenticated media endpoint", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const { adapter, ingress } = await started();
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const url = emulator.upload(png, "image/png", "cat.png");
    emulator.sendEvent(room, alice, "m.room.message", {
      msgtype: "m.image",
      body: "look at this",
      filename: "cat.png",
      url,
      info: { mimetype: "image/png", size: png.byteLength },
    });
    await emulator.waitFor(() => ingress.calls[0], WAIT_MS, "the photo");
    expect(ingress.calls[0]).toMatchObject({
      text: "look at this",
      attachments: [
        { kind: "photo", ref: url, name: "cat.png", mediaType: "image/png", sizeBytes: png.byteLength },
      ],
    });
    const file = await adapter.openFile(url, AbortSignal.timeout(2_000));
    const chunks: Uint8Array[] = [];
    for await (const chunk of file.body) chunks.push(chunk);
    expect(Buffer.concat(chunks)).toEqual(Buffer.from(png));
    const download = emulator.callsOf("download").at(-1);
    expect(download?.userId).toBe(emulator.bot.userId);
  });

  test("rich text goes as m.text with a plain body and org.matrix.custom.html, line breaks kept", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const { adapter } = await started();
    await adapter.send(encodeTarget({ roomId: room }), {
      text: '<strong>Hi</strong> &amp; <a href="https://example.org/a">docs</a>\n<script>x</script>',
      format: "rich",
      idempotencyKey: "obx_rich#0",
    });
    const [shown] = emulator.shown(room, emulator.bot.userId);
    expect(shown?.content).toMatchObject({
      msgtype: "m.text",
      body: "Hi & docs (https://example.org/a)\nx",
      format: "org.matrix.custom.html",
      formatted_body:
        '<strong>Hi</strong> &amp; <a href="https://example.org/a">docs</a><br>&lt;script&gt;x&lt;/script&gt;',
    });
  });

  test("an edit that keeps a prompt's buttons leaves one reaction per button; one without them takes them away", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const { adapter } = await started();
    const target = encodeTarget({ roomId: room });
    const buttons = [
      [
        { label: "Approve", data: "ap:1" },
        { label: "Deny", data: "ap:2" },
      ],
    ];
    const { messageIds } = await adapter.send(target, {
      text: "Run it?",
      format: "plain",
      idempotencyKey: "obx_p#0",
      buttons,
    });
    const id = messageIds[0]!;
    const own = () =>
      emulator
        .reactions(room, id)
        .filter((r) => r.sender === emulator.bot.userId)
        .map((r) => r.key);
    expect(own()).toEqual(["✅", "❌"]);
    expect(emulator.shown(room, emulator.bot.userId)[0]?.body).toBe("Run it?\n\n✅ Approve · ❌ Deny");
    await adapter.edit(target, id, {
      text: "Run it? (still waiting)",
      format: "plain",
      idempotencyKey: "obx_p#0",
      buttons,
    });
    expect(own()).toEqual(["✅", "❌"]);
    await adapter.edit(target, id, { text: "Approved by Alice", format: "plain", idempotencyKey: "obx_p#0" });
    expect(own()).toEqual([]);
    expect(emulator.shown(room, emulator.bot.userId)[0]).toMatchObject({
      body: "Approved by Alice",
      edits: 2,
    });
  });

  test("typing and a read receipt for each admitted message reach the homeserver", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const room = emulator.createRoom(alice, { botJoined: true });
    const { adapter, ingress } = await started();
    const id = emulator.sendText(room, alice, "hello");
    await emulator.waitFor(
      () => emulator.receipts.find((r) => r.eventId === id),
      WAIT_MS,
      "the read receipt",
    );
    expect(ingress.calls).toHaveLength(1);
    await adapter.typing(encodeTarget({ roomId: room }));
    expect(emulator.typing.at(-1)).toMatchObject({ roomId: room, userId: emulator.bot.userId, typing: true });
  });
});

describe("login", () => {
  test("with a user id and password the bot logs in once and keeps the session in the database", async () => {
    emulator = startMatrixEmulator();
    const state = memoryStateStore();
    const config = {
      accessToken: undefined,
      userId: emulator.bot.userId,
      password: emulator.bot.password,
    };
    const first = await started({ state, config });
    expect(first.adapter.account).toBe(emulator.bot.userId);
    await stop(first.adapter);
    const second = await started({ state, config });
    expect(second.adapter.account).toBe(emulator.bot.userId);
    expect(emulator.callsOf("login")).toHaveLength(1);
    const session = JSON.parse(state.values.get(`matrix:${emulator.bot.userId}:session`) ?? "{}");
    expect(session.deviceId).toMatch(/^DEV/);
    expect(JSON.stringify(first.logger.records)).not.toContain(session.accessToken);
  });

  test("a token of another user than MATRIX_USER_ID is refused at start, naming both", async () => {
    emulator = startMatrixEmulator();
    const { adapter } = matrixAdapter(emulator, { config: { userId: "@someone:emulator.test" } });
    await expect(adapter.start(recorder())).rejects.toThrow(/MATRIX_USER_ID is @someone:emulator.test/);
  });
});
