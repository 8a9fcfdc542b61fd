/**
 * Edits, deletes and status reactions on Slack, end to end in this process: Bolt over Socket Mode
 * against the Slack emulator (message_changed and message_deleted as Slack sends them, reactions
 * recorded), the fake model server, SQLite on a temp file.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { systemClock } from "../../src/util/clock.ts";
import { startSlackEmulator } from "../emulators/slack/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { slowAnswerRule, useE2eFixture } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-edits-slack-", () => startSlackEmulator());
const { llm, platform: slack } = fixture;
const ALICE = "U0ALICE";
const DM = "D0ALICE";
const GENERAL = "C0GENERAL";
const WAIT_MS = 10_000;

const env = () =>
  e2eGatewayEnv({
    dir: fixture.dir.path,
    llm,
    surfaces: {
      // DMs show status reactions by default.
      "slack:dm": { inputPolicy: "supersede", delivery: "stream", edits: "ignore" },
      "slack:thread": { inputPolicy: "queue", delivery: "terminal", edits: "new-input" },
    },
    extra: {
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_APP_TOKEN: slack.appToken,
      SLACK_API_URL: `${slack.url}/api`,
      SLACK_ALLOWED_USERS: ALICE,
    },
  });

let running: InProcessGateway | undefined;
beforeAll(async () => {
  running = await startInProcessGateway(env(), { clock: systemClock, limits: FAST_PACING });
}, GATEWAY_START_TIMEOUT_MS);
afterAll(() => running?.stop({ graceMs: 0 }), GATEWAY_STOP_TIMEOUT_MS);

const gateway = () => running!.gateway;
const source = () => `slack:${gateway().adapters.get("slack")!.account}`;
const botReplies = (channel: string) =>
  slack.messages(channel).filter((m) => m.user === slack.identity.botUserId);
const waitForBotReply = (channel: string, text: string) =>
  slack.waitFor(
    () => botReplies(channel).find((m) => m.text.includes(text)),
    WAIT_MS,
    `a bot reply containing "${text}" in ${channel}`,
  );
/** The run the Slack event `eventId` was admitted to. */
async function runOfEvent(eventId: string) {
  const receipt = await gateway().stores.runtime.loadIngressReceipt(source(), eventId);
  if (!receipt?.runId) return null;
  return (await gateway().stores.runtime.loadRun(receipt.runId))?.run ?? null;
}
const dm = (text: string) => {
  const body = slack.events.dm({ user: ALICE, text });
  slack.pushEvent(body);
  return { ts: String(body.event.ts), eventId: body.event_id };
};
const reactionNames = (ts: string) =>
  slack
    .calls()
    .filter((c) => c.method.startsWith("reactions.") && c.params.timestamp === ts)
    .map((c) => `${c.method === "reactions.add" ? "+" : "-"}${c.params.name}`);

describe("status reactions on Slack", () => {
  test("👀 when admitted, then ✅ in its place when the answer was delivered", async () => {
    const { ts } = dm("hello ladder");
    await waitForBotReply(DM, "echo: hello ladder");
    await slack.waitFor(
      () => slack.reactions(DM, ts).join() === "white_check_mark",
      WAIT_MS,
      "the ✅ reaction alone",
    );
    expect(reactionNames(ts)).toEqual(["+eyes", "+white_check_mark", "-eyes"]);
  }, 20_000);
});

describe("edits on Slack", () => {
  test("an edit while the answer streams restarts it with the new text; the partial reply is retracted", async () => {
    await llm.setRules([
      slowAnswerRule(
        "abuot cats",
        "Cats are small furry carnivores who rule the internet and my home",
        12,
        400,
      ),
      { match: { lastUserContains: "about dogs" }, reply: { kind: "text", text: "Dogs are loyal." } },
    ]);
    const original = dm("write an essay abuot cats");
    await waitForBotReply(DM, "Cats are");
    const edit = slack.events.messageChanged({
      channel: DM,
      channelType: "im",
      user: ALICE,
      ts: original.ts,
      previousText: "write an essay abuot cats",
      newText: "write an essay about dogs",
    });
    slack.pushEvent(edit);
    await waitForBotReply(DM, "Dogs are loyal.");
    await slack.waitFor(
      () => !botReplies(DM).some((m) => m.text.includes("Cats are")),
      WAIT_MS,
      "the partial reply to be retracted",
    );
    expect(await runOfEvent(original.eventId)).toMatchObject({ state: "superseded", stopReason: "edited" });
    expect(await runOfEvent(edit.event_id)).toMatchObject({
      state: "completed",
      context: { replyTo: original.ts },
    });
    await llm.setRules([]);
  }, 30_000);

  test("after the answer: ignored in DMs (edits: ignore), a new input in threads (edits: new-input)", async () => {
    const hi = dm("hi there");
    await waitForBotReply(DM, "echo: hi there");
    slack.pushEvent(
      slack.events.messageChanged({
        channel: DM,
        channelType: "im",
        user: ALICE,
        ts: hi.ts,
        previousText: "hi there",
        newText: "hi there, edited",
      }),
    );
    await eventually(
      async () =>
        running!.logs.some((r) => r.event === "ingress.ignored" && r.reason === "edit after the answer"),
      WAIT_MS,
      "the DM edit to be ignored",
    );

    const bot = slack.identity.botUserId;
    const mention = slack.events.channelMention({
      channel: GENERAL,
      user: ALICE,
      text: `<@${bot}> what is 2+2`,
    });
    slack.pushEvent(mention.appMention);
    await waitForBotReply(GENERAL, "what is 2+2");
    slack.pushEvent(
      slack.events.messageChanged({
        channel: GENERAL,
        channelType: "channel",
        user: ALICE,
        ts: String(mention.appMention.event.ts),
        previousText: `<@${bot}> what is 2+2`,
        newText: `<@${bot}> what is 3+3`,
      }),
    );
    const answer = await waitForBotReply(GENERAL, "what is 3+3");
    expect(answer.threadTs).toBe(String(mention.appMention.event.ts));
    expect(llm.requestsContaining("hi there, edited")).toHaveLength(0);
  }, 30_000);
});

describe("deletes on Slack", () => {
  test("a delete cancels the queued answer and stops the running one", async () => {
    await llm.setRules([{ match: { lastUserContains: "write a novel" }, reply: { kind: "hang" } }]);
    const bot = slack.identity.botUserId;
    const novel = slack.events.channelMention({
      channel: GENERAL,
      user: ALICE,
      text: `<@${bot}> write a novel`,
    });
    slack.pushEvent(novel.appMention);
    const thread = String(novel.appMention.event.ts);
    await eventually(
      async () => llm.requestsContaining("write a novel").length === 1,
      WAIT_MS,
      "the novel's call",
    );
    const poem = slack.events.threadReply({
      channel: GENERAL,
      user: ALICE,
      text: "and a poem",
      threadTs: thread,
    });
    slack.pushEvent(poem);
    await eventually(
      async () => (await runOfEvent(poem.event_id))?.state === "queued",
      WAIT_MS,
      "the poem queued",
    );

    slack.pushEvent(
      slack.events.messageDeleted({
        channel: GENERAL,
        channelType: "channel",
        user: ALICE,
        ts: String(poem.event.ts),
        text: "and a poem",
        threadTs: thread,
      }),
    );
    await eventually(
      async () => (await runOfEvent(poem.event_id))?.state === "cancelled",
      WAIT_MS,
      "the poem's run to be cancelled",
    );
    expect(await runOfEvent(poem.event_id)).toMatchObject({ stopReason: "withdrawn" });

    slack.pushEvent(
      slack.events.messageDeleted({
        channel: GENERAL,
        channelType: "channel",
        user: ALICE,
        ts: thread,
        text: `<@${bot}> write a novel`,
      }),
    );
    await eventually(
      async () => (await runOfEvent(novel.appMention.event_id))?.state === "cancelled",
      WAIT_MS,
      "the novel's run to stop",
    );
    expect(llm.requestsContaining("and a poem")).toHaveLength(0);
    await llm.setRules([]);
  }, 30_000);
});

describe("status reactions under a rate limit", () => {
  test("a 429 on a reaction is dropped, not retried, and the reply is not held up", async () => {
    slack.failNext("reactions.add", { kind: "rate_limited", retryAfterSeconds: 30 });
    const { ts } = dm("hello despite limits");
    await waitForBotReply(DM, "echo: hello despite limits");
    // The ✅ comes within the 30 s the 429 asked for: it is dropped as well, and nothing is retried.
    await eventually(
      async () => running!.logs.some((r) => r.event === "reaction.dropped"),
      WAIT_MS,
      "the ✅ to be dropped",
    );
    expect(reactionNames(ts)).toEqual(["+eyes"]);
    expect(slack.reactions(DM, ts)).toEqual([]);
  }, 20_000);
});
