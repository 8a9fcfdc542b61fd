import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { TelegramAdapter } from "../../../channels/telegram/adapter.ts";
import type { TelegramAdapterEvent } from "../../../channels/telegram/events.ts";
import type { HttpRoute } from "../../../channels/types.ts";
import {
  groupChat,
  message,
  messageUpdate,
  privateChat,
  startTelegramEmulator,
  type TelegramEmulator,
  user,
} from "../../emulators/telegram/index.ts";
import { admitted, eventLog, recordingIngress } from "./helpers.ts";

const SECRET = "webhook_secret_0123456789";
const alice = user(1001, "Alice");

let emulator: TelegramEmulator;
let gateway: ReturnType<typeof Bun.serve>;
let routes: HttpRoute[] = [];
let adapter: TelegramAdapter | null = null;

/** A stand-in for the gateway's HTTP server: serves whatever routes the adapter returns. */
function startGateway() {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      const path = new URL(request.url).pathname;
      const route = routes.find((r) => r.path === path && r.method === request.method);
      return route ? route.handle(request) : new Response("no route", { status: 404 });
    },
  });
}

beforeEach(() => {
  emulator = startTelegramEmulator({ webhook: { firstRetryDelayMs: 20, maxAttempts: 4 } });
  gateway = startGateway();
});

afterEach(async () => {
  await adapter?.stop();
  adapter = null;
  routes = [];
  await emulator.close();
  await gateway.stop(true);
});

function webhookAdapter(onEvent?: (event: TelegramAdapterEvent) => void) {
  const created = new TelegramAdapter(
    {
      mode: "webhook",
      token: emulator.token,
      apiRoot: emulator.url,
      webhookUrl: `http://127.0.0.1:${gateway.port}/telegram/webhook`,
      webhookSecret: SECRET,
      requestTimeoutMs: 2_000,
    },
    onEvent ? { onEvent } : {},
  );
  adapter = created;
  routes = created.routes();
  return created;
}

function post(body: string, secret: string | null): Promise<Response> {
  return fetch(`http://127.0.0.1:${gateway.port}/telegram/webhook`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(secret === null ? {} : { "x-telegram-bot-api-secret-token": secret }),
    },
    body,
  });
}

describe("Telegram adapter, webhook", () => {
  test("start() registers the webhook with its secret; Telegram's POST reaches ingress and gets 200", async () => {
    const ingress = recordingIngress();
    const created = webhookAdapter();
    expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /telegram/webhook"]);
    await created.start(ingress);
    expect(created.isConnected()).toBe(true);
    expect(emulator.webhookRegistration()).toEqual({
      url: `http://127.0.0.1:${gateway.port}/telegram/webhook`,
      secretToken: SECRET,
      allowedUpdates: ["message", "edited_message", "callback_query"],
    });

    const postedAfterMs = performance.now();
    const { update } = emulator.incoming({
      chat: groupChat(-4001, "Friends"),
      from: alice,
      text: "hi @switchboard_test_bot",
    });
    await emulator.waitForConfirmed(update.update_id, 3_000);
    // Stamped as the request reached the route (the reply's `receive` stage starts there).
    expect(ingress.timings[0]?.arrivedAtMs).toBeGreaterThan(postedAfterMs);
    expect(ingress.timings[0]?.arrivedAtMs).toBeLessThanOrEqual(performance.now());
    expect(emulator.webhookAttempts()).toEqual([
      expect.objectContaining({ updateId: update.update_id, status: 200 }),
    ]);
    expect(ingress.received).toHaveLength(1);
    expect(ingress.received[0]).toMatchObject({
      surface: "group",
      addressedToBot: true,
      text: "hi @switchboard_test_bot",
    });
  }, 10_000);

  test("a wrong or missing secret answers 401 without calling ingress", async () => {
    const { events, onEvent } = eventLog();
    const ingress = recordingIngress();
    await webhookAdapter(onEvent).start(ingress);
    const body = JSON.stringify(
      messageUpdate(message({ chat: privateChat(alice), from: alice, messageId: 1, text: "x" }), 5),
    );
    expect((await post(body, "webhook_secret_0123456780")).status).toBe(401);
    expect((await post(body, "short")).status).toBe(401);
    expect((await post(body, null)).status).toBe(401);
    expect(ingress.received).toHaveLength(0);
    const rejections = events.flatMap((e) => (e.kind === "webhook_rejected" ? [e.status] : []));
    expect(rejections).toEqual([401, 401, 401]);
  }, 10_000);

  test("a malformed body with the right secret answers 400 without calling ingress", async () => {
    const ingress = recordingIngress();
    await webhookAdapter().start(ingress);
    expect((await post("{not json", SECRET)).status).toBe(400);
    expect((await post(JSON.stringify({ message: {} }), SECRET)).status).toBe(400);
    expect((await post("[]", SECRET)).status).toBe(400);
    expect(ingress.received).toHaveLength(0);
  }, 10_000);

  test("when ingress rejects, the route answers 500 and Telegram's retry is admitted", async () => {
    const ingress = recordingIngress((_message, attempt) => {
      if (attempt === 1) throw new Error("database is locked");
      return admitted();
    });
    await webhookAdapter().start(ingress);
    const { update } = emulator.incoming({ chat: privateChat(alice), from: alice, text: "retry me" });
    await emulator.waitForConfirmed(update.update_id, 3_000);
    expect(emulator.webhookAttempts().map((a) => a.status)).toEqual([500, 200]);
    expect(ingress.received.map((m) => m.updateKey)).toEqual([
      String(update.update_id),
      String(update.update_id),
    ]);
  }, 10_000);

  test("a skipped update is acknowledged with 200; before start() and after stop() the route answers 503", async () => {
    const ingress = recordingIngress();
    const created = webhookAdapter();
    const body = JSON.stringify({
      update_id: 9,
      callback_query: { id: "1", from: alice, chat_instance: "c" },
    });
    expect((await post(body, SECRET)).status).toBe(503);
    await created.start(ingress);
    expect((await post(body, SECRET)).status).toBe(200);
    await created.stop();
    expect(created.isConnected()).toBe(false);
    expect((await post(body, SECRET)).status).toBe(503);
    expect(ingress.received).toHaveLength(0);
  }, 10_000);
});
