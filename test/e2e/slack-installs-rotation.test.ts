/**
 * A Slack app with token rotation on, installed through the OAuth flow against the emulator: the
 * gateway refreshes the bot token before it expires (oauth.v2.access with the refresh token),
 * stores the new one sealed, and answers with it once the first token no longer works.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { startSlackEmulator } from "../emulators/slack/index.ts";
import { useE2eFixture } from "./support/fixture.ts";
import { eventually, freePort } from "./support/gateway-process.ts";
import { dm, readRows, slackInstallDriver, slackInstallEnv, testSlackApp } from "./support/slack-installs.ts";

const APP_SECRETS = testSlackApp("slack-rotation", "3333.4444");
const TEAM = "T0ROTATE";
const ALICE = "U0ALICE";
const DB_FILE = "rotation.sqlite";
const port = freePort();
// Tokens live 1 hour: inside InstallProvider's 2-hour window, so the gateway refreshes at once.
const fixture = useE2eFixture("switchboard-e2e-slack-rotation-", () =>
  startSlackEmulator({
    oauth: {
      clientId: APP_SECRETS.clientId,
      clientSecret: APP_SECRETS.clientSecret,
      tokenRotationSeconds: 3600,
    },
  }),
);
const { dir, platform: slack } = fixture;
slack.addWorkspace({ teamId: TEAM, appId: "A0SWITCHBD", botUserId: "U0ROTBOT", botId: "B0ROT" });
const running = fixture.gatewayAroundTests(() =>
  slackInstallEnv(fixture, APP_SECRETS, {
    port,
    dbFile: DB_FILE,
    allowed: [ALICE],
    extra: { SWITCHBOARD_SECRET_KEY: "e2e-rotation-secret-key-0123456789abcdef" },
  }),
);
const { install, say, waitForReply } = slackInstallDriver(
  slack,
  () => running.process.url,
  APP_SECRETS.signingSecret,
);

const sealedValue = () =>
  readRows<{ sealed: string }>(join(dir.path, DB_FILE), "SELECT sealed FROM slack_installations")[0]
    ?.sealed ?? null;

test("a rotating token is refreshed and stored, and replies leave with the new one", async () => {
  const done = await install({ "x-emulator-team": TEAM });
  expect(done.status).toBe(200);
  await eventually(
    () => (slack.oauth!.exchanges.some((e) => e.grantType === "refresh_token") ? true : null),
    10_000,
    "the token refresh",
  );
  const [firstToken, refreshedToken] = slack.oauth!.liveTokens(TEAM);
  expect(refreshedToken).toStartWith(`xoxe.xoxb-${TEAM}-`);
  // Sealed at rest: the stored installation holds neither token in the clear.
  const sealed = sealedValue()!;
  expect(sealed).toStartWith("sb1:");
  expect(sealed.includes(firstToken!) || sealed.includes(refreshedToken!)).toBe(false);
  expect(slack.oauth!.exchanges).toEqual([
    { grantType: "authorization_code", teamId: TEAM },
    { grantType: "refresh_token", teamId: TEAM },
  ]);
  // The first token stops working: only the refreshed one can answer.
  slack.oauth!.revoke(firstToken!);
  const sent = await say(TEAM, ALICE, "rotated hello");
  expect(sent.status).toBe(200);
  await waitForReply(dm(ALICE), "echo: rotated hello");
  const posts = slack.calls("chat.postMessage").filter((call) => call.params.channel === dm(ALICE));
  expect(posts.map((call) => [call.ok, call.teamId])).toEqual([[true, TEAM]]);
  expect(running.process.events().some((event) => event.event === "slack.token_refreshed")).toBe(true);
});
