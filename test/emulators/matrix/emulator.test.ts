/** The Matrix homeserver emulator against the client-server API as the spec describes it, over HTTP. */
import { afterEach, describe, expect, test } from "bun:test";
import { type MatrixEmulator, startMatrixEmulator } from "./index.ts";

let emulator: MatrixEmulator;
afterEach(() => emulator.close());

async function call(method: string, path: string, token: string | null, body?: unknown) {
  const response = await fetch(`${emulator.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the tests read the homeserver's JSON answers freely
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const send = (token: string, room: string, txn: string, body: string) =>
  call("PUT", `/_matrix/client/v3/rooms/${encodeURIComponent(room)}/send/m.room.message/${txn}`, token, {
    msgtype: "m.text",
    body,
  });

describe("the Matrix homeserver emulator", () => {
  test("password login issues a token and device; whoami answers for it; a bad token is M_UNKNOWN_TOKEN", async () => {
    emulator = startMatrixEmulator();
    const login = await call("POST", "/_matrix/client/v3/login", null, {
      type: "m.login.password",
      identifier: { type: "m.id.user", user: emulator.bot.userId },
      password: emulator.bot.password,
    });
    expect(login.status).toBe(200);
    expect(login.body.device_id).toMatch(/^DEV/);
    const me = await call("GET", "/_matrix/client/v3/account/whoami", login.body.access_token);
    expect(me.body).toEqual({ user_id: emulator.bot.userId, device_id: login.body.device_id });
    expect((await call("GET", "/_matrix/client/v3/account/whoami", "nope")).body.errcode).toBe(
      "M_UNKNOWN_TOKEN",
    );
    const wrong = await call("POST", "/_matrix/client/v3/login", null, {
      type: "m.login.password",
      identifier: { type: "m.id.user", user: emulator.bot.userId },
      password: "wrong",
    });
    expect(wrong).toMatchObject({ status: 403, body: { errcode: "M_FORBIDDEN" } });
  });

  test("a send is idempotent per access token and transaction id", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice");
    const room = emulator.createRoom(alice.userId, { botJoined: true });
    const first = await send(emulator.bot.token, room, "t1", "once");
    const again = await send(emulator.bot.token, room, "t1", "once");
    expect(again.body.event_id).toBe(first.body.event_id);
    // Another device (token) of the same user with the same txnId is another transaction.
    const other = await call("POST", "/_matrix/client/v3/login", null, {
      type: "m.login.password",
      identifier: { type: "m.id.user", user: emulator.bot.userId },
      password: emulator.bot.password,
    });
    const otherDevice = await send(other.body.access_token, room, "t1", "once");
    expect(otherDevice.body.event_id).not.toBe(first.body.event_id);
    expect(emulator.shown(room, emulator.bot.userId).map((m) => m.body)).toEqual(["once", "once"]);
    expect(emulator.callsOf("send").map((c) => c.deduped ?? false)).toEqual([false, true, false]);
  });

  test("/sync: an invite, then the joined room's events after `since`; a long poll wakes on news", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice");
    const room = emulator.createRoom(alice.userId);
    const initial = await call("GET", "/_matrix/client/v3/sync?timeout=0", emulator.bot.token);
    expect(Object.keys(initial.body.rooms.invite)).toEqual([room]);
    expect(
      (
        await call(
          "POST",
          `/_matrix/client/v3/rooms/${encodeURIComponent(room)}/join`,
          emulator.bot.token,
          {},
        )
      ).status,
    ).toBe(200);
    const joined = await call(
      "GET",
      `/_matrix/client/v3/sync?since=${initial.body.next_batch}&timeout=0`,
      emulator.bot.token,
    );
    const own = joined.body.rooms.join[room].timeline.events as Array<{ type: string; state_key?: string }>;
    expect(own.map((e) => [e.type, e.state_key])).toEqual([["m.room.member", emulator.bot.userId]]);
    const polling = call(
      "GET",
      `/_matrix/client/v3/sync?since=${joined.body.next_batch}&timeout=5000`,
      emulator.bot.token,
    );
    await Bun.sleep(50);
    emulator.sendText(room, alice.userId, "news");
    const answer = await polling;
    const events = answer.body.rooms.join[room].timeline.events as Array<{
      type: string;
      content: { body?: string };
    }>;
    expect(events.map((e) => [e.type, e.content.body])).toEqual([["m.room.message", "news"]]);
    const empty = await call(
      "GET",
      `/_matrix/client/v3/sync?since=${answer.body.next_batch}&timeout=0`,
      emulator.bot.token,
    );
    expect(empty.body.rooms.join).toEqual({});
    expect(empty.body.next_batch).toBe(answer.body.next_batch);
  });

  test("/sync honours the filter's timeline limit and says the timeline is limited", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice");
    const room = emulator.createRoom(alice.userId, { botJoined: true });
    const since = (await call("GET", "/_matrix/client/v3/sync?timeout=0", emulator.bot.token)).body
      .next_batch;
    for (const n of [1, 2, 3]) emulator.sendText(room, alice.userId, `m${n}`);
    const filter = encodeURIComponent(JSON.stringify({ room: { timeline: { limit: 2 } } }));
    const answer = await call(
      "GET",
      `/_matrix/client/v3/sync?since=${since}&timeout=0&filter=${filter}`,
      emulator.bot.token,
    );
    const timeline = answer.body.rooms.join[room].timeline;
    expect(timeline.limited).toBe(true);
    expect(timeline.events.map((e: { content: { body: string } }) => e.content.body)).toEqual(["m2", "m3"]);
  });

  test("faults: M_LIMIT_EXCEEDED with retry_after_ms, and a stalled /sync that never answers", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice");
    const room = emulator.createRoom(alice.userId, { botJoined: true });
    emulator.failNext("send", { kind: "rate_limited", retryAfterMs: 1234 });
    expect(await send(emulator.bot.token, room, "t", "x")).toEqual({
      status: 429,
      body: { errcode: "M_LIMIT_EXCEEDED", error: "Too Many Requests", retry_after_ms: 1234 },
    });
    emulator.failNext("sync", { kind: "stall" });
    const stalled = await fetch(`${emulator.url}/_matrix/client/v3/sync?timeout=0`, {
      headers: { authorization: `Bearer ${emulator.bot.token}` },
      signal: AbortSignal.timeout(300),
    }).then(
      () => "answered",
      (error: Error) => error.name,
    );
    expect(stalled).toBe("TimeoutError");
  });

  test("a reset after the effect: the send is stored, the client's read fails, and a retry with the txnId is deduped", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice");
    const room = emulator.createRoom(alice.userId, { botJoined: true });
    emulator.failNext("send", { kind: "reset_after_effect" });
    const cut = await send(emulator.bot.token, room, "t-reset", "kept").then(
      () => "answered",
      () => "broken",
    );
    expect(cut).toBe("broken");
    expect(emulator.shown(room, emulator.bot.userId).map((m) => m.body)).toEqual(["kept"]);
    const retry = await send(emulator.bot.token, room, "t-reset", "kept");
    expect(retry.body.event_id).toBe(emulator.shown(room, emulator.bot.userId)[0]!.eventId);
    expect(emulator.callsOf("send").map((c) => [c.fault, c.deduped])).toEqual([
      ["reset_after_effect", undefined],
      [undefined, true],
    ]);
  });
  test("redaction empties the event; media is downloaded only through the authenticated endpoint", async () => {
    emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice");
    const room = emulator.createRoom(alice.userId, { botJoined: true });
    const sent = await send(emulator.bot.token, room, "t", "secret");
    const path = `/_matrix/client/v3/rooms/${encodeURIComponent(room)}/redact/${encodeURIComponent(sent.body.event_id)}/r1`;
    expect((await call("PUT", path, emulator.bot.token, {})).status).toBe(200);
    expect(emulator.event(room, sent.body.event_id)?.content).toEqual({});
    expect(emulator.event(room, sent.body.event_id)?.unsigned?.redacted_because).toBeDefined();

    const upload = await fetch(`${emulator.url}/_matrix/media/v3/upload?filename=a.txt`, {
      method: "POST",
      headers: { authorization: `Bearer ${emulator.bot.token}`, "content-type": "text/plain" },
      body: "hello",
    }).then((r) => r.json() as Promise<{ content_uri: string }>);
    const [, server, id] = /^mxc:\/\/([^/]+)\/(.+)$/.exec(upload.content_uri)!;
    const download = `${emulator.url}/_matrix/client/v1/media/download/${server}/${id}`;
    expect((await fetch(download)).status).toBe(401);
    const authed = await fetch(download, { headers: { authorization: `Bearer ${emulator.bot.token}` } });
    expect(await authed.text()).toBe("hello");
    expect(authed.headers.get("content-type")).toBe("text/plain");
  });
});
