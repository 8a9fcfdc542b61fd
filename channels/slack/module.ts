import { type Env, fail, nonEmpty, parseUrl, parseWithSchema } from "../../src/util/env.ts";
import type { ChannelModule } from "../module.ts";
import { type SlackConfig, slackConfigSchema } from "./config.ts";

/** Loads Bolt with the adapter, only when a Slack adapter is built. */
const adapterModule = (): typeof import("./adapter.ts") => require("./adapter.ts");

/** Slack from SLACK_*: Socket Mode with an app token, else the HTTP Events API with a signing secret. */
export const slackModule: ChannelModule<SlackConfig> = {
  name: "slack",
  secretVariables: ["SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"],
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
    const assistantPrompts = readAssistantPrompts(env);
    return parseWithSchema(
      slackConfigSchema,
      {
        botToken,
        allowOtherBots: file.allowBots,
        ...(apiUrl ? { apiUrl } : {}),
        ...(assistantPrompts === undefined ? {} : { assistantPrompts }),
        ...(appToken ? { mode: "socket", appToken } : { mode: "http", signingSecret }),
      },
      {
        botToken: { variable: "SLACK_BOT_TOKEN", example: "xoxb-..." },
        appToken: { variable: "SLACK_APP_TOKEN", example: "xapp-1-..." },
        signingSecret: { variable: "SLACK_SIGNING_SECRET", example: "(Basic Information → Signing Secret)" },
        apiUrl: { variable: "SLACK_API_URL", example: "http://127.0.0.1:3001/api/" },
        assistantPrompts: { variable: "SLACK_ASSISTANT_PROMPTS", example: PROMPTS_EXAMPLE },
      },
    );
  },

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
