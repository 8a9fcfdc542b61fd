/** The web channel over the real HTTP server: POST → ingress, and the session's event stream. */
import { afterEach, describe, expect, test } from "bun:test";
import type { InboundMessage, IngressOutcome, OutgoingMessage } from "../../channels/types.ts";
import {
  createWebChannel,
  type WebChannel,
  type WebStreamEvent,
  type WebTranscriptEntry,
  webUserIds,
} from "../../channels/web/index.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { capturingLogger, testServices, unusedOperator } from "./support/services.ts";
import { SseReader } from "./support/sse-reader.ts";

const NOW = Date.parse("2026-11-30T09:00:00Z");
const clock = new FakeClock(NOW, { instantSleeps: true });
const SESSION = "sess_0123456789abcdefXY";
const OTHER_SESSION = "sess_zyxwvutsrqponmlkJI";
/** The channel derives each session's user id under this key; only the user id leaves the route. */
const USER_ID_KEY = "web-user-id-key-0123456789abcdef";
const userIdOf = webUserIds(USER_ID_KEY);
/** SESSION's user id: its conversation, reply target and principal. */
const USER = userIdOf(SESSION);

let server: HttpServer | undefined;
let web: WebChannel;

afterEach(async () => {
  await web?.stop();
  await server?.stop();
  server = undefined;
});

type IngressScript = (message: InboundMessage) => Promise<IngressOutcome>;

async function start(ingress: IngressScript | null, options: Parameters<typeof createWebChannel>[0] = {}) {
  const received: InboundMessage[] = [];
  web = createWebChannel({ clock, userIdKey: USER_ID_KEY, ...options });
  if (ingress)
    await web.start((message) => {
      received.push(message);
      return ingress(message);
    });
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services: testServices({ operator: unusedOperator, web, routes: web.routes() }).services,
    logger: capturingLogger().logger,
  });
  return { url: server.url, received };
}

const admitted =
  (runId: string): IngressScript =>
  async () => ({ kind: "admitted", runId, conversationId: "conv_1" });

function postMessage(url: string, body: Record<string, unknown>) {
  return fetch(`${url}/web/api/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function openStream(url: string, sessionId = SESSION): Promise<SseReader> {
  const response = await fetch(`${url}/web/api/stream`, {
    headers: { accept: "text/event-stream", "x-switchboard-session": sessionId },
  });
  expect(response.status).toBe(200);
  return new SseReader(response);
}

const outgoing = (text: string, idempotencyKey: string): OutgoingMessage => ({
  text,
  format: "rich",
  idempotencyKey,
});

describe("POST /web/api/messages", () => {
  test("builds the InboundMessage ingress expects and answers 202 with the outcome", async () => {
    const { url, received } = await start(admitted("run_1"));
    const response = await postMessage(url, {
      sessionId: SESSION,
      clientMessageId: "cm_00000001",
      text: "Hello **there**",
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ kind: "admitted", runId: "run_1", conversationId: "conv_1" });
    expect(received).toEqual([
      {
        channel: "web",
        account: "local",
        updateKey: `${USER}:cm_00000001`,
        principal: { id: USER, isBot: false },
        conversationKey: `web:local:dm:${USER}`,
        replyTarget: USER,
        surface: "dm",
        text: "Hello **there**",
        messageId: "cm_00000001",
        addressedToBot: true,
        attachments: [],
        receivedAtMs: NOW,
      },
    ]);
  });

  test("a retried POST carries the same update key; another session's does not", async () => {
    const seen = new Map<string, string>();
    const { url, received } = await start(async (message) => {
      const earlier = seen.get(message.updateKey);
      if (earlier) return { kind: "duplicate", runId: earlier, conversationId: "conv_1" };
      const runId = `run_${seen.size + 1}`;
      seen.set(message.updateKey, runId);
      return { kind: "admitted", runId, conversationId: "conv_1" };
    });
    const body = { sessionId: SESSION, clientMessageId: "cm_retry001", text: "hi" };
    expect(await (await postMessage(url, body)).json()).toMatchObject({ kind: "admitted", runId: "run_1" });
    expect(await (await postMessage(url, body)).json()).toMatchObject({ kind: "duplicate", runId: "run_1" });
    const other = await postMessage(url, { ...body, sessionId: OTHER_SESSION });
    expect(await other.json()).toMatchObject({ kind: "admitted", runId: "run_2" });
    expect(received.map((m) => m.updateKey)).toEqual([
      `${USER}:cm_retry001`,
      `${USER}:cm_retry001`,
      `${userIdOf(OTHER_SESSION)}:cm_retry001`,
    ]);
    // The repeat shows the user's message once.
    const stream = await openStream(url);
    const snapshot = await stream.nextJson<WebStreamEvent>();
    expect(snapshot).toEqual({
      type: "snapshot",
      messages: [{ messageId: "cm_retry001", role: "user", text: "hi", atMs: NOW }],
    });
    await stream.cancel();
  });

  test("empty, blank, oversized and malformed input is 400 with a message; ingress is not called", async () => {
    const { url, received } = await start(admitted("run_1"), { maxMessageChars: 50 });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ sessionId: SESSION, clientMessageId: "cm_00000001", text: "" }, "text is empty"],
      [{ sessionId: SESSION, clientMessageId: "cm_00000001", text: " \n\t " }, "text is empty"],
      [
        { sessionId: SESSION, clientMessageId: "cm_00000001", text: "\u200b\u200c\ufeff" },
        "invisible characters",
      ],
      [{ sessionId: SESSION, clientMessageId: "cm_00000001", text: "x".repeat(51) }, "longer than 50"],
      [{ clientMessageId: "cm_00000001", text: "hi" }, "sessionId"],
      [{ sessionId: "short", clientMessageId: "cm_00000001", text: "hi" }, "sessionId"],
      [{ sessionId: SESSION, clientMessageId: "a b", text: "hi" }, "clientMessageId"],
    ];
    for (const [body, message] of cases) {
      const response = await postMessage(url, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toContain(message);
    }
    expect(
      (await postMessage(url, { sessionId: SESSION, clientMessageId: "cm_00000001", text: "x".repeat(50) }))
        .status,
    ).toBe(202);
    const notJson = await fetch(`${url}/web/api/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "text=hi",
    });
    expect(notJson.status).toBe(400);
    expect(received.length).toBe(1);
  });

  test("8000 characters are accepted by default and 8001 refused", async () => {
    const { url } = await start(admitted("run_1"));
    const at = await postMessage(url, {
      sessionId: SESSION,
      clientMessageId: "cm_00000001",
      text: "y".repeat(8000),
    });
    expect(at.status).toBe(202);
    const over = await postMessage(url, {
      sessionId: SESSION,
      clientMessageId: "cm_00000002",
      text: "y".repeat(8001),
    });
    expect(over.status).toBe(400);
  });

  test("a rejected ingress is 500 (the page retries) and the message is not shown as sent", async () => {
    let fail = true;
    const { url } = await start(async () => {
      if (fail) throw new Error("database is locked");
      return { kind: "admitted", runId: "run_1", conversationId: "conv_1" };
    });
    const body = { sessionId: SESSION, clientMessageId: "cm_flaky001", text: "are you there?" };
    const refused = await postMessage(url, body);
    expect(refused.status).toBe(500);
    const error = ((await refused.json()) as { error: { message: string } }).error.message;
    expect(error).toContain("send it again");
    expect(error).not.toContain("locked");
    const stream = await openStream(url);
    expect(await stream.nextJson<WebStreamEvent>()).toEqual({ type: "snapshot", messages: [] });
    fail = false;
    expect((await postMessage(url, body)).status).toBe(202);
    expect(await stream.nextJson<WebStreamEvent>()).toMatchObject({
      type: "message",
      messageId: "cm_flaky001",
      role: "user",
    });
    await stream.cancel();
  });

  test("before start() and after stop() the channel answers 503", async () => {
    const { url } = await start(null);
    expect(web.isConnected()).toBe(false);
    const body = { sessionId: SESSION, clientMessageId: "cm_00000001", text: "hi" };
    expect((await postMessage(url, body)).status).toBe(503);
    await web.start(admitted("run_1"));
    expect(web.isConnected()).toBe(true);
    expect((await postMessage(url, body)).status).toBe(202);
    await web.stop();
    expect((await postMessage(url, body)).status).toBe(503);
  });

  test("a command's reply is in the answer but reaches the transcript only through send()", async () => {
    const { url } = await start(async (message) => {
      // What ingress does for a command: the reply is enqueued, and the outbox sends it.
      queueMicrotask(() => void web.send(message.replyTarget, outgoing("Status: 0 runs waiting.", "cmd:1")));
      return { kind: "command", reply: "Status: 0 runs waiting." };
    });
    const stream = await openStream(url);
    await stream.nextJson();
    const response = await postMessage(url, {
      sessionId: SESSION,
      clientMessageId: "cm_status01",
      text: "/status",
    });
    expect(await response.json()).toEqual({ kind: "command", reply: "Status: 0 runs waiting." });
    // Everything the stream shows within 300 ms of the last event.
    const events: WebStreamEvent[] = [];
    for (;;) {
      const event = await stream.nextJson<WebStreamEvent>(300).catch(() => null);
      if (event === null) break;
      events.push(event);
    }
    const assistant = events.filter((e) => e.type === "message" && e.role === "assistant");
    expect(assistant).toHaveLength(1);
    expect(assistant[0]).toMatchObject({ text: "Status: 0 runs waiting." });
    expect(events.filter((e) => e.type === "message" && e.role === "user")).toHaveLength(1);
    await stream.cancel();
  });
});

describe("send / edit / delete / typing reach the session's stream", () => {
  test("in order, to that session only, and a reconnect replays the current transcript", async () => {
    const { url } = await start(admitted("run_1"));
    const stream = await openStream(url);
    const other = await openStream(url, OTHER_SESSION);
    expect(await stream.nextJson<WebStreamEvent>()).toEqual({ type: "snapshot", messages: [] });
    await other.nextJson();

    await web.typing(USER);
    const first = await web.send(USER, outgoing("Thinking", "run_1:stream"));
    await web.edit(USER, first.messageIds[0]!, outgoing("Thinking about **it**", "run_1:stream"));
    const second = await web.send(USER, outgoing("Second", "run_1:0"));
    await web.delete(USER, second.messageIds[0]!);

    expect(first.messageIds).toHaveLength(1);
    expect(await stream.nextJson<WebStreamEvent>()).toEqual({ type: "typing" });
    expect(await stream.nextJson<WebStreamEvent>()).toEqual({
      type: "message",
      messageId: first.messageIds[0]!,
      role: "assistant",
      text: "Thinking",
      atMs: NOW,
    });
    expect(await stream.nextJson<WebStreamEvent>()).toEqual({
      type: "edit",
      messageId: first.messageIds[0]!,
      text: "Thinking about **it**",
    });
    expect(await stream.nextJson<WebStreamEvent>()).toMatchObject({ type: "message", text: "Second" });
    expect(await stream.nextJson<WebStreamEvent>()).toEqual({
      type: "delete",
      messageId: second.messageIds[0]!,
    });
    await expect(other.next(200)).rejects.toThrow("No SSE frame");
    await stream.cancel();
    await other.cancel();

    const reloaded = await openStream(url);
    expect(await reloaded.nextJson<WebStreamEvent>()).toEqual({
      type: "snapshot",
      messages: [
        { messageId: first.messageIds[0]!, role: "assistant", text: "Thinking about **it**", atMs: NOW },
      ],
    });
    await reloaded.cancel();
  });

  test("a resend with the same idempotency key returns the same id and shows nothing new", async () => {
    const { url } = await start(admitted("run_1"));
    const stream = await openStream(url);
    await stream.nextJson();
    const first = await web.send(USER, outgoing("Answer", "run_9:0"));
    const again = await web.send(USER, outgoing("Answer", "run_9:0"));
    expect(again).toEqual(first);
    await web.send(USER, outgoing("Next answer", "run_10:0"));
    expect(await stream.nextJson<WebStreamEvent>()).toMatchObject({ type: "message", text: "Answer" });
    expect(await stream.nextJson<WebStreamEvent>()).toMatchObject({ type: "message", text: "Next answer" });
    await stream.cancel();
  });

  test("keeps only the newest messages per session; an edit of a forgotten message shows it again", async () => {
    const { url } = await start(admitted("run_1"), { maxMessagesPerSession: 3 });
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push((await web.send(USER, outgoing(`m${i}`, `k${i}`))).messageIds[0]!);
    await web.edit(USER, ids[0]!, outgoing("m1 final", "k1"));
    const stream = await openStream(url);
    const snapshot = await stream.nextJson<Extract<WebStreamEvent, { type: "snapshot" }>>();
    expect(snapshot.messages.map((m) => m.text)).toEqual(["m4", "m5", "m1 final"]);
    await stream.cancel();
  });

  test("with a history loader, a session evicted by a flood of other sessions is loaded again, in order", async () => {
    const durable = new Map<string, WebTranscriptEntry[]>([
      [
        USER,
        [
          { messageId: "cm_00000001", role: "user", text: "hello", atMs: NOW - 2000 },
          { messageId: "web_old_reply", role: "assistant", text: "hi there", atMs: NOW - 1000 },
        ],
      ],
    ]);
    const loads: string[] = [];
    const { url } = await start(admitted("run_1"), {
      maxSessions: 3,
      history: async (userId) => {
        loads.push(userId);
        return durable.get(userId) ?? [];
      },
    });
    const first = await openStream(url);
    const snapshot = await first.nextJson<Extract<WebStreamEvent, { type: "snapshot" }>>();
    expect(snapshot.messages.map((m) => m.text)).toEqual(["hello", "hi there"]);
    await first.cancel();
    // Streams with made-up session ids push the idle session out of memory...
    for (let i = 0; i < 5; i++) {
      const flood = await openStream(url, `flood_session_${i}_abcdefgh`);
      await flood.nextJson();
      await flood.cancel();
    }
    // ...and an answer to it, or the page coming back, loads it again: nothing it showed is lost.
    await web.send(USER, outgoing("a new answer", "run_2:0"));
    const back = await openStream(url);
    const again = await back.nextJson<Extract<WebStreamEvent, { type: "snapshot" }>>();
    expect(again.messages.map((m) => m.text)).toEqual(["hello", "hi there", "a new answer"]);
    expect(loads.filter((id) => id === USER).length).toBe(2);
    await back.cancel();
  });

  test("a target that is not a user id is refused without retry", async () => {
    await start(admitted("run_1"));
    await expect(web.send("../etc", outgoing("x", "k"))).rejects.toMatchObject({
      code: "platform_rejected",
      retryable: false,
    });
  });

  test("only the user id leaves the route: it is the reply target, and as a session id it opens nothing", async () => {
    const { url, received } = await start(admitted("run_1"));
    await postMessage(url, { sessionId: SESSION, clientMessageId: "cm_00000001", text: "my secret plan" });
    expect(JSON.stringify(received)).not.toContain(SESSION);
    // A session id is no reply target (the outbox holds user ids only).
    await expect(web.send(SESSION, outgoing("x", "k"))).rejects.toMatchObject({ code: "platform_rejected" });
    await web.send(USER, outgoing("the plan is safe", "run_1:0"));
    // Whoever learns the user id (a metrics label, the console) and sends it as a session id
    // reads another, empty transcript.
    const stranger = await openStream(url, USER);
    expect(await stranger.nextJson<WebStreamEvent>()).toEqual({ type: "snapshot", messages: [] });
    await stranger.cancel();
    const own = await openStream(url);
    const snapshot = await own.nextJson<Extract<WebStreamEvent, { type: "snapshot" }>>();
    expect(snapshot.messages.map((m) => m.text)).toEqual(["my secret plan", "the plan is safe"]);
    await own.cancel();
  });

  test("stop() waits for ingress in flight and ends open streams", async () => {
    let release = () => {};
    const { url } = await start(
      () =>
        new Promise<IngressOutcome>((resolve) => {
          release = () => resolve({ kind: "admitted", runId: "run_1", conversationId: "conv_1" });
        }),
    );
    const stream = await openStream(url);
    await stream.nextJson();
    const posting = postMessage(url, { sessionId: SESSION, clientMessageId: "cm_inflight", text: "slow" });
    await Bun.sleep(50);
    let stopped = false;
    const stopping = web.stop().then(() => {
      stopped = true;
    });
    await Bun.sleep(50);
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect((await posting).status).toBe(202);
    // Only the message event queued before the stop may still arrive; then the stream ends.
    let frame = await stream.next(1000);
    while (frame !== null) frame = await stream.next(1000);
  });
});

describe("buttons in the web chat", () => {
  const buttons = [[{ label: "Approve", data: "ap:ap_0123456789ab:a:tag0123456789ab" }]];

  test("a message's buttons reach the stream and the snapshot; an edit without buttons removes them", async () => {
    const { url } = await start(admitted("run_1"));
    const stream = await openStream(url);
    await stream.nextJson();
    const sent = await web.send(USER, { ...outgoing("Approval needed", "approval:1:prompt"), buttons });
    const id = sent.messageIds[0]!;
    expect(await stream.nextJson<WebStreamEvent>()).toMatchObject({
      type: "message",
      messageId: id,
      buttons,
    });
    const again = await openStream(url);
    const snapshot = await again.nextJson<{ messages: WebTranscriptEntry[] }>();
    expect(snapshot.messages.find((m) => m.messageId === id)?.buttons).toEqual(buttons);
    await again.cancel();

    await web.edit(USER, id, outgoing("Approved by you", "approval:1:outcome"));
    const edit = await stream.nextJson<WebStreamEvent>();
    expect(edit).toEqual({ type: "edit", messageId: id, text: "Approved by you" });
    await stream.cancel();
  });

  test("a press is POSTed as `action`: ingress gets it, the notice comes back, nothing joins the transcript", async () => {
    const { url, received } = await start(async () => ({ kind: "action", notice: "Approved." }));
    const response = await postMessage(url, {
      sessionId: SESSION,
      clientMessageId: "press_0001",
      action: buttons[0]![0]!.data,
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ kind: "action", notice: "Approved." });
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({
      text: "",
      updateKey: `${USER}:press_0001`,
      action: { data: buttons[0]![0]!.data, interactionId: "press_0001" },
    });
    const stream = await openStream(url);
    expect(await stream.nextJson<WebStreamEvent>()).toEqual({ type: "snapshot", messages: [] });
    await stream.cancel();
  });

  test("text and action together, or neither, is 400 and reaches nothing", async () => {
    const { url, received } = await start(admitted("run_1"));
    for (const body of [
      { sessionId: SESSION, clientMessageId: "press_0002", text: "hi", action: "ap:x" },
      { sessionId: SESSION, clientMessageId: "press_0003" },
      { sessionId: SESSION, clientMessageId: "press_0004", action: "" },
    ]) {
      const response = await postMessage(url, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("input_invalid");
    }
    expect(received).toHaveLength(0);
  });
});
