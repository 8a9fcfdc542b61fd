/**
 * One Slack app installed in two workspaces through the real OAuth flow (GET /slack/install →
 * the emulator's authorize page → /slack/oauth_redirect → oauth.v2.access), against a real gateway
 * process on SQLite: events routed by team and answered with that workspace's token, tokens sealed
 * at rest, an uninstall that fails the workspace's queued reply naming it, forged and expired
 * states refused with nothing stored, a restart that keeps the installs, and a wrong key refused.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
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

const dir = tempDir("switchboard-e2e-slack-installs-");
const SIGNING_SECRET = "e2e-slack-installs-signing-secret-0123";
const STATE_SECRET = "e2e-slack-installs-state-secret-0123";
const CLIENT_ID = "1111.2222";
const CLIENT_SECRET = "e2e-client-secret-abcdef";
const ACME = "T0ACME";
const GLOBEX = "T0GLOBEX";
const APP = "A0SWITCHBD";
const ALICE = "U0ALICE";
const BOB = "U0BOB";
const DB_FILE = "installs.sqlite";
const dbPath = join(dir.path, DB_FILE);
let llm: FakeLlmServer;
let slack: SlackEmulator;
let gateway: GatewayProcess;
const port = freePort();

function env(extra: Record<string, string> = {}): Record<string, string> {
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    dbFile: DB_FILE,
    surfaces: { "slack:dm": { inputPolicy: "queue", delivery: "terminal" } },
    extra: {
      SWITCHBOARD_HTTP_PORT: String(port),
      SLACK_CLIENT_ID: CLIENT_ID,
      SLACK_CLIENT_SECRET: CLIENT_SECRET,
      SLACK_STATE_SECRET: STATE_SECRET,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: `${slack.url}/api`,
      SLACK_AUTHORIZE_URL: `${slack.url}/oauth/v2/authorize`,
      SLACK_REDIRECT_URI: `http://127.0.0.1:${port}/slack/oauth_redirect`,
      SLACK_ALLOWED_USERS: `${ALICE},${BOB}`,
      ...extra,
    },
  });
}

/** The installer's browser: the install page (state cookie), Slack's authorize page, the redirect back. */
async function install(team: string): Promise<Response> {
  const page = await fetch(`${gateway.url}/slack/install`);
  expect(page.status).toBe(200);
  const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const authorizeUrl = /href="(http[^"]+)"/.exec(await page.text())![1]!.replaceAll("&amp;", "&");
  const approved = await fetch(authorizeUrl, { headers: { "x-emulator-team": team }, redirect: "manual" });
  expect(approved.status).toBe(302);
  return fetch(approved.headers.get("location")!, { headers: { cookie }, redirect: "manual" });
}

const rows = () => {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db
      .query<{ installation_key: string; sealed: string | null; uninstall_reason: string | null }, []>(
        "SELECT installation_key, sealed, uninstall_reason FROM slack_installations ORDER BY installation_key",
      )
      .all();
  } finally {
    db.close();
  }
};

const outboxOf = (account: string) => {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db
      .query<{ state: string; last_error: string | null; target: string }, [string]>(
        "SELECT state, last_error, target FROM outbox WHERE account = ? ORDER BY created_at_ms",
      )
      .all(account);
  } finally {
    db.close();
  }
};

const dm = (user: string) => `D${user.slice(1)}`;
const postsTo = (channel: string) =>
  slack.calls("chat.postMessage").filter((call) => call.params.channel === channel && call.ok);

async function say(team: string, user: string, text: string) {
  const result = await postEvent(
    `${gateway.url}/slack/events`,
    slack.workspaceEvents(team).dm({ user, text }),
    {
      signingSecret: SIGNING_SECRET,
      maxRetries: 0,
    },
  );
  return result;
}

function waitForReply(channel: string, text: string) {
  return slack.waitFor(
    () => slack.messages(channel).find((m) => m.text.includes(text)),
    10_000,
    `a reply containing "${text}" in ${channel}`,
  );
}

/** An OAuth state as InstallProvider's ClearStateStore signs it (HS256 JWT), made `ageMs` ago. */
function signedState(ageMs: number, secret = STATE_SECRET): string {
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
  llm = startFakeLlmServer();
  slack = startSlackEmulator({ oauth: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } });
  slack.addWorkspace({ teamId: ACME, teamName: "Acme", appId: APP, botUserId: "U0ACMEBOT", botId: "B0ACME" });
  slack.addWorkspace({
    teamId: GLOBEX,
    teamName: "Globex",
    appId: APP,
    botUserId: "U0GLOBEXBOT",
    botId: "B0GLOBEX",
  });
  gateway = await startGatewayProcess(env());
}, GATEWAY_START_TIMEOUT_MS);

afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await slack.close();
  await llm.stop();
  dir.cleanup();
}, GATEWAY_STOP_TIMEOUT_MS);

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
    const ready = await eventually(
      async () => {
        const body = (await (await fetch(`${gateway.url}/readyz`)).json()) as {
          checks: Record<string, { ok: boolean }>;
        };
        return body.checks[`channel:slack:${ACME}`]?.ok && body.checks[`channel:slack:${GLOBEX}`]?.ok
          ? body
          : null;
      },
      10_000,
      "both workspaces ready",
    );
    expect(ready).not.toBeNull();

    expect((await say(ACME, ALICE, "hello from acme")).status).toBe(200);
    expect((await say(GLOBEX, BOB, "hello from globex")).status).toBe(200);
    await waitForReply(dm(ALICE), "echo: hello from acme");
    await waitForReply(dm(BOB), "echo: hello from globex");
    expect(postsTo(dm(ALICE)).map((call) => call.teamId)).toEqual([ACME]);
    expect(postsTo(dm(BOB)).map((call) => call.teamId)).toEqual([GLOBEX]);
    expect(outboxOf(`${ACME}:${APP}`).map((r) => r.state)).toEqual(["delivered"]);
    expect(outboxOf(`${GLOBEX}:${APP}`).map((r) => r.state)).toEqual(["delivered"]);
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
    const logged = gateway.events().filter((event) => event.event === "slack.install_refused");
    expect(logged.map((event) => event.code)).toEqual([
      "slack_oauth_invalid_state",
      "slack_oauth_invalid_state",
      "slack_oauth_invalid_state",
    ]);
    expect(JSON.stringify(logged)).not.toContain(CLIENT_SECRET);
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
      const answered = await postEvent(`${gateway.url}/slack/events`, body, {
        signingSecret: SIGNING_SECRET,
        maxRetries: 0,
      });
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
    const body = (await (await fetch(`${gateway.url}/readyz`)).json()) as { checks: Record<string, unknown> };
    expect(Object.keys(body.checks)).not.toContain(`channel:slack:${GLOBEX}`);
    // History stays until purged.
    const db = new Database(dbPath, { readonly: true });
    const keys = db
      .query<{ n: number }, [string]>("SELECT count(*) AS n FROM conversation_keys WHERE key LIKE ?")
      .get(`sl:${GLOBEX}:%`)!;
    db.close();
    expect(keys.n).toBeGreaterThan(0);
    // Another Globex event finds no installation and is answered 200 without a run.
    expect((await say(GLOBEX, BOB, "after the uninstall")).status).toBe(200);
    expect(llm.requestsContaining("after the uninstall").length).toBe(0);

    expect((await say(ACME, ALICE, "acme still here")).status).toBe(200);
    await waitForReply(dm(ALICE), "echo: acme still here");
    expect(postsTo(dm(ALICE)).every((call) => call.teamId === ACME)).toBe(true);
  });

  test("after a restart the installation is read back from the database and answers", async () => {
    await gateway.kill("SIGTERM");
    gateway = await startGatewayProcess(env());
    expect((await say(ACME, ALICE, "after the restart")).status).toBe(200);
    await waitForReply(dm(ALICE), "echo: after the restart");
    expect(postsTo(dm(ALICE)).at(-1)!.teamId).toBe(ACME);
  }, 30_000);

  test("a key that is not the one the tokens were sealed with stops the start, naming SWITCHBOARD_SECRET_KEY", async () => {
    await gateway.kill("SIGTERM");
    const wrong = await startGatewayProcess(
      env({ SWITCHBOARD_SECRET_KEY: "a-different-key-0123456789abcdef0123456789" }),
    ).catch((error: Error) => error);
    expect(wrong).toBeInstanceOf(Error);
    expect((wrong as Error).message).toContain("SWITCHBOARD_SECRET_KEY");
    expect((wrong as Error).message).toContain("was sealed with key");
    expect((wrong as Error).message).toContain("gateway exited with 78");
    gateway = await startGatewayProcess(env());
  }, 40_000);
});
