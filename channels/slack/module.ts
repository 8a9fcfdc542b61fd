import { type Env, fail, nonEmpty, parseUrl, parseWithSchema } from "../../src/util/env.ts";
import { parseAccountSettings } from "../account-settings.ts";
import type { ChannelModule } from "../module.ts";
import { configuredAccount, type SlackConfig, slackConfigSchema } from "./config.ts";
import { accountOfSlackKey } from "./keys.ts";

/** Loads Bolt with the adapter, only when a Slack adapter is built. */
const adapterModule = (): typeof import("./adapter.ts") => require("./adapter.ts");

/**
 * The keys one entry of `accounts.slack` may have: SLACK_*'s settings by their schema names.
 * Socket Mode with `appToken`, else HTTP with `signingSecret` at `/slack/events/<name>`; `teamId`
 * and `appId` are required (the account's id before it starts).
 */
const ACCOUNT_KEYS = [
  "botToken",
  "appToken",
  "signingSecret",
  "teamId",
  "appId",
  "apiUrl",
  "requestTimeoutMs",
  "assistantPrompts",
] as const;

/** An HTTP account's Events API route: one per app, so each app's events reach its own adapter. */
export function accountEventsPath(name: string): string {
  return `/slack/events/${name}`;
}

const ACCOUNT_EXAMPLE = (name: string) =>
  `"accounts": {"slack": {"${name}": {"botToken": "\${SLACK_${name.toUpperCase()}_BOT}", "signingSecret": "\${SLACK_${name.toUpperCase()}_SIGNING}", "teamId": "T0123ABCD", "appId": "A0123ABCD"}}}`;

/** Slack from SLACK_*: Socket Mode with an app token, else the HTTP Events API with a signing secret. */
export const slackModule: ChannelModule<SlackConfig> = {
  name: "slack",
  secretVariables: ["SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"],
  accountSecrets: ["botToken", "appToken", "signingSecret"],
  userIds: {
    pattern: /^[A-Za-z0-9_.:@-]{1,64}$/,
    what: "Slack user ids look like U012AB3CD",
    example: "U012AB3CD",
  },
  howToConnect: "SLACK_BOT_TOKEN plus SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP)",
  markup: "slack-mrkdwn",

  fromEnv(env, file) {
    const botToken = nonEmpty(env, "SLACK_BOT_TOKEN");
    if (!botToken) return null;
    const appToken = nonEmpty(env, "SLACK_APP_TOKEN");
    const signingSecret = nonEmpty(env, "SLACK_SIGNING_SECRET");
    if (!appToken && !signingSecret)
      fail(
        "SLACK_APP_TOKEN",
        "or SLACK_SIGNING_SECRET must be set with SLACK_BOT_TOKEN (Socket Mode or HTTP Events API)",
        "SLACK_APP_TOKEN=xapp-1-...",
      );
    const apiUrl = parseUrl(env, "SLACK_API_URL", "http://127.0.0.1:3001/api");
    const teamId = nonEmpty(env, "SLACK_TEAM_ID");
    const appId = nonEmpty(env, "SLACK_APP_ID");
    if ((teamId === undefined) !== (appId === undefined))
      fail(
        teamId === undefined ? "SLACK_TEAM_ID" : "SLACK_APP_ID",
        "must be set with the other of SLACK_TEAM_ID and SLACK_APP_ID (the workspace and app the tokens belong to)",
        "SLACK_TEAM_ID=T0123ABCD SLACK_APP_ID=A0123ABCD",
      );
    const assistantPrompts = readAssistantPrompts(env);
    return parseWithSchema(
      slackConfigSchema,
      {
        botToken,
        allowOtherBots: file.allowBots,
        ...(apiUrl ? { apiUrl } : {}),
        ...(teamId && appId ? { teamId, appId } : {}),
        ...(assistantPrompts === undefined ? {} : { assistantPrompts }),
        ...(appToken ? { mode: "socket", appToken } : { mode: "http", signingSecret }),
      },
      {
        botToken: { variable: "SLACK_BOT_TOKEN", example: "xoxb-..." },
        appToken: { variable: "SLACK_APP_TOKEN", example: "xapp-1-..." },
        signingSecret: { variable: "SLACK_SIGNING_SECRET", example: "(Basic Information → Signing Secret)" },
        apiUrl: { variable: "SLACK_API_URL", example: "http://127.0.0.1:3001/api/" },
        teamId: { variable: "SLACK_TEAM_ID", example: "T0123ABCD" },
        appId: { variable: "SLACK_APP_ID", example: "A0123ABCD" },
        assistantPrompts: { variable: "SLACK_ASSISTANT_PROMPTS", example: PROMPTS_EXAMPLE },
      },
    );
  },

  fromAccount(name, settings, file) {
    const where = `accounts.slack.${name}`;
    if (settings.teamId === undefined || settings.appId === undefined)
      fail(
        "SWITCHBOARD_CONFIG",
        `has ${where} without teamId and appId: a Slack account names its workspace and app, by which its replies are routed`,
        ACCOUNT_EXAMPLE(name),
      );
    if (settings.appToken === undefined && settings.signingSecret === undefined)
      fail(
        "SWITCHBOARD_CONFIG",
        `has ${where} without appToken (Socket Mode) or signingSecret (HTTP Events API at ${accountEventsPath(name)})`,
        ACCOUNT_EXAMPLE(name),
      );
    const mode =
      settings.appToken !== undefined
        ? { mode: "socket" }
        : { mode: "http", eventsPath: accountEventsPath(name) };
    return parseAccountSettings({
      channel: "slack",
      name,
      keys: ACCOUNT_KEYS,
      settings,
      input: { allowOtherBots: file.allowBots, ...settings, ...mode },
      schema: slackConfigSchema,
      example: ACCOUNT_EXAMPLE(name),
    });
  },

  accountIdOf: configuredAccount,
  accountOfKey: accountOfSlackKey,

  create(config, { clock, logger, commands }) {
    return adapterModule().createSlackAdapter(config, {
      clock,
      logger,
      ...(commands ? { commands } : {}),
      onSkip: (skip) => logger.debug("slack.event_skipped", { ...skip }),
    });
  },
};

const PROMPTS_EXAMPLE = `'["What can you do?", {"title": "Summarise", "message": "Summarise this for me"}]'`;

/** SLACK_ASSISTANT_PROMPTS as JSON (the schema checks its shape); undefined when unset. */
function readAssistantPrompts(env: Env): unknown {
  const raw = nonEmpty(env, "SLACK_ASSISTANT_PROMPTS");
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    fail("SLACK_ASSISTANT_PROMPTS", "is not valid JSON", `SLACK_ASSISTANT_PROMPTS=${PROMPTS_EXAMPLE}`);
  }
}
