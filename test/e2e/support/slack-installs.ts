/**
 * What the Slack install end-to-end tests share: a gateway that installs the app through the
 * OAuth flow against the Slack emulator, the installer's browser walking that flow, signed events
 * into the gateway, the replies they bring, and readonly reads of the gateway's SQLite file.
 */
import { Database, type SQLQueryBindings } from "bun:sqlite";
import { expect } from "bun:test";
import { type ApiCallRecord, postEvent, type SlackEmulator } from "../../emulators/slack/index.ts";
import type { E2eFixture, PlatformEnvOptions } from "./fixture.ts";
import { e2eGatewayEnv } from "./gateway-env.ts";
import { eventually } from "./gateway-process.ts";

/** The Slack app as the gateway knows it: the emulator is started with the same client id and secret. */
export interface SlackAppSecrets {
  clientId: string;
  clientSecret: string;
  stateSecret: string;
  signingSecret: string;
}

/** Made-up secrets of the app for one test file, each naming `label`. */
export function testSlackApp(label: string, clientId: string): SlackAppSecrets {
  return {
    clientId,
    clientSecret: `e2e-${label}-client-secret`,
    stateSecret: `e2e-${label}-state-secret-0123`,
    signingSecret: `e2e-${label}-signing-secret-0123`,
  };
}

/**
 * A gateway environment that installs `app` through the OAuth flow against the fixture's Slack
 * emulator, listening on `port` (the redirect URI names it, so it is chosen before the start).
 */
export function slackInstallEnv(
  fixture: E2eFixture<SlackEmulator>,
  app: SlackAppSecrets,
  options: Omit<PlatformEnvOptions, "configFile"> & { port: number },
): Record<string, string> {
  const slack = fixture.platform;
  return e2eGatewayEnv({
    dir: fixture.dir.path,
    llm: fixture.llm,
    ...(options.surfaces ? { surfaces: options.surfaces } : {}),
    ...(options.dbFile ? { dbFile: options.dbFile } : {}),
    extra: {
      SWITCHBOARD_HTTP_PORT: String(options.port),
      SLACK_CLIENT_ID: app.clientId,
      SLACK_CLIENT_SECRET: app.clientSecret,
      SLACK_STATE_SECRET: app.stateSecret,
      SLACK_SIGNING_SECRET: app.signingSecret,
      SLACK_API_URL: `${slack.url}/api`,
      SLACK_AUTHORIZE_URL: `${slack.url}/oauth/v2/authorize`,
      SLACK_REDIRECT_URI: `http://127.0.0.1:${options.port}/slack/oauth_redirect`,
      SLACK_ALLOWED_USERS: options.allowed.join(","),
      ...options.extra,
    },
  });
}

/**
 * The installer's browser: the gateway's install page (state cookie), the emulator's authorize
 * page approved as whoever `signedInto` names (`x-emulator-team` or `x-emulator-enterprise`), and
 * the redirect back to the gateway, whose answer it returns.
 */
export async function installThroughBrowser(
  gatewayUrl: string,
  signedInto: Record<string, string>,
): Promise<Response> {
  const page = await fetch(`${gatewayUrl}/slack/install`);
  expect(page.status).toBe(200);
  const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const authorizeUrl = /href="(http[^"]+)"/.exec(await page.text())![1]!.replaceAll("&amp;", "&");
  const approved = await fetch(authorizeUrl, { headers: signedInto, redirect: "manual" });
  expect(approved.status).toBe(302);
  return fetch(approved.headers.get("location")!, { headers: { cookie }, redirect: "manual" });
}

/** The rows `sql` selects from the SQLite file `dbPath`, opened readonly while the gateway runs. */
export function readRows<Row>(dbPath: string, sql: string, ...params: SQLQueryBindings[]): Row[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.query<Row, SQLQueryBindings[]>(sql).all(...params);
  } finally {
    db.close();
  }
}

/** The checks of the gateway's /readyz, by name (`channel:slack:<installation>`…). */
export async function readinessChecks(gatewayUrl: string): Promise<Record<string, { ok: boolean }>> {
  const body = (await (await fetch(`${gatewayUrl}/readyz`)).json()) as {
    checks: Record<string, { ok: boolean }>;
  };
  return body.checks;
}

/** The emulator's id of the DM channel between the bot and `user` (U0ALICE → D0ALICE). */
export const dm = (user: string) => `D${user.slice(1)}`;

/**
 * The gateway at `gatewayUrl()` (read at each call: a restart changes it) as Slack and the
 * installer reach it: installs, events signed with `signingSecret` and not retried, its
 * readiness, and the replies it posts into the emulator.
 */
export function slackInstallDriver(slack: SlackEmulator, gatewayUrl: () => string, signingSecret: string) {
  /** Delivers an Events API body as Slack does. */
  const deliver = (body: unknown) =>
    postEvent(`${gatewayUrl()}/slack/events`, body, { signingSecret, maxRetries: 0 });
  return {
    /** See installThroughBrowser. */
    install: (signedInto: Record<string, string>) => installThroughBrowser(gatewayUrl(), signedInto),
    readiness: () => readinessChecks(gatewayUrl()),
    /** Waits until /readyz reports the adapter of each of `installations` ok; resolves with the checks. */
    whenReady: (installations: string[]) =>
      eventually(
        async () => {
          const checks = await readinessChecks(gatewayUrl());
          return installations.every((id) => checks[`channel:slack:${id}`]?.ok) ? checks : null;
        },
        10_000,
        `the Slack adapters of ${installations.join(" and ")} ready`,
      ),
    deliver,
    /** `user` writes `text` to the bot in a DM in workspace `team`. */
    say: (team: string, user: string, text: string) =>
      deliver(slack.workspaceEvents(team).dm({ user, text })),
    /** Waits for a message in `channel` containing `text`. */
    waitForReply: (channel: string, text: string) =>
      slack.waitFor(
        () => slack.messages(channel).find((m) => m.text.includes(text)),
        10_000,
        `a reply containing "${text}" in ${channel}`,
      ),
    /** The chat.postMessage calls into `channel` that succeeded (each names the installation whose token it used). */
    postsTo: (channel: string): ApiCallRecord[] =>
      slack.calls("chat.postMessage").filter((call) => call.params.channel === channel && call.ok),
  };
}
