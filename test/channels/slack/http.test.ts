import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createSlackAdapter, type SlackAdapter } from "../../../channels/slack/adapter.ts";
import { postEvent, type SlackEmulator, startSlackEmulator } from "../../emulators/slack/index.ts";
import { recordingIngress, recordingLogger, serveRoutes } from "./helpers.ts";

const signingSecret = "test-signing-secret-0123456789";
const user = "U0HUMAN001";

let emulator: SlackEmulator;
let adapter: SlackAdapter;
let gateway: { url: string; stop(): Promise<void> };
let ingress: ReturnType<typeof recordingIngress>;
let failIngress = false;
let ingressDelayMs = 0;
let ingressResolved = 0;
const logger = recordingLogger();

beforeAll(async () => {
  emulator = startSlackEmulator();
  adapter = createSlackAdapter(
    {
      mode: "http",
      botToken: emulator.botToken,
      signingSecret,
      apiUrl: emulator.apiUrl,
      requestTimeoutMs: 2000,
    },
    { logger },
  );
  ingress = recordingIngress(async () => {
    if (ingressDelayMs > 0) await Bun.sleep(ingressDelayMs);
    if (failIngress) throw new Error("store unavailable");
    ingressResolved += 1;
    return { kind: "admitted", runId: "run_1", conversationId: "conv_1" };
  });
  await adapter.start(ingress);
  gateway = serveRoutes(adapter.routes());
});

afterEach(() => {
  ingress.messages.length = 0;
  failIngress = false;
  ingressDelayMs = 0;
});

afterAll(async () => {
  await adapter.stop();
  await gateway.stop();
  await emulator.close();
});

const eventsUrl = () => `${gateway.url}/slack/events`;

describe("Slack adapter, Events API over HTTP (real Bolt)", () => {
  test("start() learns the account from auth.test and serves POST /slack/events", () => {
    expect(adapter.account).toBe(`${emulator.identity.teamId}:${emulator.identity.appId}`);
    expect(adapter.isConnected()).toBe(true);
    expect(adapter.routes().map((route) => `${route.method} ${route.path}`)).toEqual(["POST /slack/events"]);
    expect(emulator.calls("auth.test")).toHaveLength(1);
  });

  test("url_verification answers the challenge", async () => {
    const result = await postEvent(
      eventsUrl(),
      { type: "url_verification", token: "t", challenge: "c-123" },
      { signingSecret },
    );
    expect(result.status).toBe(200);
    expect(JSON.parse(result.body)).toEqual({ challenge: "c-123" });
  });

  test("a DM reaches ingress before the 200", async () => {
    const body = emulator.events.dm({ user, text: "hello there" });
    const result = await postEvent(eventsUrl(), body, { signingSecret });
    expect(result.status).toBe(200);
    expect(result.attempts).toHaveLength(1);
    expect(ingress.messages).toHaveLength(1);
    expect(ingress.messages[0]).toMatchObject({
      channel: "slack",
      account: adapter.account,
      updateKey: body.event_id,
      principal: { id: user, isBot: false },
      conversationKey: `sl:${adapter.account}:dm:${user}`,
      surface: "dm",
      text: "hello there",
      addressedToBot: true,
    });
  });

  test("the 200 is sent only after ingress resolved", async () => {
    ingressDelayMs = 150;
    const before = ingressResolved;
    const result = await postEvent(eventsUrl(), emulator.events.dm({ user, text: "slow store" }), {
      signingSecret,
    });
    expect(result.status).toBe(200);
    expect(ingressResolved).toBe(before + 1);
  });

  test("the app_mention + message pair of one channel mention reaches ingress exactly once", async () => {
    const pair = emulator.events.channelMention({ user, channel: "C0GENERAL1" });
    const first = await postEvent(eventsUrl(), pair.message, { signingSecret });
    const second = await postEvent(eventsUrl(), pair.appMention, { signingSecret });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(ingress.messages).toHaveLength(1);
    expect(ingress.messages[0]).toMatchObject({
      updateKey: pair.appMention.event_id,
      surface: "thread",
      replyTarget: `C0GENERAL1:${pair.appMention.event.ts}`,
      addressedToBot: true,
    });
  });

  test("a bad signature gets 401 and nothing reaches ingress", async () => {
    const body = emulator.events.dm({ user, text: "forged" });
    const result = await postEvent(eventsUrl(), body, { signingSecret, badSignature: true, maxRetries: 0 });
    expect(result.status).toBe(401);
    expect(ingress.messages).toHaveLength(0);
  });

  test("a request signed six minutes ago gets 401", async () => {
    const body = emulator.events.dm({ user, text: "old" });
    const result = await postEvent(eventsUrl(), body, {
      signingSecret,
      timestampSkewSeconds: -360,
      maxRetries: 0,
    });
    expect(result.status).toBe(401);
    expect(ingress.messages).toHaveLength(0);
  });

  test("a Slack retry (X-Slack-Retry-Num) is passed on again with the same updateKey", async () => {
    const body = emulator.events.dm({ user, text: "are you there?" });
    await postEvent(eventsUrl(), body, { signingSecret });
    const retry = await postEvent(eventsUrl(), body, { signingSecret, retryNum: 1 });
    expect(retry.status).toBe(200);
    expect(ingress.messages.map((message) => message.updateKey)).toEqual([body.event_id, body.event_id]);
  });

  test("ingress rejecting → 500, and Slack's retry then lands once ingress recovers", async () => {
    failIngress = true;
    const body = emulator.events.dm({ user, text: "remember this" });
    const failed = await postEvent(eventsUrl(), body, { signingSecret, maxRetries: 0 });
    expect(failed.status).toBe(500);
    expect(
      logger.records.some(
        (record) =>
          record.event === "slack.event_answered_500" && String(record.error).includes("store unavailable"),
      ),
    ).toBe(true);

    failIngress = false;
    const retried = await postEvent(eventsUrl(), body, { signingSecret, retryNum: 1 });
    expect(retried.status).toBe(200);
    expect(ingress.messages.map((message) => message.updateKey)).toEqual([body.event_id, body.event_id]);
  });

  test("the emulator's sender retries a 500 with increasing X-Slack-Retry-Num", async () => {
    failIngress = true;
    const body = emulator.events.dm({ user, text: "flaky" });
    const result = await postEvent(eventsUrl(), body, { signingSecret, maxRetries: 2 });
    expect(result.attempts.map((attempt) => attempt.retryNum)).toEqual([0, 1, 2]);
    expect(result.status).toBe(500);
    expect(ingress.messages).toHaveLength(3);
  });

  test("the bot's own messages and other bots' are acknowledged without reaching ingress", async () => {
    const own = await postEvent(
      eventsUrl(),
      emulator.events.botMessage({ channel: "C0GENERAL1", text: "mine" }),
      {
        signingSecret,
      },
    );
    const other = await postEvent(
      eventsUrl(),
      emulator.events.botMessage({ channel: "C0GENERAL1", text: "theirs", botId: "B0OTHER001" }),
      { signingSecret },
    );
    expect([own.status, other.status]).toEqual([200, 200]);
    expect(ingress.messages).toHaveLength(0);
  });

  // Keep last: stops the adapter.
  test("after stop() events get 503 so Slack retries them later", async () => {
    await adapter.stop();
    expect(adapter.isConnected()).toBe(false);
    const result = await postEvent(eventsUrl(), emulator.events.dm({ user, text: "late" }), {
      signingSecret,
      maxRetries: 0,
    });
    expect(result.status).toBe(503);
    expect(ingress.messages).toHaveLength(0);
  });
});
