/**
 * A Slack app with token rotation on, installed through the OAuth flow against the emulator: the
 * gateway refreshes the bot token before it expires (oauth.v2.access with the refresh token),
 * stores the new one sealed, and answers with it once the first token no longer works.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { postEvent, type SlackEmulator, startSlackEmulator } from "../emulators/slack/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  eventually,
  freePort,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";

const dir = tempDir("switchboard-e2e-slack-rotation-");
const SIGNING_SECRET = "e2e-slack-rotation-signing-secret-01";
const CLIENT = { clientId: "3333.4444", clientSecret: "e2e-rotation-client-secret" };
const TEAM = "T0ROTATE";
const ALICE = "U0ALICE";
const port = freePort();
let llm: FakeLlmServer;
let slack: SlackEmulator;
let gateway: GatewayProcess;

const sealedValue = () => {
  const db = new Database(join(dir.path, "rotation.sqlite"), { readonly: true });
  try {
    return db.query<{ sealed: string }, []>("SELECT sealed FROM slack_installations").get()?.sealed ?? null;
  } finally {
    db.close();
  }
};

beforeAll(async () => {
  llm = startFakeLlmServer();
  // Tokens live 1 hour: inside InstallProvider's 2-hour window, so the gateway refreshes at once.
  slack = startSlackEmulator({ oauth: { ...CLIENT, tokenRotationSeconds: 3600 } });
  slack.addWorkspace({ teamId: TEAM, appId: "A0SWITCHBD", botUserId: "U0ROTBOT", botId: "B0ROT" });
  gateway = await startGatewayProcess(
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      dbFile: "rotation.sqlite",
      extra: {
        SWITCHBOARD_HTTP_PORT: String(port),
        SLACK_CLIENT_ID: CLIENT.clientId,
        SLACK_CLIENT_SECRET: CLIENT.clientSecret,
        SLACK_STATE_SECRET: "e2e-rotation-state-secret-0123",
        SLACK_SIGNING_SECRET: SIGNING_SECRET,
        SLACK_API_URL: `${slack.url}/api`,
        SLACK_AUTHORIZE_URL: `${slack.url}/oauth/v2/authorize`,
        SLACK_REDIRECT_URI: `http://127.0.0.1:${port}/slack/oauth_redirect`,
        SLACK_ALLOWED_USERS: ALICE,
        SWITCHBOARD_SECRET_KEY: "e2e-rotation-secret-key-0123456789abcdef",
      },
    }),
  );
}, GATEWAY_START_TIMEOUT_MS);

afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await slack.close();
  await llm.stop();
  dir.cleanup();
}, GATEWAY_STOP_TIMEOUT_MS);

test("a rotating token is refreshed and stored, and replies leave with the new one", async () => {
  const page = await fetch(`${gateway.url}/slack/install`);
  const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const authorizeUrl = /href="(http[^"]+)"/.exec(await page.text())![1]!.replaceAll("&amp;", "&");
  const approved = await fetch(authorizeUrl, { headers: { "x-emulator-team": TEAM }, redirect: "manual" });
  const done = await fetch(approved.headers.get("location")!, { headers: { cookie }, redirect: "manual" });
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
  const sent = await postEvent(
    `${gateway.url}/slack/events`,
    slack.workspaceEvents(TEAM).dm({ user: ALICE, text: "rotated hello" }),
    { signingSecret: SIGNING_SECRET, maxRetries: 0 },
  );
  expect(sent.status).toBe(200);
  await slack.waitFor(
    () => slack.messages("D0ALICE").find((m) => m.text.includes("echo: rotated hello")),
    10_000,
    "the reply",
  );
  const posts = slack.calls("chat.postMessage").filter((call) => call.params.channel === "D0ALICE");
  expect(posts.map((call) => [call.ok, call.teamId])).toEqual([[true, TEAM]]);
  expect(gateway.events().some((event) => event.event === "slack.token_refreshed")).toBe(true);
});
