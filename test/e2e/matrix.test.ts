// Kept per platform: Matrix's /sync token kept in the database, and sends idempotent by transaction id.
/**
 * End to end through a real gateway process: the Matrix adapter against the homeserver emulator
 * (in this process), the model behind the fake OpenAI-compatible server, SQLite on a temp file.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import sharp from "sharp";
import type { OutboxRecord } from "../../outbox/types.ts";
import { type ShownEvent, startMatrixEmulator } from "../emulators/matrix/index.ts";
import {
  appendRule,
  approvalStates,
  notesIn,
  runApproveOnceScenario,
  writeApprovalConfig,
} from "./support/approval-scenario.ts";
import { runCliJson } from "./support/cli.ts";
import { slowAnswerRule, useE2eFixture } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";
import { onePagePdf, userParts } from "./support/media.ts";
import { metricValue, unaddressedCount } from "./support/metrics.ts";
import { outboxRecordOf, waitUntilSettled } from "./support/settled.ts";

const fixture = useE2eFixture("switchboard-e2e-matrix-", () => startMatrixEmulator());
const { dir, llm, platform: mx } = fixture;
const notes = notesIn(dir.path);
const alice = mx.createUser("alice").userId;
const bob = mx.createUser("bob").userId;
const carol = mx.createUser("carol").userId;
const TIMEOUT = 20_000;

const config = writeApprovalConfig(dir.path, notes, {
  "matrix:dm": { inputPolicy: "queue", delivery: "terminal" },
  "matrix:group": { inputPolicy: "queue", delivery: "terminal" },
  "matrix:thread": { inputPolicy: "queue", delivery: "stream" },
});
const env = () =>
  e2eGatewayEnv({
    dir: dir.path,
    llm,
    extra: {
      SWITCHBOARD_CONFIG: config,
      MATRIX_HOMESERVER_URL: mx.url,
      MATRIX_ACCESS_TOKEN: mx.bot.token,
      MATRIX_ALLOWED_USERS: [alice, bob].join(","),
      // send_file fetches from the local page server below.
      SWITCHBOARD_FETCH_ALLOW_PRIVATE: "on",
    },
  });
const dbPath = () => env().SWITCHBOARD_DB!;

const PDF = onePagePdf("the quarterly report");
const pages = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (request) =>
    new URL(request.url).pathname === "/report.pdf"
      ? new Response(PDF as Uint8Array<ArrayBuffer>)
      : new Response("missing", { status: 404 }),
});
afterAll(() => pages.stop(true));

let gateway: GatewayProcess;
async function restart(signal: "SIGTERM" | "SIGKILL", whileDown?: () => void): Promise<void> {
  await gateway.kill(signal);
  whileDown?.();
  gateway = await fixture.startGateway(env(), GATEWAY_START_TIMEOUT_MS);
}

beforeAll(async () => {
  gateway = await fixture.startGateway(env(), GATEWAY_START_TIMEOUT_MS);
}, GATEWAY_START_TIMEOUT_MS);

const botShown = (room: string): ShownEvent[] => mx.shown(room, mx.bot.userId);
const replies = (room: string, text: string) => botShown(room).filter((m) => m.body.includes(text));

function waitForReply(room: string, text: string): Promise<ShownEvent> {
  return mx.waitFor(() => replies(room, text)[0], TIMEOUT, `a reply containing "${text}" in ${room}`);
}

/** A DM room `user` made, with the bot joined on the user's invite. */
async function dmWith(user: string): Promise<string> {
  const room = mx.createRoom(user);
  await mx.waitFor(() => mx.membership(room, mx.bot.userId) === "join", TIMEOUT, "the bot's join");
  return room;
}

describe("matrix end to end", () => {
  test("a DM: the bot joins on an allowed user's invite and answers once, as m.text with HTML, with a read receipt", async () => {
    const room = await dmWith(alice);
    const question = mx.sendText(room, alice, "hello **matrix**");
    const reply = await waitForReply(room, "echo: hello");
    expect(reply.content).toMatchObject({
      msgtype: "m.text",
      body: "echo: hello matrix",
      format: "org.matrix.custom.html",
      formatted_body: "echo: hello <strong>matrix</strong>",
    });
    await mx.waitFor(
      () => mx.receipts.some((r) => r.eventId === question && r.userId === mx.bot.userId),
      TIMEOUT,
      "the bot's read receipt",
    );
    expect(llm.requestsContaining("hello **matrix**")).toHaveLength(1);
    await waitUntilSettled(dbPath());
    expect(replies(room, "echo: hello")).toHaveLength(1);
  }, 30_000);

  test("an invite from a user not on the list is declined and logged", async () => {
    const room = mx.createRoom(carol);
    await mx.waitFor(() => mx.membership(room, mx.bot.userId) === "leave", TIMEOUT, "the decline");
    await eventually(
      () => gateway.logs.some((l) => l.includes("matrix.invite_declined") && l.includes(carol)),
      TIMEOUT,
      "the matrix.invite_declined log line",
    );
  }, 30_000);

  test("a room: a message that neither mentions nor replies to the bot is not answered; a mention is", async () => {
    const room = mx.createRoom(alice, { members: [bob] });
    await mx.waitFor(() => mx.membership(room, mx.bot.userId) === "join", TIMEOUT, "the bot's join");
    const before = await unaddressedCount(gateway.url, "matrix");
    mx.sendText(room, bob, "just chatting among us");
    mx.sendText(room, alice, `${mx.bot.userId}: what is up`, { "m.mentions": { user_ids: [mx.bot.userId] } });
    await waitForReply(room, "echo: ");
    await eventually(
      async () => (await unaddressedCount(gateway.url, "matrix")) === before + 1,
      TIMEOUT,
      "the unaddressed message counted",
    );
    expect(llm.requestsContaining("just chatting among us")).toHaveLength(0);
    expect(botShown(room).map((m) => m.body)).toEqual([`echo: ${mx.bot.userId}: what is up`]);
  }, 30_000);

  test("messages written while the gateway was stopped are answered after it starts, each once", async () => {
    const room = await dmWith(bob);
    mx.sendText(room, bob, "warm up");
    await waitForReply(room, "echo: warm up");
    await restart("SIGTERM", () => {
      mx.sendText(room, bob, "written while down, one");
      mx.sendText(room, bob, "written while down, two");
    });
    await waitForReply(room, "echo: written while down, one");
    await waitForReply(room, "echo: written while down, two");
    await waitUntilSettled(dbPath());
    expect(botShown(room).map((m) => m.body)).toEqual([
      "echo: warm up",
      "echo: written while down, one",
      "echo: written while down, two",
    ]);
    expect(llm.requestsContaining("written while down, one")).toHaveLength(1);
  }, 60_000);

  test("an event the homeserver delivers again after a restart is a duplicate: one model call, one reply", async () => {
    const room = await dmWith(alice);
    const event = mx.sendText(room, alice, "replay me once");
    await waitForReply(room, "echo: replay me once");
    await waitUntilSettled(dbPath());
    const duplicates = () =>
      metricValue(gateway.url, "switchboard_inbound_duplicates_total", { channel: "matrix" });
    await restart("SIGTERM", () => mx.redeliver(room, event));
    await eventually(async () => (await duplicates()) === 1, TIMEOUT, "the duplicate at ingress");
    await waitUntilSettled(dbPath());
    expect(llm.requestsContaining("replay me once")).toHaveLength(1);
    expect(replies(room, "echo: replay me once")).toHaveLength(1);
  }, 60_000);

  test("a token saved before its events were admitted brings them again: answered once", async () => {
    const room = await dmWith(bob);
    const event = mx.sendText(room, bob, "admitted, token not saved");
    await waitForReply(room, "echo: admitted, token not saved");
    await waitUntilSettled(dbPath());
    // The crash window: the event admitted, the gateway gone before it saved the token past it.
    await restart("SIGKILL", () => {
      const position = mx.world.find(room, event)!.pos;
      const db = new Database(dbPath());
      try {
        db.query("UPDATE channel_state SET value = ? WHERE name = ?").run(
          `s${position - 1}`,
          `matrix:${mx.bot.userId}:since`,
        );
      } finally {
        db.close();
      }
    });
    await eventually(
      async () =>
        (await metricValue(gateway.url, "switchboard_inbound_duplicates_total", { channel: "matrix" })) === 1,
      TIMEOUT,
      "the event brought again, found a duplicate at ingress",
    );
    mx.sendText(room, bob, "and a new one");
    await waitForReply(room, "echo: and a new one");
    await waitUntilSettled(dbPath());
    expect(llm.requestsContaining("admitted, token not saved")).toHaveLength(1);
    expect(replies(room, "echo: admitted, token not saved")).toHaveLength(1);
  }, 60_000);

  test("SIGKILL while a reply's send hangs after the homeserver stored it: sent again with the same txnId, shown once", async () => {
    const room = await dmWith(alice);
    const sends = () =>
      mx
        .callsOf("send")
        .filter((c) => c.path.includes(encodeURIComponent(room)) && c.path.includes("/send/m.room.message/"));
    const before = sends().length;
    mx.failNext("send", { kind: "answer_lost" }, { eventType: "m.room.message" });
    mx.sendText(room, alice, "hang on matrix");
    await mx.waitFor(() => sends().length === before + 1, TIMEOUT, "the hanging send");
    expect(replies(room, "echo: hang on matrix")).toHaveLength(1); // stored; the gateway never heard
    const row = outboxRecordOf(dbPath(), "echo: hang on matrix");
    expect(row.state).toBe("sending");

    await restart("SIGKILL");
    const record = await eventually(
      async () => {
        const shown = await runCliJson<OutboxRecord>(["outbox", "show", row.id], {
          SWITCHBOARD_DB: dbPath(),
        });
        return shown.state === "delivered" ? shown : undefined;
      },
      TIMEOUT,
      "the recovered record to be delivered",
    );
    const [first, retry] = sends().slice(before);
    expect(retry?.txnId).toBe(first?.txnId);
    expect(retry?.deduped).toBe(true);
    const shown = replies(room, "echo: hang on matrix");
    expect(shown).toHaveLength(1);
    expect(record.receipt?.messageIds).toEqual([shown[0]!.eventId]);
    expect(record.history.map((entry) => entry.action)).toContain("recovered");
  }, 60_000);

  test("an encrypted room is refused once: a notice, a log line, and the ignored metric", async () => {
    const room = await dmWith(bob);
    mx.encrypt(room, bob);
    mx.sendEvent(room, bob, "m.room.encrypted", { algorithm: "m.megolm.v1.aes-sha2", ciphertext: "AwgA" });
    mx.sendEvent(room, bob, "m.room.encrypted", { algorithm: "m.megolm.v1.aes-sha2", ciphertext: "AwgB" });
    const notice = await mx.waitFor(
      () => botShown(room).find((m) => m.msgtype === "m.notice"),
      TIMEOUT,
      "the refusal notice",
    );
    expect(notice.body).toContain("does not support encrypted rooms");
    await eventually(
      async () =>
        (await metricValue(gateway.url, "switchboard_inbound_ignored_total", {
          channel: "matrix",
          reason: "encrypted_room",
        })) >= 3,
      TIMEOUT,
      "the refusals counted",
    );
    expect(gateway.logs.filter((l) => l.includes("matrix.encrypted_room_refused"))).toHaveLength(1);
    expect(botShown(room).filter((m) => m.msgtype === "m.notice")).toHaveLength(1);
  }, 30_000);

  test("a streamed answer in a thread is one message, grown by m.replace edits to the whole answer", async () => {
    const room = await dmWith(alice);
    const root = mx.sendText(room, alice, "a thread about streaming");
    await waitForReply(room, "echo: a thread about streaming");
    const answer = "one two three four five six seven eight nine ten eleven twelve";
    llm.addRules([slowAnswerRule("stream this please", answer, 6, 400)]);
    mx.sendText(room, alice, "stream this please", {
      "m.relates_to": {
        rel_type: "m.thread",
        event_id: root,
        is_falling_back: true,
        "m.in_reply_to": { event_id: root },
      },
    });
    const inThread = () => mx.shown(room, mx.bot.userId, { thread: root });
    await mx.waitFor(() => inThread()[0]?.body === answer, TIMEOUT, "the whole answer in the thread");
    await waitUntilSettled(dbPath());
    expect(inThread()).toHaveLength(1);
    expect(inThread()[0]!.edits).toBeGreaterThanOrEqual(1);
    const edit = mx
      .events(room)
      .find(
        (e) => (e.content["m.relates_to"] as { rel_type?: string } | undefined)?.rel_type === "m.replace",
      );
    expect(edit?.content).toMatchObject({ "m.new_content": { msgtype: "m.text" } });
    expect(String(edit?.content.body)).toStartWith("* ");
  }, 60_000);

  test("a photo in reaches the model as an image; a file out is uploaded, then sent as m.file with its caption", async () => {
    const room = await dmWith(bob);
    const png = await sharp({
      create: { width: 40, height: 30, channels: 3, background: { r: 200, g: 10, b: 10 } },
    })
      .png()
      .toBuffer();
    const url = mx.upload(new Uint8Array(png), "image/png", "red.png");
    mx.sendEvent(room, bob, "m.room.message", {
      msgtype: "m.image",
      body: "what colour is this photo",
      filename: "red.png",
      url,
      info: { mimetype: "image/png", size: png.byteLength, w: 40, h: 30 },
    });
    await waitForReply(room, "echo: what colour is this photo");
    const image = userParts(llm.requests(), "what colour is this photo").find((p) => p.type === "image_url");
    expect(image).toBeDefined();
    expect(mx.callsOf("download").some((c) => c.userId === mx.bot.userId)).toBe(true);

    llm.addRules([
      {
        match: { lastUserContains: "send me the report", lastRole: "user" },
        reply: {
          kind: "tool-call",
          toolName: "send_file",
          input: { url: `http://127.0.0.1:${pages.port}/report.pdf`, caption: "the **report**" },
        },
      },
      {
        match: { lastRole: "tool", lastToolInputContains: "report.pdf" },
        reply: { kind: "text", text: "Here it is." },
      },
    ]);
    mx.sendText(room, bob, "send me the report");
    await waitForReply(room, "Here it is.");
    await waitUntilSettled(dbPath());
    const file = botShown(room).find((m) => m.msgtype === "m.file");
    expect(file?.content).toMatchObject({
      body: "the report",
      formatted_body: "the <strong>report</strong>",
      filename: "report.pdf",
      info: { mimetype: "application/pdf", size: PDF.byteLength },
    });
    expect([...(mx.mediaOf(String(file?.content.url))?.bytes ?? [])]).toEqual([...PDF]);
    expect(mx.callsOf("upload")).toHaveLength(1);
  }, 60_000);

  test("approve by reaction: ✅ ❌ pre-added, the asker's ✅ runs the call once; a repeated or replayed press decides nothing more", async () => {
    const room = await dmWith(alice);
    type Press = { reaction: string; noticesBefore: number };
    const notices = () => botShown(room).filter((m) => m.msgtype === "m.notice");
    const ownKeys = (eventId: string) =>
      mx
        .reactions(room, eventId)
        .filter((r) => r.sender === mx.bot.userId)
        .map((r) => r.key);
    const buttonsOf = (prompt: ShownEvent) =>
      (prompt.content["org.switchboard.buttons"] ?? []) as Array<{ label: string; key: string }>;
    await runApproveOnceScenario<ShownEvent, Press>({
      llm,
      notes,
      asker: "Alice",
      ask: (text) => mx.sendText(room, alice, text),
      promptFor: (text) =>
        mx.waitFor(
          () =>
            botShown(room).find(
              (m) =>
                m.body.includes("Approval needed") &&
                m.body.includes(text) &&
                ownKeys(m.eventId).length === 3,
            ),
          TIMEOUT,
          `the approval prompt for "${text}" with its reactions`,
        ),
      labels: (prompt) => buttonsOf(prompt).map((b) => b.label),
      press: (prompt, label) => {
        const key = buttonsOf(prompt).find((b) => b.label === label)?.key;
        if (key === undefined) throw new Error(`no button "${label}"`);
        const noticesBefore = notices().length;
        return { reaction: mx.react(room, alice, prompt.eventId, key), noticesBefore };
      },
      noticeOf: async (press) =>
        (await mx.waitFor(() => notices()[press.noticesBefore], TIMEOUT, "the press's notice")).body,
      redeliver: (press) => mx.redeliver(room, press.reaction),
      current: (prompt) => {
        const now = botShown(room).find((m) => m.eventId === prompt.eventId);
        return now && { text: now.body, buttons: ownKeys(prompt.eventId).length > 0 };
      },
      chatTexts: () => botShown(room).map((m) => m.body),
      checkPrompt: (prompt) => {
        expect(ownKeys(prompt.eventId)).toEqual(["✅", "❌", "1️⃣"]);
        expect(prompt.body).toMatch(/\/approve ap_[0-9a-f]{12}/);
      },
      checkPress: async () => {},
    });
  }, 60_000);

  test("a reaction by someone other than the asker is refused like a press of another's button", async () => {
    const room = mx.createRoom(alice, { members: [bob] });
    await mx.waitFor(() => mx.membership(room, mx.bot.userId) === "join", TIMEOUT, "the bot's join");
    appendRule(llm, "remember flour", "flour");
    mx.sendText(room, alice, `${mx.bot.userId} please remember flour`, {
      "m.mentions": { user_ids: [mx.bot.userId] },
    });
    const prompt = await mx.waitFor(
      () => botShown(room).find((m) => m.body.includes("Approval needed") && m.body.includes("flour")),
      TIMEOUT,
      "the prompt",
    );
    mx.react(room, bob, prompt.eventId, "✅");
    const notice = await mx.waitFor(
      () => botShown(room).find((m) => m.msgtype === "m.notice"),
      TIMEOUT,
      "the notice to bob",
    );
    expect(notice.body).toContain("or an approver can decide this");
    expect(approvalStates(dbPath(), "flour")).toEqual(["pending"]);
    expect(notes.count("flour")).toBe(0);
  }, 60_000);
});
