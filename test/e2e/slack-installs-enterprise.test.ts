/**
 * The Slack app installed org-wide in an Enterprise Grid org and in one plain workspace, both
 * through the real OAuth flow against a real gateway process on SQLite: the org's installation is
 * keyed by the org, events from its member workspaces (whose team ids are not the org's) are
 * answered with the org's token, the plain workspace with its own, and an uninstall of the org
 * removes its installation while the plain workspace goes on.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { startSlackEmulator } from "../emulators/slack/index.ts";
import { useE2eFixture } from "./support/fixture.ts";
import { eventually, freePort } from "./support/gateway-process.ts";
import { dm, readRows, slackInstallDriver, slackInstallEnv, testSlackApp } from "./support/slack-installs.ts";

const APP_SECRETS = testSlackApp("slack-enterprise", "5555.6666");
const ORG = "E0INITECH";
const NEW_YORK = "T0INITECHNY";
const AUSTIN = "T0INITECHAUS";
const ACME = "T0ACME";
const APP = "A0SWITCHBD";
const CAROL = "W0CAROL";
const DAVE = "W0DAVE";
const ALICE = "U0ALICE";
const DB_FILE = "enterprise.sqlite";
const port = freePort();
const fixture = useE2eFixture("switchboard-e2e-slack-enterprise-", () =>
  startSlackEmulator({ oauth: { clientId: APP_SECRETS.clientId, clientSecret: APP_SECRETS.clientSecret } }),
);
const { dir, llm, platform: slack } = fixture;
const dbPath = join(dir.path, DB_FILE);
slack.addEnterprise({
  enterpriseId: ORG,
  enterpriseName: "Initech",
  appId: APP,
  botUserId: "W0INITECHBOT",
  botId: "B0INITECH",
});
slack.addWorkspace({ teamId: NEW_YORK, teamName: "Initech NY", enterpriseId: ORG, appId: APP });
slack.addWorkspace({ teamId: AUSTIN, teamName: "Initech Austin", enterpriseId: ORG, appId: APP });
slack.addWorkspace({ teamId: ACME, teamName: "Acme", appId: APP, botUserId: "U0ACMEBOT", botId: "B0ACME" });
const gateway = fixture.gatewayAroundTests(() =>
  slackInstallEnv(fixture, APP_SECRETS, {
    port,
    dbFile: DB_FILE,
    surfaces: { "slack:dm": { inputPolicy: "queue", delivery: "terminal" } },
    allowed: [CAROL, DAVE, ALICE],
  }),
);
const { install, readiness, whenReady, deliver, say, waitForReply, postsTo } = slackInstallDriver(
  slack,
  () => gateway.process.url,
  APP_SECRETS.signingSecret,
);

const rows = () =>
  readRows<{
    installation_key: string;
    team_id: string | null;
    enterprise_id: string | null;
    account: string;
    sealed: string | null;
    uninstall_reason: string | null;
  }>(
    dbPath,
    "SELECT installation_key, team_id, enterprise_id, account, sealed, uninstall_reason FROM slack_installations ORDER BY installation_key",
  );

const outboxStates = (account: string) =>
  readRows<{ state: string }>(
    dbPath,
    "SELECT state FROM outbox WHERE account = ? ORDER BY created_at_ms",
    account,
  ).map((row) => row.state);

/** Who posted into `channel`: the installation whose token the emulator saw on each chat.postMessage. */
const postersIn = (channel: string) => postsTo(channel).map((call) => call.teamId);

describe("a Slack app installed org-wide in an Enterprise Grid org and in a plain workspace", () => {
  test("both install through the OAuth flow; the org's installation is keyed by the org", async () => {
    const org = await install({ "x-emulator-enterprise": ORG });
    expect(org.status).toBe(200);
    expect(await org.text()).toContain("is installed in Initech");
    const acme = await install({ "x-emulator-team": ACME });
    expect(acme.status).toBe(200);
    expect(slack.oauth!.exchanges).toEqual([
      { grantType: "authorization_code", teamId: ORG },
      { grantType: "authorization_code", teamId: ACME },
    ]);
    expect(rows().map(({ sealed: _sealed, ...row }) => row)).toEqual([
      {
        installation_key: ORG,
        team_id: null,
        enterprise_id: ORG,
        account: `${ORG}:${APP}`,
        uninstall_reason: null,
      },
      {
        installation_key: ACME,
        team_id: ACME,
        enterprise_id: null,
        account: `${ACME}:${APP}`,
        uninstall_reason: null,
      },
    ]);
    // One adapter for the whole org, none per member workspace.
    const checks = await whenReady([ORG, ACME]);
    expect(Object.keys(checks).filter((name) => name.startsWith("channel:slack:"))).toEqual(
      expect.arrayContaining([`channel:slack:${ORG}`, `channel:slack:${ACME}`]),
    );
    expect(Object.keys(checks)).not.toContain(`channel:slack:${NEW_YORK}`);
  });

  test("DMs from the org's member workspaces are answered with the org's token, Acme's with its own", async () => {
    const fromNewYork = slack.workspaceEvents(NEW_YORK).dm({ user: CAROL, text: "hello from new york" });
    expect(fromNewYork.team_id).toBe(NEW_YORK);
    expect(fromNewYork.enterprise_id).toBe(ORG);
    expect(fromNewYork.is_enterprise_install).toBe(true);
    expect(fromNewYork.authorizations[0]).toMatchObject({ enterprise_id: ORG, is_enterprise_install: true });
    expect((await deliver(fromNewYork)).status).toBe(200);
    expect((await say(AUSTIN, DAVE, "hello from austin")).status).toBe(200);
    expect((await say(ACME, ALICE, "hello from acme")).status).toBe(200);
    await waitForReply(dm(CAROL), "echo: hello from new york");
    await waitForReply(dm(DAVE), "echo: hello from austin");
    await waitForReply(dm(ALICE), "echo: hello from acme");
    expect(postersIn(dm(CAROL))).toEqual([ORG]);
    expect(postersIn(dm(DAVE))).toEqual([ORG]);
    expect(postersIn(dm(ALICE))).toEqual([ACME]);
    // A reply shows before its record is marked delivered.
    const states = () => JSON.stringify([outboxStates(`${ORG}:${APP}`), outboxStates(`${ACME}:${APP}`)]);
    await eventually(
      () => states() === JSON.stringify([["delivered", "delivered"], ["delivered"]]),
      5_000,
      "the replies recorded delivered",
    );
  });

  test("an event shaped like Slack's documented sample (the org-wide flag only in authorizations) reaches the org", async () => {
    const { is_enterprise_install: _flag, ...documented } = slack
      .workspaceEvents(NEW_YORK)
      .dm({ user: CAROL, text: "flag only in authorizations" });
    expect((await deliver(documented)).status).toBe(200);
    await waitForReply(dm(CAROL), "echo: flag only in authorizations");
    expect(postersIn(dm(CAROL))).toEqual([ORG, ORG]);
  });

  test("uninstalling the org removes its installation and its adapter; Acme goes on", async () => {
    const { tokensRevoked, appUninstalled } = slack.uninstallApp(ORG);
    expect(appUninstalled.team_id).toBeNull();
    expect(appUninstalled.enterprise_id).toBe(ORG);
    for (const body of [tokensRevoked, appUninstalled]) expect((await deliver(body)).status).toBe(200);
    expect(rows().find((row) => row.installation_key === ORG)).toMatchObject({
      sealed: null,
      uninstall_reason: "tokens_revoked",
    });
    expect(slack.oauth!.liveTokens(ORG)).toEqual([]);
    await eventually(
      async () => ((await readiness())[`channel:slack:${ORG}`] === undefined ? true : null),
      10_000,
      "the org's adapter gone",
    );
    // A member workspace's event finds no installation: answered 200, no run.
    expect((await say(NEW_YORK, CAROL, "new york after the uninstall")).status).toBe(200);
    expect((await say(ACME, ALICE, "acme after the uninstall")).status).toBe(200);
    await waitForReply(dm(ALICE), "echo: acme after the uninstall");
    expect(llm.requestsContaining("new york after the uninstall").length).toBe(0);
    expect(postersIn(dm(ALICE))).toEqual([ACME, ACME]);
    expect(postersIn(dm(CAROL))).toEqual([ORG, ORG]);
    expect(rows().find((row) => row.installation_key === ACME)?.sealed).toMatch(/^sb1:/);
  });
});
