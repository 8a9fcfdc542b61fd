/**
 * SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_STATE_SECRET: the Slack app installed into many
 * workspaces through OAuth (channels/slack/oauth.ts). Its secrets (and SWITCHBOARD_SECRET_KEY,
 * which seals the installations' tokens) are redacted like every other. Without SLACK_BOT_TOKEN the
 * Slack channel has no `default` account, so SLACK_ALLOWED_USERS is read here for the workspaces.
 */
import {
  SLACK_INSTALL_SECRETS,
  type SlackInstallsConfig,
  slackInstallsFromEnv,
} from "../../../channels/slack/oauth.ts";
import { type Env, nonEmpty } from "../../util/env.ts";
import { SECRET_KEY_VARIABLE } from "../../util/secret-box.ts";
import { allowListVariable, CHANNEL_MODULES } from "../channels.ts";
import { parseAllowList } from "./channels.ts";
import type { SecretCollector } from "./secrets.ts";
import type { GatewayConfig } from "./types.ts";

export function loadSlackInstalls(
  env: Env,
  secrets: SecretCollector,
  allowLists: GatewayConfig["allowLists"],
): SlackInstallsConfig | null {
  for (const variable of [...SLACK_INSTALL_SECRETS, SECRET_KEY_VARIABLE]) secrets.read(variable);
  const installs = slackInstallsFromEnv(env);
  if (installs === null) return null;
  secrets.values.push(installs.signingSecret);
  if (allowLists.slack === undefined) {
    const variable = allowListVariable("slack");
    allowLists.slack = parseAllowList(nonEmpty(env, variable), variable, CHANNEL_MODULES.slack.userIds);
  }
  return installs;
}
