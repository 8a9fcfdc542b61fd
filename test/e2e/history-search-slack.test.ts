/**
 * historyScope "channel" on Slack end to end: a real gateway (Socket Mode against the Slack
 * emulator) and the fake model. In a thread, history_search sees every thread of the same
 * channel, whoever wrote there, and nothing of another channel or of anyone's DM; history_read
 * on a DM's reference is "not found".
 */
import { beforeAll, expect, test } from "bun:test";
import { startSlackEmulator } from "../emulators/slack/index.ts";
import { runCliJson } from "./support/cli.ts";
import { useE2eFixture } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { GATEWAY_START_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-history-slack-", () => startSlackEmulator());
const { dir, llm, platform: slack } = fixture;
const ALICE = "U0ALICE";
const BOB = "U0BOB";
const GENERAL = "C0GENERAL";
const RANDOM = "C0RANDOM";
const TIMEOUT = 20_000;
const env = () =>
  e2eGatewayEnv({
    dir: dir.path,
    llm,
    surfaces: {
      "slack:dm": { inputPolicy: "queue", delivery: "terminal" },
      "slack:thread": { inputPolicy: "queue", delivery: "terminal", historyScope: "channel" },
    },
    extra: {
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_API_URL: `${slack.url}/api`,
      SLACK_APP_TOKEN: slack.appToken,
      SLACK_ALLOWED_USERS: `${ALICE},${BOB}`,
    },
  });

beforeAll(async () => {
  await fixture.startGateway(env(), GATEWAY_START_TIMEOUT_MS);
}, GATEWAY_START_TIMEOUT_MS + 5000);

/** Mentions the bot in `channel` (a new thread on the mention, or in `threadTs`); returns the thread. */
function mention(channel: string, user: string, text: string, threadTs?: string): string {
  const pair = slack.events.channelMention({
    channel,
    user,
    text: `<@${slack.identity.botUserId}> ${text}`,
    ...(threadTs === undefined ? {} : { threadTs }),
  });
  slack.pushEvent(pair.appMention);
  slack.pushEvent(pair.message);
  return threadTs ?? String(pair.appMention.event.ts);
}

const botReply = (channel: string, includes: string) =>
  slack.waitFor(
    () =>
      slack.messages(channel).find((m) => m.user === slack.identity.botUserId && m.text.includes(includes)),
    TIMEOUT,
    `a bot reply containing "${includes}" in ${channel}`,
  );

test("in a thread, history_search sees every thread of the channel, never another channel or a DM, not even by reference", async () => {
  llm.setRules([
    { match: { lastUserContains: "codename is" }, reply: { kind: "text", text: "Noted the codename." } },
    { match: { lastUserContains: "dm password is" }, reply: { kind: "text", text: "Noted the password." } },
  ]);
  mention(GENERAL, BOB, "the release codename is heron");
  await botReply(GENERAL, "Noted the codename.");
  mention(RANDOM, BOB, "the random codename is osprey");
  await botReply(RANDOM, "Noted the codename.");
  slack.pushEvent(slack.events.dm({ user: BOB, text: "my dm password is walrus" }));
  await botReply(`D${BOB.slice(1)}`, "Noted the password.");
  const [dmHit] = await runCliJson<Array<{ ref: string }>>(["search", "walrus"], {
    SWITCHBOARD_DB: env().SWITCHBOARD_DB!,
  });
  expect(dmHit?.ref).toBeDefined();

  llm.reset();
  llm.setRules([
    {
      match: { lastUserContains: "which codename", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "history_search", input: { query: "codename" } },
    },
    {
      match: { lastUserContains: "which password", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "history_search", input: { query: "password walrus" } },
    },
    {
      match: { lastUserContains: "read the dm", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "history_read", input: { ref: dmHit!.ref } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Room sees: {{lastToolResult}}" } },
  ]);
  const thread = mention(GENERAL, ALICE, "which codename did we pick?");
  const found = await botReply(GENERAL, "Room sees:");
  expect(found.text).toContain("heron");
  expect(found.text).not.toContain("osprey");
  mention(GENERAL, ALICE, "which password did bob say?", thread);
  const none = await slack.waitFor(
    () =>
      slack
        .messages(GENERAL)
        .find((m) => m.user === slack.identity.botUserId && m.text.includes('"results":[]')),
    TIMEOUT,
    "the empty search",
  );
  expect(none.text).not.toContain("walrus");
  mention(GENERAL, ALICE, "read the dm please", thread);
  const refused = await botReply(GENERAL, `No message ${dmHit!.ref} was found.`);
  expect(refused.text).not.toContain("walrus");
}, 90_000);
