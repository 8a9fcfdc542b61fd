/**
 * One Slack app installed in two workspaces through the real OAuth flow (GET /slack/install →
 * the emulator's authorize page → /slack/oauth_redirect → oauth.v2.access), against a real gateway
 * process on SQLite: events routed by team and answered with that workspace's token, tokens sealed
 * at rest, an uninstall that fails the workspace's queued reply naming it, forged and expired
 * states refused with nothing stored, a restart that keeps the installs, and a wrong key refused.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { startSlackEmulator } from "../emulators/slack/index.ts";
import { useE2eFixture } from "./support/fixture.ts";
import {
  eventually,
  freePort,
  GATEWAY_START_TIMEOUT_MS,
  type GatewayProcess,
} from "./support/gateway-process.ts";
import { dm, readRows, slackInstallDriver, slackInstallEnv, testSlackApp } from "./support/slack-installs.ts";

const APP_SECRETS = testSlackApp("slack-installs", "1111.2222");
const port = freePort();
const ACME = "T0ACME";
const GLOBEX = "T0GLOBEX";
const APP = "A0SWITCHBD";
const ALICE = "U0ALICE";
const BOB = "U0BOB";
const DB_FILE = "installs.sqlite";
const fixture = useE2eFixture("switchboard-e2e-slack-installs-", () =>
  startSlackEmulator({ oauth: { clientId: APP_SECRETS.clientId, clientSecret: APP_SECRETS.clientSecret } }),
);
const { dir, llm, platform: slack, startGateway } = fixture;
const dbPath = join(dir.path, DB_FILE);
let gateway: GatewayProcess;
const driver = slackInstallDriver(slack, () => gateway.url, APP_SECRETS.signingSecret);
const { readiness, whenReady, deliver, say, waitForReply, postsTo } = driver;

function env(extra: Record<string, string> = {}): Record<string, string> {
  return slackInstallEnv(fixture, APP_SECRETS, {
    port,
    dbFile: DB_FILE,
    surfaces: { "slack:dm": { inputPolicy: "queue", delivery: "terminal" } },
    allowed: [ALICE, BOB],
    extra,
  });
}

const install = (team: string) => driver.install({ "x-emulator-team": team });

const rows = () =>
  readRows<{ installation_key: string; sealed: string | null; uninstall_reason: string | null }>(
    dbPath,
    "SELECT installation_key, sealed, uninstall_reason FROM slack_installations ORDER BY installation_key",
  );

const outboxOf = (account: string) =>
  readRows<{ state: string; last_error: string | null; target: string }>(
    dbPath,
    "SELECT state, last_error, target FROM outbox WHERE account = ? ORDER BY created_at_ms",
    account,
  );

/** An OAuth state as InstallProvider's ClearStateStore signs it (HS256 JWT), made `ageMs` ago. */
function signedState(ageMs: number, secret = APP_SECRETS.stateSecret): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const body = `${part({ alg: "HS256", typ: "JWT" })}.${part({
    installOptions: { scopes: ["chat:write"], redirectUri: `http://127.0.0.1:${port}/slack/oauth_redirect` },
    now: new Date(Date.now() - ageMs).toJSON(),
    random: 7,
    iat: Math.floor((Date.now() - ageMs) / 1000),
  })}`;
  return `${body}.${createHmac("sha256", secret).update(body).digest("base64url")}`;
}

beforeAll(async () => {
  slack.addWorkspace({ teamId: ACME, teamName: "Acme", appId: APP, botUserId: "U0ACMEBOT", botId: "B0ACME" });
  slack.addWorkspace({
    teamId: GLOBEX,
    teamName: "Globex",
    appId: APP,
    botUserId: "U0GLOBEXBOT",
    botId: "B0GLOBEX",
  });
  gateway = await startGateway(env());
}, GATEWAY_START_TIMEOUT_MS);

describe("a Slack app installed in two workspaces", () => {
  test("both install through the OAuth flow; each one's events are answered with its own token", async () => {
    for (const team of [ACME, GLOBEX]) {
      const done = await install(team);
      expect(done.status).toBe(200);
      expect(await done.text()).toContain("is installed in");
    }
    expect(slack.oauth!.exchanges).toEqual([
      { grantType: "authorization_code", teamId: ACME },
      { grantType: "authorization_code", teamId: GLOBEX },
    ]);
    const ready = await whenReady([ACME, GLOBEX]);
    expect(ready).not.toBeNull();

    expect((await say(ACME, ALICE, "hello from acme")).status).toBe(200);
    expect((await say(GLOBEX, BOB, "hello from globex")).status).toBe(200);
    await waitForReply(dm(ALICE), "echo: hello from acme");
    await waitForReply(dm(BOB), "echo: hello from globex");
    expect(postsTo(dm(ALICE)).map((call) => call.teamId)).toEqual([ACME]);
    expect(postsTo(dm(BOB)).map((call) => call.teamId)).toEqual([GLOBEX]);
    // A reply shows before its record is marked delivered.
    const states = () => [ACME, GLOBEX].map((team) => outboxOf(`${team}:${APP}`).map((r) => r.state));
    await eventually(
      () => JSON.stringify(states()) === JSON.stringify([["delivered"], ["delivered"]]),
      5_000,
      "both replies recorded delivered",
    );
  });

  test("the tokens are sealed at rest: neither the database nor its WAL holds one, the key is a 0600 file beside it", () => {
    const tokens = [...slack.oauth!.liveTokens(ACME), ...slack.oauth!.liveTokens(GLOBEX)];
    expect(tokens.length).toBe(2);
    const stored = rows();
    expect(stored.map((row) => row.installation_key)).toEqual([ACME, GLOBEX]);
    for (const row of stored) expect(row.sealed).toMatch(/^sb1:[0-9a-f]{8}:/);
    for (const file of [dbPath, `${dbPath}-wal`]) {
      if (!existsSync(file)) continue;
      const bytes = readFileSync(file).toString("latin1");
      for (const token of tokens) expect(bytes.includes(token)).toBe(false);
    }
    expect(statSync(`${dbPath}.key`).mode & 0o777).toBe(0o600);
  });

  test("a forged state, an expired one and one from another browser are refused, and nothing is stored", async () => {
    const before = rows();
    const exchanges = slack.oauth!.exchanges.length;
    const callback = (state: string, cookieState = state) =>
      fetch(`${gateway.url}/slack/oauth_redirect?code=code-whatever&state=${encodeURIComponent(state)}`, {
        headers: { cookie: `slack-app-oauth-state=${cookieState}` },
        redirect: "manual",
      });
    const forged = await callback(signedState(0, "not-the-state-secret-at-all"));
    const expired = await callback(signedState(11 * 60_000));
    const otherBrowser = await callback(signedState(0), signedState(1000));
    for (const refused of [forged, expired, otherBrowser]) {
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain("This install link is not valid any more");
    }
    expect(slack.oauth!.exchanges.length).toBe(exchanges);
    expect(rows()).toEqual(before);
    const refusals = () => gateway.events().filter((event) => event.event === "slack.install_refused");
    await eventually(() => refusals().length >= 3, 5_000, "three slack.install_refused log lines");
    const logged = refusals();
    expect(logged.map((event) => event.code)).toEqual([
      "slack_oauth_invalid_state",
      "slack_oauth_invalid_state",
      "slack_oauth_invalid_state",
    ]);
    expect(JSON.stringify(logged)).not.toContain(APP_SECRETS.clientSecret);
  });

  test("an uninstall removes the workspace's tokens and fails its queued reply naming it; the other workspace goes on", async () => {
    // Globex's next reply meets a 429 and waits 3 s for its retry: it is queued when the app goes.
    slack.failNext("chat.postMessage", { kind: "rate_limited", retryAfterSeconds: 3 });
    await say(GLOBEX, BOB, "queued in globex");
    await eventually(
      async () =>
        outboxOf(`${GLOBEX}:${APP}`).find((r) => r.state === "pending" && r.last_error !== null) ?? null,
      10_000,
      "the Globex reply waiting for its retry",
    );
    const { tokensRevoked, appUninstalled } = slack.uninstallApp(GLOBEX);
    for (const body of [tokensRevoked, appUninstalled]) {
      const answered = await deliver(body);
      expect(answered.status).toBe(200);
    }
    const failed = await eventually(
      async () => outboxOf(`${GLOBEX}:${APP}`).find((r) => r.state === "failed") ?? null,
      10_000,
      "the Globex reply failed",
    );
    expect(failed!.last_error).toContain("the Slack app was uninstalled from workspace T0GLOBEX");
    expect(failed!.last_error).toContain("tokens_revoked");
    expect(postsTo(dm(BOB)).length).toBe(1);
    expect(rows().find((row) => row.installation_key === GLOBEX)).toEqual({
      installation_key: GLOBEX,
      sealed: null,
      uninstall_reason: "tokens_revoked",
    });
    expect(Object.keys(await readiness())).not.toContain(`channel:slack:${GLOBEX}`);
    // History stays until purged.
    const [keys] = readRows<{ n: number }>(
      dbPath,
      "SELECT count(*) AS n FROM conversation_keys WHERE key LIKE ?",
      `sl:${GLOBEX}:%`,
    );
    expect(keys!.n).toBeGreaterThan(0);
    // Another Globex event finds no installation and is answered 200 without a run.
    expect((await say(GLOBEX, BOB, "after the uninstall")).status).toBe(200);
    expect(llm.requestsContaining("after the uninstall").length).toBe(0);

    expect((await say(ACME, ALICE, "acme still here")).status).toBe(200);
    await waitForReply(dm(ALICE), "echo: acme still here");
    expect(postsTo(dm(ALICE)).every((call) => call.teamId === ACME)).toBe(true);
  });

  test("after a restart the installation is read back from the database and answers", async () => {
    await gateway.kill("SIGTERM");
    gateway = await startGateway(env());
    expect((await say(ACME, ALICE, "after the restart")).status).toBe(200);
    await waitForReply(dm(ALICE), "echo: after the restart");
    expect(postsTo(dm(ALICE)).at(-1)!.teamId).toBe(ACME);
  }, 30_000);

  test("a key that is not the one the tokens were sealed with stops the start, naming SWITCHBOARD_SECRET_KEY", async () => {
    await gateway.kill("SIGTERM");
    const wrong = await startGateway(
      env({ SWITCHBOARD_SECRET_KEY: "a-different-key-0123456789abcdef0123456789" }),
    ).catch((error: Error) => error);
    expect(wrong).toBeInstanceOf(Error);
    expect((wrong as Error).message).toContain("SWITCHBOARD_SECRET_KEY");
    expect((wrong as Error).message).toContain("was sealed with key");
    expect((wrong as Error).message).toContain("gateway exited with 78");
    gateway = await startGateway(env());
  }, 40_000);
});
