/**
 * Slack chat streaming behind config, through a real gateway process (Bolt in Socket Mode) and the
 * Slack emulator: a thread reply grows as one streamed message; withdrawn text, a top-level DM and
 * a crash mid-stream all end with one message showing the answer.
 */
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import type { OutboxRecord } from "../../outbox/types.ts";
import { type SlackEmulator, startSlackEmulator } from "../emulators/slack/index.ts";
import type { VisibleMessage } from "../emulators/slack/types.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { eventually, type GatewayProcess, startGatewayProcess } from "./support/gateway-process.ts";

const dir = tempDir("switchboard-e2e-slack-stream-");
const ALICE = "U0ALICE";
const GENERAL = "C0GENERAL";
const ANSWER = "one two three four five six seven eight";
let llm: FakeLlmServer;
let slack: SlackEmulator;
let gateway: GatewayProcess;

function gatewayEnv(): Record<string, string> {
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    surfaces: {
      "slack:*": { inputPolicy: "queue", delivery: "stream", nativeStreaming: true },
    },
    extra: {
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_APP_TOKEN: slack.appToken,
      SLACK_API_URL: `${slack.url}/api`,
      SLACK_ALLOWED_USERS: ALICE,
    },
  });
}

/** An answer streamed over 1.6 s: long enough for a start and an append a second apart. */
const slow = (text: string, extra: Record<string, unknown> = {}) => ({
  kind: "text" as const,
  text,
  chunks: 8,
  chunkDelayMs: 200,
  ...extra,
});

beforeAll(async () => {
  llm = startFakeLlmServer();
  slack = startSlackEmulator();
  gateway = await startGatewayProcess(gatewayEnv());
}, 30_000);

afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await slack.close();
  await llm.stop();
  dir.cleanup();
}, 20_000);

beforeEach(() => llm.reset());

/** Mentions the bot at the top level of #general; the answer goes to a thread on the mention. */
function mention(text: string): string {
  const pair = slack.events.channelMention({
    channel: GENERAL,
    user: ALICE,
    text: `<@${slack.identity.botUserId}> ${text}`,
  });
  slack.pushEvent(pair.appMention);
  slack.pushEvent(pair.message);
  return String(pair.appMention.event.ts);
}

const botMessagesIn = (threadTs: string) =>
  slack.messages(GENERAL).filter((m) => m.user === slack.identity.botUserId && m.threadTs === threadTs);
const callsIn = (method: string, threadTs: string, ts?: string) =>
  slack
    .calls(method)
    .filter((c) => c.ok && (c.params.thread_ts === threadTs || (ts !== undefined && c.params.ts === ts)));

function finalMessage(threadTs: string, text: string): Promise<VisibleMessage> {
  return slack.waitFor(
    () => botMessagesIn(threadTs).find((m) => m.text === text && m.stream !== "streaming"),
    20_000,
    `the bot's final "${text}" in thread ${threadTs}`,
  );
}

test("a thread reply streams as one native message: started, appended under the rate limit, stopped with the answer", async () => {
  llm.setRules([{ match: { lastUserContains: "stream natively" }, reply: slow(ANSWER) }]);
  const threadTs = mention("stream natively");
  const message = await finalMessage(threadTs, ANSWER);
  expect(message.stream).toBe("stopped");
  expect(botMessagesIn(threadTs).length).toBe(1);
  expect(callsIn("chat.startStream", threadTs).length).toBe(1);
  const appends = callsIn("chat.appendStream", threadTs, message.ts);
  expect(appends.length).toBeGreaterThanOrEqual(1);
  const times = [callsIn("chat.startStream", threadTs)[0]!, ...appends].map((c) => c.atMs);
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(900);
  expect(slack.calls("chat.stopStream").filter((c) => c.params.ts === message.ts).length).toBe(1);
  expect(slack.calls("chat.postMessage").filter((c) => c.params.thread_ts === threadTs).length).toBe(0);
  expect(slack.calls("chat.update").filter((c) => c.params.ts === message.ts).length).toBe(0);
}, 30_000);

test("a retried attempt withdraws streamed text: the stream stops and the same message is edited to the answer", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "withdraw this" },
      times: 1,
      reply: slow("doomed words that vanish soon", { chunks: 5, dropAfterChunks: 3 }),
    },
    { match: { lastUserContains: "withdraw this" }, reply: slow("the answer after a retry", { chunks: 5 }) },
  ]);
  const threadTs = mention("withdraw this");
  const message = await finalMessage(threadTs, "the answer after a retry");
  expect(botMessagesIn(threadTs).length).toBe(1);
  expect(callsIn("chat.startStream", threadTs).length).toBe(1);
  expect(slack.calls("chat.stopStream").filter((c) => c.params.ts === message.ts).length).toBe(1);
  expect(slack.calls("chat.update").filter((c) => c.params.ts === message.ts && c.ok).length).toBeGreaterThan(
    0,
  );
  expect(llm.requests().length).toBe(2);
}, 30_000);

test("a 429 on an append ends the live stream; the outbox finishes the same message with the answer after retry_after", async () => {
  llm.setRules([{ match: { lastUserContains: "rate limited stream" }, reply: slow(ANSWER) }]);
  slack.failNext("chat.appendStream", { kind: "rate_limited", retryAfterSeconds: 1 });
  const threadTs = mention("rate limited stream");
  const message = await finalMessage(threadTs, ANSWER);
  expect(botMessagesIn(threadTs).length).toBe(1);
  expect(callsIn("chat.startStream", threadTs).length).toBe(1);
  const limited = slack
    .calls("chat.appendStream")
    .filter((c) => c.params.ts === message.ts && c.status === 429);
  expect(limited.length).toBe(1);
  const finalEdits = slack.calls("chat.update").filter((c) => c.params.ts === message.ts && c.ok);
  expect(finalEdits.length).toBeGreaterThan(0);
  expect(finalEdits[0]!.atMs - limited[0]!.atMs).toBeGreaterThanOrEqual(1000);
}, 30_000);

test("a top-level DM cannot stream natively and falls back to edits", async () => {
  llm.setRules([{ match: { lastUserContains: "dm stream" }, reply: slow(ANSWER) }]);
  slack.pushEvent(slack.events.dm({ user: ALICE, text: "dm stream" }));
  const dm = `D${ALICE.slice(1)}`;
  const reply = await slack.waitFor(
    () => slack.messages(dm).find((m) => m.user === slack.identity.botUserId && m.text === ANSWER),
    20_000,
    "the DM answer",
  );
  expect(reply.stream).toBeUndefined();
  expect(slack.calls("chat.startStream").filter((c) => c.params.channel === dm).length).toBe(0);
  expect(slack.calls("chat.update").filter((c) => c.params.ts === reply.ts).length).toBeGreaterThan(0);
}, 30_000);

test("SIGKILL mid-stream: after the restart the streamed message is stopped and edited to the answer, never sent twice", async () => {
  llm.setRules([
    { match: { lastUserContains: "crash mid stream" }, reply: slow(ANSWER, { chunkDelayMs: 500 }) },
  ]);
  const threadTs = mention("crash mid stream");
  const partial = await slack.waitFor(
    () => botMessagesIn(threadTs).find((m) => m.stream === "streaming" && m.text.length > 0),
    20_000,
    "a message streaming in the thread",
  );
  // The gateway persists the message id after chat.startStream answers and only then appends, so
  // a successful append means the id is durable. A kill before that leaves the record ambiguous
  // (the start's outcome is unknown to the restarted process), which is a different test.
  await slack.waitFor(
    () => slack.calls("chat.appendStream").find((c) => c.ok && c.params.ts === partial.ts),
    20_000,
    "an append to the streaming message",
  );
  await gateway.kill("SIGKILL");
  gateway = await startGatewayProcess(gatewayEnv());
  const message = await finalMessage(threadTs, ANSWER);
  expect(message.ts).toBe(partial.ts);
  expect(message.stream).toBe("stopped");
  expect(botMessagesIn(threadTs).length).toBe(1);
  const onMessage = (method: string) => slack.calls(method).filter((c) => c.params.ts === message.ts);
  expect(onMessage("chat.update").map((c) => (c.ok ? "ok" : c.error))).toContain("message_is_streaming");
  expect(onMessage("chat.stopStream").filter((c) => c.ok).length).toBe(1);
  expect(callsIn("chat.startStream", threadTs).length).toBe(1);
}, 45_000);

test("SIGKILL while chat.startStream is unanswered: the reply is ambiguous, nothing is posted until the operator retries it", async () => {
  const dbEnv = { SWITCHBOARD_DB: gatewayEnv().SWITCHBOARD_DB! };
  llm.setRules([{ match: { lastUserContains: "start never answered" }, reply: slow(ANSWER) }]);
  slack.failNext("chat.startStream", { kind: "hang" });
  const threadTs = mention("start never answered");
  await slack.waitFor(
    () => slack.calls("chat.startStream").find((c) => c.params.thread_ts === threadTs && c.fault === "hang"),
    20_000,
    "the hung chat.startStream",
  );
  await gateway.kill("SIGKILL");
  gateway = await startGatewayProcess(gatewayEnv());

  const ambiguous = await eventually(
    async () => {
      const records = await runCliJson<OutboxRecord[]>(["outbox", "list", "--state", "ambiguous"], dbEnv);
      return records.find(
        (record) => record.replyTo === threadTs && record.kind === "stream" && record.final,
      );
    },
    20_000,
    "the interrupted stream record, ambiguous and holding the final answer",
  );
  expect(ambiguous.markdown).toBe(ANSWER);
  // A later reply to another chat goes out: the restarted sender is past the ambiguous record.
  slack.pushEvent(slack.events.dm({ user: ALICE, text: "anything new" }));
  await slack.waitFor(
    () =>
      slack
        .messages(`D${ALICE.slice(1)}`)
        .find((m) => m.text === "echo: anything new" && m.stream !== "streaming"),
    15_000,
    "the reply to a later message from another chat",
  );
  expect(botMessagesIn(threadTs).length).toBe(0);

  const retried = await runCli(
    ["outbox", "retry", ambiguous.id, "--note", "not in the thread", "--actor", "e2e-operator"],
    dbEnv,
  );
  expect(retried.exitCode).toBe(0);
  const message = await finalMessage(threadTs, ANSWER);
  expect(message.stream).toBeUndefined();
  expect(botMessagesIn(threadTs).length).toBe(1);
  expect(slack.calls("chat.startStream").filter((c) => c.params.thread_ts === threadTs).length).toBe(1);
}, 60_000);
