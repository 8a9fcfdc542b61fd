/**
 * Three Slack apps with static tokens in one gateway, each in its own workspace (its own Slack
 * emulator): the `default` app of SLACK_* over Socket Mode, an account `acme` over the HTTP Events
 * API at `/slack/events/acme`, and an account `beta` over its own Socket Mode connection. Every
 * reply leaves through the app (and workspace) that received its message. Composed in this process.
 */

import { describe, expect, test } from "bun:test";
import { postEvent, type SlackEmulator, startSlackEmulator } from "../emulators/slack/index.ts";
import * as accounts from "./support/accounts.ts";
import { useE2eFixture } from "./support/fixture.ts";

const ACME_SIGNING = "acme-signing-secret-0123456789abcdef";
const ALICE = "U0ALICE";
const fixture = useE2eFixture("switchboard-e2e-accounts-sl-", () =>
  startSlackEmulator({
    botToken: "xoxb-1-home-bot-token",
    appToken: "xapp-1-home-app-token",
    identity: { teamId: "T0HOME", appId: "A0HOMEAPP", botUserId: "U0HOMEBOT", botId: "B0HOMEBOT" },
  }),
);
const { dir, llm, platform: home } = fixture;
const acme = startSlackEmulator({
  botToken: "xoxb-2-acme-bot-token",
  identity: { teamId: "T0ACME", appId: "A0ACMEAPP", botUserId: "U0ACMEBOT", botId: "B0ACMEBOT" },
});
const beta = startSlackEmulator({
  botToken: "xoxb-3-beta-bot-token",
  appToken: "xapp-1-beta-app-token",
  identity: { teamId: "T0BETA", appId: "A0BETAAPP", botUserId: "U0BETABOT", botId: "B0BETABOT" },
});
accounts.closeAfterAll(acme, beta);
const gateways = accounts.oneGatewayAtATime({ serveRoutes: true });

function env(): Record<string, string> {
  const configFile = accounts.writeConfig(dir.path, "slack-accounts.json", "slack", {
    accounts: {
      acme: {
        botToken: "${SLACK_ACME_BOT}",
        signingSecret: "${SLACK_ACME_SIGNING}",
        teamId: "T0ACME",
        appId: "A0ACMEAPP",
        apiUrl: `${acme.url}/api`,
        allowedUsers: "*",
      },
      beta: {
        botToken: "${SLACK_BETA_BOT}",
        appToken: "${SLACK_BETA_APP}",
        teamId: "T0BETA",
        appId: "A0BETAAPP",
        apiUrl: `${beta.url}/api`,
        allowedUsers: [ALICE],
      },
    },
    binding: { account: "acme", instructions: "You are ACME support." },
  });
  return accounts.gatewayEnv(fixture, configFile, {
    SLACK_BOT_TOKEN: home.botToken,
    SLACK_APP_TOKEN: home.appToken,
    SLACK_TEAM_ID: "T0HOME",
    SLACK_APP_ID: "A0HOMEAPP",
    SLACK_API_URL: `${home.url}/api`,
    SLACK_ALLOWED_USERS: ALICE,
    SLACK_ACME_BOT: acme.botToken,
    SLACK_ACME_SIGNING: ACME_SIGNING,
    SLACK_BETA_BOT: beta.botToken,
    SLACK_BETA_APP: beta.appToken,
  });
}

const dmChannel = (user: string) => `D${user.slice(1)}`;
const botTexts = (slack: SlackEmulator, user: string) =>
  slack
    .messages(dmChannel(user))
    .filter((m) => m.user === slack.identity.botUserId)
    .map((m) => m.text);

const reply = (slack: SlackEmulator, user: string, text: string) =>
  accounts.replyThrough(slack, () => botTexts(slack, user), `echo: ${text}`, slack.identity.teamId);

describe("three Slack apps with static tokens in one gateway", () => {
  test("each app receives on its own socket or route and answers only through itself", async () => {
    const gateway = await gateways.start(env());
    // One Socket Mode connection per socket app; none for the HTTP one.
    await home.waitFor(() => home.socketConnections() === 1, 10_000, "the default app's socket");
    await beta.waitFor(() => beta.socketConnections() === 1, 10_000, "the beta app's socket");
    expect(acme.socketConnections()).toBe(0);

    home.pushEvent(home.events.dm({ user: ALICE, text: "hello home" }));
    beta.pushEvent(beta.events.dm({ user: ALICE, text: "hello beta" }));
    // The acme app's events come to its own route, signed with its own secret.
    const signed = await postEvent(
      `${gateway.url}/slack/events/acme`,
      acme.events.dm({ user: "U0CAROL", text: "hello acme" }),
      { signingSecret: ACME_SIGNING, maxRetries: 0 },
    );
    expect(signed.status).toBe(200);
    await reply(home, ALICE, "hello home");
    await reply(beta, ALICE, "hello beta");
    await reply(acme, "U0CAROL", "hello acme");
    expect(botTexts(home, ALICE)).toEqual(["echo: hello home"]);
    expect(botTexts(beta, ALICE)).toEqual(["echo: hello beta"]);
    expect(botTexts(acme, "U0CAROL")).toEqual(["echo: hello acme"]);
    // Each app posted with its own token only.
    expect(acme.calls("chat.postMessage").every((c) => JSON.stringify(c).includes("hello acme"))).toBe(true);
    expect(home.calls("chat.postMessage").some((c) => JSON.stringify(c).includes("hello acme"))).toBe(false);

    // Another account's secret, or the single-app route, is no way in for acme's events.
    const forged = await postEvent(
      `${gateway.url}/slack/events/acme`,
      acme.events.dm({ user: "U0CAROL", text: "forged for acme" }),
      { signingSecret: "some-other-apps-secret", maxRetries: 0 },
    );
    expect(forged.status).toBe(401);
    const plain = await fetch(`${gateway.url}/slack/events`, { method: "POST", body: "{}" });
    expect(plain.status).toBe(404);

    // Carol is on acme's list ("*") only: beta refuses her.
    beta.pushEvent(beta.events.dm({ user: "U0CAROL", text: "carol asks beta" }));
    await accounts.refusedSender(gateway, "beta to refuse carol");
    expect(botTexts(beta, "U0CAROL")).toEqual([]);

    await accounts.expectServing(gateway, "slack", ["acme", "beta"]);
    accounts.expectBoundOnly(llm, "You are ACME support.", "hello acme", "hello beta");
  }, 60_000);
});
