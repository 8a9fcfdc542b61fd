// Kept per platform: Slack's own receiving (Socket Mode envelopes, signed Events API retries, threads).
/**
 * End to end through a real gateway process: Bolt (Socket Mode, then the Events API over HTTP)
 * against the Slack emulator, the model behind the fake OpenAI-compatible server, SQLite on a
 * temp file. Input policies and the allowlist do not depend on the platform: telegram.test.ts
 * has them.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { postEvent, type SlackEmulator, startSlackEmulator } from "../emulators/slack/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  eventually,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";
import { metricValue, unaddressedCount } from "./support/metrics.ts";
import { waitUntilSettled } from "./support/settled.ts";

const dir = tempDir("switchboard-e2e-slack-");
const ALICE = "U0ALICE";
const BOB = "U0BOB";
const GENERAL = "C0GENERAL";
const SIGNING_SECRET = "e2e-slack-signing-secret-0123456789";
let llm: FakeLlmServer;
let slack: SlackEmulator;

/** Socket Mode unless `mode` is "http", which serves the Events API with SIGNING_SECRET instead. */
function env(mode: "socket" | "http", dbFile = "gateway.sqlite"): Record<string, string> {
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    dbFile,
    surfaces: {
      "slack:dm": { inputPolicy: "supersede", delivery: "terminal" },
      "slack:group": { inputPolicy: "queue", delivery: "terminal" },
      "slack:thread": { inputPolicy: "queue", delivery: "terminal" },
    },
    extra: {
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_API_URL: `${slack.url}/api`,
      SLACK_ALLOWED_USERS: `${ALICE},${BOB}`,
      ...(mode === "socket" ? { SLACK_APP_TOKEN: slack.appToken } : { SLACK_SIGNING_SECRET: SIGNING_SECRET }),
    },
  });
}

const dmChannel = (user: string) => `D${user.slice(1)}`;
/** What the bot posted in `channel` (every thread included), edits applied. */
const botReplies = (channel: string) =>
  slack.messages(channel).filter((m) => m.user === slack.identity.botUserId);

function waitForBotReply(channel: string, text: string, timeoutMs: number) {
  return slack.waitFor(
    () => botReplies(channel).find((m) => m.text.includes(text)),
    timeoutMs,
    `a bot reply containing "${text}" in ${channel}`,
  );
}

function waitForAck(envelopeId: string, timeoutMs: number) {
  return slack.waitFor(
    () => slack.envelope(envelopeId)?.state === "acked",
    timeoutMs,
    `the gateway to ack envelope ${envelopeId}`,
  );
}

const duplicates = (gateway: GatewayProcess) =>
  metricValue(gateway.url, "switchboard_inbound_duplicates_total", { channel: "slack" });

beforeAll(() => {
  llm = startFakeLlmServer();
  slack = startSlackEmulator();
});
afterAll(async () => {
  await slack.close();
  await llm.stop();
  dir.cleanup();
});

describe("slack end to end (Socket Mode)", () => {
  let gateway: GatewayProcess;
  beforeAll(async () => {
    gateway = await startGatewayProcess(env("socket"));
  }, GATEWAY_START_TIMEOUT_MS);
  afterAll(async () => {
    await gateway?.kill("SIGTERM");
  }, GATEWAY_STOP_TIMEOUT_MS);

  test("one message, one reply", async () => {
    const envelopeId = slack.pushEvent(slack.events.dm({ user: ALICE, text: "hello there" }));
    const reply = await waitForBotReply(dmChannel(ALICE), "echo: hello there", 10_000);
    expect(reply.threadTs).toBeUndefined();
    // The ack travels over the socket, the reply over HTTP: either may reach the emulator first.
    await waitForAck(envelopeId, 5_000);
    expect(llm.requestsContaining("hello there").length).toBe(1);
  }, 20_000);

  test("the same envelope duplicated and redelivered, and again after a restart: one model call, one reply", async () => {
    const envelopeId = slack.pushEvent(slack.events.dm({ user: BOB, text: "dedupe me please" }));
    await waitForBotReply(dmChannel(BOB), "echo: dedupe me please", 10_000);
    slack.duplicate(envelopeId);
    slack.redeliver(envelopeId);
    await eventually(async () => (await duplicates(gateway)) === 2, 10_000, "two duplicates at ingress");

    await gateway.kill("SIGKILL");
    const connectionsBefore = slack.socketConnectionsEver();
    gateway = await startGatewayProcess(env("socket"));
    await slack.waitFor(
      () => slack.socketConnectionsEver() > connectionsBefore && slack.socketConnections() === 1,
      10_000,
      "the restarted gateway's Socket Mode connection (and the killed one gone)",
    );
    slack.redeliver(envelopeId);
    await eventually(async () => (await duplicates(gateway)) === 1, 10_000, "the replay seen as a duplicate");
    await waitUntilSettled(env("socket").SWITCHBOARD_DB!);

    expect(llm.requestsContaining("dedupe me please").length).toBe(1);
    expect(botReplies(dmChannel(BOB)).filter((m) => m.text.includes("dedupe me please")).length).toBe(1);
  }, 40_000);

  test("a channel message without a mention is ignored; a mention (app_mention + message) is answered once, in its thread", async () => {
    const chatter = slack.pushEvent(
      slack.events.channelMessage({ channel: GENERAL, user: ALICE, text: "just chatting without mention" }),
    );
    const mention = slack.events.channelMention({
      channel: GENERAL,
      user: ALICE,
      text: `<@${slack.identity.botUserId}> what is up`,
    });
    const mentionEnvelope = slack.pushEvent(mention.appMention);
    const messageEnvelope = slack.pushEvent(mention.message);
    const reply = await waitForBotReply(GENERAL, "echo: what is up", 10_000);
    await waitForAck(chatter, 5_000);
    await waitForAck(mentionEnvelope, 5_000);
    await waitForAck(messageEnvelope, 5_000);
    await waitUntilSettled(env("socket").SWITCHBOARD_DB!);

    expect(reply.threadTs).toBe(String(mention.appMention.event.ts));
    expect(llm.requestsContaining("what is up").length).toBe(1);
    expect(llm.requestsContaining("what is up")[0]?.lastUserText).toBe("what is up");
    expect(botReplies(GENERAL).filter((m) => m.text.includes("what is up")).length).toBe(1);
    expect(llm.requestsContaining("without mention").length).toBe(0);
    expect(await unaddressedCount(gateway.url, "slack")).toBe(1);
  }, 20_000);

  test("queue in a thread: two quick mentions are both answered, in order", async () => {
    llm.addRules([
      {
        match: { lastUserContains: "queued one" },
        reply: { kind: "text", text: "answer to queued one", chunks: 4, chunkDelayMs: 200 },
      },
    ]);
    const bot = slack.identity.botUserId;
    const start = slack.events.channelMention({
      channel: GENERAL,
      user: ALICE,
      text: `<@${bot}> start a thread`,
    });
    slack.pushEvent(start.appMention);
    slack.pushEvent(start.message);
    await waitForBotReply(GENERAL, "echo: start a thread", 10_000);
    const threadTs = String(start.appMention.event.ts);

    for (const [user, text] of [
      [ALICE, "queued one"],
      [BOB, "queued two"],
    ] as const) {
      const pair = slack.events.channelMention({
        channel: GENERAL,
        user,
        text: `<@${bot}> ${text}`,
        threadTs,
      });
      slack.pushEvent(pair.appMention);
      slack.pushEvent(pair.message);
    }
    await waitForBotReply(GENERAL, "echo: queued two", 15_000);

    const inThread = botReplies(GENERAL).filter((m) => m.threadTs === threadTs);
    const first = inThread.findIndex((m) => m.text.includes("answer to queued one"));
    const second = inThread.findIndex((m) => m.text.includes("echo: queued two"));
    expect(first).toBeGreaterThanOrEqual(0);
    expect(first).toBeLessThan(second);
    // One thread, one conversation: the second prompt carries the first exchange.
    expect(JSON.stringify(llm.requestsContaining("queued two")[0]?.messages)).toContain(
      "answer to queued one",
    );
  }, 30_000);
});

describe("slack end to end (Events API over HTTP)", () => {
  const dbFile = "http.sqlite";
  let gateway: GatewayProcess;
  beforeAll(async () => {
    gateway = await startGatewayProcess(env("http", dbFile));
  }, GATEWAY_START_TIMEOUT_MS);
  afterAll(async () => {
    await gateway?.kill("SIGTERM");
  }, GATEWAY_STOP_TIMEOUT_MS);

  test("a bad signature is refused with 401 and nothing is stored; a signed event is answered", async () => {
    const forged = await postEvent(
      `${gateway.url}/slack/events`,
      slack.events.dm({ user: ALICE, text: "forged over http" }),
      { signingSecret: SIGNING_SECRET, badSignature: true, maxRetries: 0 },
    );
    expect(forged.status).toBe(401);
    const db = new Database(join(dir.path, dbFile), { readonly: true });
    try {
      expect((db.query("SELECT count(*) AS n FROM ingress_receipts").get() as { n: number }).n).toBe(0);
    } finally {
      db.close();
    }

    const signed = await postEvent(
      `${gateway.url}/slack/events`,
      slack.events.dm({ user: ALICE, text: "through the events api" }),
      { signingSecret: SIGNING_SECRET, maxRetries: 0 },
    );
    expect(signed.status).toBe(200);
    await waitForBotReply(dmChannel(ALICE), "echo: through the events api", 10_000);
    expect(llm.requestsContaining("forged over http").length).toBe(0);
  }, 30_000);

  test("Slack's retries of one event_id, also after a restart: one model call, one reply", async () => {
    const payload = slack.events.dm({ user: BOB, text: "retried over http" });
    const post = (retryNum: number) =>
      postEvent(`${gateway.url}/slack/events`, payload, {
        signingSecret: SIGNING_SECRET,
        retryNum,
        maxRetries: 0,
      });

    expect((await post(0)).status).toBe(200);
    await waitForBotReply(dmChannel(BOB), "echo: retried over http", 10_000);
    // 200 comes only after ingress resolved, so the duplicate has been judged when post() returns.
    expect((await post(1)).status).toBe(200);
    expect(await duplicates(gateway)).toBe(1);

    await gateway.kill("SIGKILL");
    gateway = await startGatewayProcess(env("http", dbFile));
    expect((await post(2)).status).toBe(200);
    expect(await duplicates(gateway)).toBe(1);
    await waitUntilSettled(env("http", dbFile).SWITCHBOARD_DB!);

    expect(llm.requestsContaining("retried over http").length).toBe(1);
    expect(botReplies(dmChannel(BOB)).filter((m) => m.text.includes("retried over http")).length).toBe(1);
  }, 40_000);
});
