import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { FakeClock } from "../../support/fake-clock.ts";
import { type DiscordEmulator, startDiscordEmulator } from "./index.ts";

// Every test here talks to a local emulator over HTTP/WebSocket; none should take long.
setDefaultTimeout(5000);

let emulator: DiscordEmulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

function api(path: string, init: { method?: string; body?: unknown; token?: string | null } = {}) {
  if (!emulator) throw new Error("start the emulator first");
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (init.token !== null) headers.authorization = `Bot ${init.token ?? emulator.token}`;
  return fetch(`${emulator.apiUrl}/v10${path}`, {
    method: init.method ?? "GET",
    headers,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
}

/** A raw gateway client that records frames, to check the protocol without discord.js. */
async function openGateway(url: string) {
  const frames: Array<{ op: number; s?: number; t?: string; d?: unknown }> = [];
  const socket = new WebSocket(url);
  let closeCode: number | undefined;
  socket.onmessage = (event) => frames.push(JSON.parse(String(event.data)));
  socket.onclose = (event) => {
    closeCode = event.code;
  };
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  const until = async <T>(probe: () => T | undefined): Promise<T> => {
    for (let i = 0; i < 200; i += 1) {
      const value = probe();
      if (value !== undefined) return value;
      await Bun.sleep(5);
    }
    throw new Error(`gateway frame never came; got ${JSON.stringify(frames)}`);
  };
  return { socket, frames, until, closeCode: () => closeCode };
}

describe("Discord emulator REST", () => {
  test("channel history: newest first; after gives the page right after it; unseen messages are never dispatched", async () => {
    emulator = startDiscordEmulator();
    const alice = emulator.createUser("alice");
    const dm = emulator.dmChannelId(alice.id);
    const first = emulator.sendDm(alice.id, "m1");
    const logBefore = emulator.gatewayLog.length;
    const rest = ["m2", "m3", "m4"].map((text) => emulator!.writeUnseen(dm, alice.id, text));
    expect(emulator.gatewayLog.length).toBe(logBefore);

    const ids = async (query: string) =>
      ((await (await api(`/channels/${dm}/messages?${query}`)).json()) as Array<{ id: string }>).map(
        (m) => m.id,
      );
    expect(await ids(`after=${first.id}&limit=2`)).toEqual([rest[1]!.id, rest[0]!.id]);
    expect(await ids(`after=${first.id}`)).toEqual([rest[2]!.id, rest[1]!.id, rest[0]!.id]);
    expect(await ids("limit=2")).toEqual([rest[2]!.id, rest[1]!.id]);
    expect(await ids(`before=${rest[1]!.id}`)).toEqual([rest[0]!.id, first.id]);
    expect((await api(`/channels/${dm}/messages?limit=101`)).status).toBe(400);
    expect((await api("/channels/1/messages")).status).toBe(404);
  });

  test("checks the Bot token and serves /users/@me and /gateway/bot", async () => {
    emulator = startDiscordEmulator();
    expect((await api("/users/@me", { token: null })).status).toBe(401);
    expect((await api("/users/@me", { token: "wrong" })).status).toBe(401);
    expect(await (await api("/users/@me")).json()).toMatchObject({ id: emulator.bot.id, bot: true });
    expect(await (await api("/gateway/bot")).json()).toMatchObject({ url: emulator.gatewayUrl, shards: 1 });
  });

  test("GET /channels/:id knows DMs, text channels and threads", async () => {
    emulator = startDiscordEmulator();
    const user = emulator.createUser("nina");
    const thread = emulator.createThread({ name: "t", ownerId: user.id });
    const dm = await (await api(`/channels/${emulator.dmChannelId(user.id)}`)).json();
    expect(dm).toMatchObject({ type: 1, recipients: [{ id: user.id }] });
    expect(await (await api(`/channels/${emulator.generalChannelId}`)).json()).toMatchObject({ type: 0 });
    expect(await (await api(`/channels/${thread}`)).json()).toMatchObject({
      type: 11,
      parent_id: emulator.generalChannelId,
    });
    expect(await (await api("/channels/1")).json()).toEqual({ message: "Unknown Channel", code: 10003 });
  });

  test("typing and delete answer 204 without a content type", async () => {
    emulator = startDiscordEmulator();
    const typing = await api(`/channels/${emulator.generalChannelId}/typing`, { method: "POST" });
    expect(typing.status).toBe(204);
    expect(typing.headers.get("content-type")).toBeNull();
    const created = (await (
      await api(`/channels/${emulator.generalChannelId}/messages`, {
        method: "POST",
        body: { content: "bye" },
      })
    ).json()) as { id: string };
    const deleted = await api(`/channels/${emulator.generalChannelId}/messages/${created.id}`, {
      method: "DELETE",
    });
    expect(deleted.status).toBe(204);
    expect(deleted.headers.get("content-type")).toBeNull();
    expect(emulator.visibleMessages(emulator.generalChannelId)).toHaveLength(0);
  });

  test("content over 2000 chars is 400/50035 and creates nothing", async () => {
    emulator = startDiscordEmulator();
    const path = `/channels/${emulator.generalChannelId}/messages`;
    const tooLong = await api(path, { method: "POST", body: { content: "y".repeat(2001) } });
    expect(tooLong.status).toBe(400);
    expect(await tooLong.json()).toMatchObject({ code: 50035, errors: { content: {} } });
    expect((await api(path, { method: "POST", body: { content: "y".repeat(2000) } })).status).toBe(200);
    expect(emulator.visibleMessages(emulator.generalChannelId)).toHaveLength(1);
  });

  test("enforce_nonce returns the same message within the window, a new one after it", async () => {
    const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
    emulator = startDiscordEmulator({ clock, nonceWindowMs: 60_000 });
    const path = `/channels/${emulator.generalChannelId}/messages`;
    const body = { content: "once", nonce: "n-1", enforce_nonce: true };
    const first = (await (await api(path, { method: "POST", body })).json()) as { id: string };
    await clock.advance(59_000);
    const second = (await (await api(path, { method: "POST", body })).json()) as { id: string };
    expect(second.id).toBe(first.id);
    await clock.advance(2_000);
    const third = (await (await api(path, { method: "POST", body })).json()) as { id: string };
    expect(third.id).not.toBe(first.id);
    // Without enforce_nonce the nonce is only echoed, as on Discord.
    const plain = (await (
      await api(path, { method: "POST", body: { content: "once", nonce: "n-1" } })
    ).json()) as {
      id: string;
    };
    expect(plain.id).not.toBe(third.id);
    expect(emulator.visibleMessages(emulator.generalChannelId)).toHaveLength(3);
    expect((await api(path, { method: "POST", body: { content: "x", nonce: "z".repeat(26) } })).status).toBe(
      400,
    );
  });

  test("per-channel rate limit: 5 per window, 429 with headers and retry_after, counted", async () => {
    const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
    emulator = startDiscordEmulator({ clock, channelRateLimit: { limit: 5, windowMs: 5000 } });
    const path = `/channels/${emulator.generalChannelId}/messages`;
    for (let i = 0; i < 5; i += 1) {
      const ok = await api(path, { method: "POST", body: { content: `m${i}` } });
      expect(ok.headers.get("x-ratelimit-remaining")).toBe(String(4 - i));
      await clock.advance(100);
    }
    const limited = await api(path, { method: "POST", body: { content: "m5" } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("5");
    expect(limited.headers.get("x-ratelimit-global")).toBeNull();
    expect(await limited.json()).toEqual({
      message: "You are being rate limited.",
      retry_after: 4.5,
      global: false,
    });
    expect(emulator.rateLimitedCount).toBe(1);
    // Another channel has its own bucket; the window slides on the fake clock.
    const other = emulator.createTextChannel("other");
    expect(
      (await api(`/channels/${other}/messages`, { method: "POST", body: { content: "x" } })).status,
    ).toBe(200);
    await clock.advance(4500);
    expect((await api(path, { method: "POST", body: { content: "m6" } })).status).toBe(200);
  });

  test("faults fire for the next N calls of their route only", async () => {
    emulator = startDiscordEmulator();
    emulator.failNext("GET /users/@me", { kind: "server_error", status: 503 }, 2);
    expect((await api("/users/@me")).status).toBe(503);
    expect((await api(`/channels/${emulator.generalChannelId}`)).status).toBe(200);
    expect((await api("/users/@me")).status).toBe(503);
    expect((await api("/users/@me")).status).toBe(200);
    // POST: Bun's fetch silently retries a GET whose reused keep-alive connection was reset.
    emulator.failNext("POST /channels/:id/typing", { kind: "reset" });
    const reset = await api(`/channels/${emulator.generalChannelId}/typing`, { method: "POST" }).then(
      (response) => response.status,
      (error: { code?: string }) => error.code,
    );
    expect(reset).toBe("ECONNRESET");
    expect(emulator.restCalls.at(-1)).toMatchObject({ status: "reset", fault: "reset" });
  });

  test("a hanging request is released by close()", async () => {
    emulator = startDiscordEmulator();
    emulator.failNext("POST /channels/:id/typing", { kind: "hang" });
    const pending = api(`/channels/${emulator.generalChannelId}/typing`, { method: "POST" }).then(
      () => "answered",
      () => "dropped",
    );
    await emulator.waitFor(() => emulator?.restCalls.find((c) => c.status === "hang"), 1000, "the hang");
    await emulator.close();
    emulator = undefined;
    expect(await pending).toBe("dropped");
  });

  test("waitFor rejects with a clear message on timeout", async () => {
    emulator = startDiscordEmulator();
    await expect(emulator.waitFor(() => false, 30, "nothing")).rejects.toThrow(
      "timed out after 30 ms waiting for nothing",
    );
  });
});

describe("Discord emulator gateway", () => {
  test("HELLO, IDENTIFY → READY (guild unavailable) + GUILD_CREATE, heartbeat ACK, sequenced dispatches", async () => {
    emulator = startDiscordEmulator({ heartbeatIntervalMs: 1234 });
    const gateway = await openGateway(emulator.gatewayUrl);
    const hello = await gateway.until(() => gateway.frames.find((f) => f.op === 10));
    expect(hello.d).toEqual({ heartbeat_interval: 1234 });
    gateway.socket.send(JSON.stringify({ op: 2, d: { token: emulator.token, intents: 0, properties: {} } }));
    const ready = await gateway.until(() => gateway.frames.find((f) => f.t === "READY"));
    expect(ready.s).toBe(1);
    expect(ready.d).toMatchObject({
      user: { id: emulator.bot.id },
      guilds: [{ id: emulator.guildId, unavailable: true }],
    });
    const guild = await gateway.until(() => gateway.frames.find((f) => f.t === "GUILD_CREATE"));
    expect(guild.s).toBe(2);
    gateway.socket.send(JSON.stringify({ op: 1, d: 2 }));
    await gateway.until(() => gateway.frames.find((f) => f.op === 11));

    const user = emulator.createUser("olga");
    const message = emulator.sendDm(user.id, "hi");
    const created = await gateway.until(() => gateway.frames.find((f) => f.t === "MESSAGE_CREATE"));
    expect(created.s).toBe(3);
    expect(created.d).toMatchObject({ id: message.id, channel_type: 1, author: { id: user.id } });
    gateway.socket.close();
  });

  test("a wrong token closes with 4004; an unknown session's RESUME gets op 9", async () => {
    emulator = startDiscordEmulator();
    const bad = await openGateway(emulator.gatewayUrl);
    bad.socket.send(JSON.stringify({ op: 2, d: { token: "nope" } }));
    expect(await bad.until(() => bad.closeCode())).toBe(4004);

    const stale = await openGateway(emulator.gatewayUrl);
    stale.socket.send(JSON.stringify({ op: 6, d: { token: emulator.token, session_id: "gone", seq: 3 } }));
    const invalid = await stale.until(() => stale.frames.find((f) => f.op === 9));
    expect(invalid.d).toBe(false);
    stale.socket.close();
  });
});

describe("Discord emulator control endpoints (out-of-process use)", () => {
  test("create a user, dispatch a DM, inject a fault and read the transcript over HTTP", async () => {
    emulator = startDiscordEmulator();
    const control = (path: string, body?: unknown) =>
      fetch(`${emulator?.baseUrl}/__control${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));

    const info = await control("/info");
    expect(info.body).toMatchObject({ apiUrl: emulator.apiUrl, generalChannelId: emulator.generalChannelId });
    const user = await control("/users", { username: "pat" });
    const dm = await control("/dm", { userId: user.body.id, content: "from afar" });
    expect(dm.body).toMatchObject({ content: "from afar", channel_type: 1 });
    expect(emulator.message(String(dm.body.id))?.message.content).toBe("from afar");
    // Nobody is connected, so the dispatch is lost, as on Discord.
    expect(emulator.gatewayLog.at(-1)).toEqual({ event: "undelivered", t: "MESSAGE_CREATE" });

    await control("/faults", { route: "GET /users/@me", fault: { kind: "server_error", status: 502 } });
    expect((await api("/users/@me")).status).toBe(502);
    const calls = await fetch(`${emulator.baseUrl}/__control/rest-calls`).then((r) => r.json());
    expect(calls).toEqual([
      expect.objectContaining({ route: "GET /users/@me", status: 502, fault: "server_error" }),
    ]);

    const invalid = await control("/faults", { route: "GET /nowhere", fault: { kind: "hang" } });
    expect(invalid.status).toBe(400);
    expect(String(invalid.body.error)).toContain("route");
  });
});

describe("Discord emulator: application commands and slash command interactions", () => {
  test("a bulk overwrite is validated like Discord's and recorded per scope", async () => {
    emulator = startDiscordEmulator();
    const app = emulator.bot.id;
    const refused = await api(`/applications/${app}/commands`, {
      method: "PUT",
      body: [{ name: "Bad Name", description: "x", type: 1 }],
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { code: number }).code).toBe(50035);
    const optionalFirst = await api(`/applications/${app}/commands`, {
      method: "PUT",
      body: [
        {
          name: "in",
          description: "later",
          options: [
            { type: 3, name: "prompt", description: "p", required: false },
            { type: 3, name: "delay", description: "d", required: true },
          ],
        },
      ],
    });
    expect(optionalFirst.status).toBe(400);
    expect(emulator.commandRegistrations).toEqual([]);

    const guild = await api(`/applications/${app}/guilds/${emulator.guildId}/commands`, {
      method: "PUT",
      body: [{ name: "new", description: "Start over", type: 1 }],
    });
    expect(guild.status).toBe(200);
    expect(emulator.commandRegistrations.map((r) => r.scope)).toEqual([emulator.guildId]);
    expect(emulator.registeredCommands(emulator.guildId)).toEqual([
      expect.objectContaining({ name: "new", guild_id: emulator.guildId, application_id: app }),
    ]);
    // A guild command runs only in that guild.
    const alice = emulator.createUser("alice");
    expect(() => emulator?.runCommand(emulator.dmChannelId(alice.id), alice.id, "new")).toThrow(
      "no command /new",
    );
  });

  test("a deferred response is edited through the webhook while the token works (15 minutes)", async () => {
    const clock = new FakeClock();
    emulator = startDiscordEmulator({ clock });
    const app = emulator.bot.id;
    await api(`/applications/${app}/commands`, {
      method: "PUT",
      body: [{ name: "status", description: "How things are", type: 1 }],
    });
    const alice = emulator.createUser("alice");
    const run = emulator.runCommand(emulator.generalChannelId, alice.id, "status");
    const deferred = await api(`/interactions/${run.id}/${run.token}/callback?with_response=true`, {
      method: "POST",
      token: null,
      body: { type: 5 },
    });
    expect(deferred.status).toBe(200);
    const created = (await deferred.json()) as { resource: { message: { id: string; flags: number } } };
    expect(created.resource.message).toMatchObject({ id: run.originalMessageId, flags: 128 });

    await clock.advance(14 * 60_000);
    const edit = await api(`/webhooks/${app}/${run.token}/messages/@original`, {
      method: "PATCH",
      token: null,
      body: { content: "All good" },
    });
    expect(edit.status).toBe(200);
    expect(emulator.visibleMessages(emulator.generalChannelId).at(-1)?.content).toBe("All good");

    await clock.advance(2 * 60_000);
    const late = await api(`/webhooks/${app}/${run.token}`, {
      method: "POST",
      token: null,
      body: { content: "too late" },
    });
    expect(late.status).toBe(401);
    expect(((await late.json()) as { code: number }).code).toBe(50027);
    expect(run.originalEdits).toEqual(["All good"]);
    expect(run.followUps).toEqual([]);
  });

  test("slash commands over /__control (out-of-process use)", async () => {
    emulator = startDiscordEmulator();
    await api(`/applications/${emulator.bot.id}/commands`, {
      method: "PUT",
      body: [{ name: "model", description: "Pick a model", type: 1 }],
    });
    const alice = emulator.createUser("alice");
    const control = (path: string, body?: unknown) =>
      fetch(`${emulator?.baseUrl}/__control${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then((r) => r.json() as Promise<Record<string, unknown>>);
    const registrations = (await control("/commands")) as unknown as Array<{ scope: string }>;
    expect(registrations.map((r) => r.scope)).toEqual(["global"]);
    const run = await control("/commands/run", {
      channelId: emulator.generalChannelId,
      userId: alice.id,
      name: "model",
      options: [{ name: "name", value: "sm", focused: true }],
      autocomplete: true,
    });
    expect(run).toMatchObject({ kind: "autocomplete", command: { name: "model" } });
  });
});
