/**
 * The gateway's configuration: the environment and the SWITCHBOARD_CONFIG file, read and validated
 * once, at startup. Each area reads its own variables in its own file; `loadConfig` composes them.
 */

import { otlpHeaderValues } from "../../telemetry/config.ts";
import type { Env } from "../../util/env.ts";
import { nonEmpty, onOff } from "../../util/env.ts";
import { PLATFORM_CHANNELS } from "../channels.ts";
import { accountNamesInFile, accountNamesOf, defaultAccount, loadAccounts } from "./accounts.ts";
import { loadInstructions, parseAgentDirs } from "./agent.ts";
import { parseAppTokens } from "./app-tokens.ts";
import { checkBindings } from "./bindings.ts";
import { loadChannels } from "./channels.ts";
import { parseDatabase } from "./database.ts";
import { readFileConfig } from "./file.ts";
import { parseHost, parsePort, parsePublicUrl } from "./http.ts";
import { parseLogFormat, parseLogLevel } from "./logging.ts";
import { parseMedia } from "./media.ts";
import { modelEnvOf } from "./models.ts";
import { collectSecrets } from "./secrets.ts";
import { loadSlackInstalls } from "./slack-installs.ts";
import { parseAmbiguousHoldMs, parseShutdownGraceMs, parseTimezone } from "./time.ts";
import { parseLongSecret, parseOperatorAccess } from "./tokens.ts";
import { parseWebFetch, parseWebSearch, referencedVariables } from "./tools.ts";
import type { GatewayConfig } from "./types.ts";
import { parseWebChat } from "./web.ts";

export { accountNamesInFile, defaultAccount } from "./accounts.ts";
export type { AccountNames } from "./accounts-schema.ts";
export { agentDirsOf } from "./agent.ts";
export { type BindingFacts, DEFAULT_ACCOUNT } from "./bindings.ts";
export {
  type ConversationSettings,
  conversationSettings,
  explainSettings,
  modelNamesOf,
  SETTING_NAMES,
  type SettingsExplanation,
} from "./conversation-settings.ts";
export { type FileConfig, loadFileConfig } from "./file.ts";
export { defaultModelName, pickableModels } from "./models.ts";
export { redactSecrets } from "./secrets.ts";
export { DEFAULT_SURFACES, type SurfacePolicy, surfacePolicy } from "./surfaces.ts";
export type { AllowList, ChannelAccount, GatewayConfig, MediaConfig, WebChatConfig } from "./types.ts";
export { webAccessFor } from "./web.ts";

/**
 * Reads and validates every setting once, at startup. A missing or invalid setting throws
 * `config_invalid` naming the variable, what is wrong and an example.
 */
export function loadConfig(env: Env): GatewayConfig {
  const port = parsePort(env);
  const logLevel = parseLogLevel(env);
  const logFormat = parseLogFormat(env);
  const shutdownGraceMs = parseShutdownGraceMs(env);
  const ambiguousHoldMs = parseAmbiguousHoldMs(env);
  const { operatorToken, operatorTokens } = parseOperatorAccess(env);
  const appTokens = parseAppTokens(env, { operatorToken, operatorTokens });
  const openaiCompat = onOff(env, "SWITCHBOARD_OPENAI_COMPAT", false);
  const idleCollection = onOff(env, "SWITCHBOARD_IDLE_GC", true);
  const { file, baseDir } = readFileConfig(nonEmpty(env, "SWITCHBOARD_CONFIG"));
  const agentDir = parseAgentDirs(env, file, baseDir);
  const { instructions, instructionsSource } = loadInstructions(env, file, baseDir);

  const secrets = collectSecrets(env);
  const database = parseDatabase(env, secrets.values);
  const { channels, allowLists } = loadChannels(env, file, secrets);
  const slackInstalls = loadSlackInstalls(env, secrets, allowLists);
  const defaults = PLATFORM_CHANNELS.flatMap((name) =>
    channels[name] === undefined ? [] : [defaultAccount(name, channels[name], allowLists[name]!)],
  );
  const accounts = loadAccounts(env, file, secrets, defaults);
  checkBindings(
    file.bindings,
    accountNamesInFile(file),
    appTokens.map((app) => app.name),
  );
  file.accountNames = accountNamesOf([...defaults, ...accounts]);
  for (const name of ["OPENROUTER_API_KEY", "OPENAI_COMPATIBLE_API_KEY"]) secrets.read(name);
  if (operatorToken) secrets.values.push(operatorToken);
  for (const { token } of operatorTokens) secrets.values.push(token);
  for (const { token } of appTokens) secrets.values.push(token);
  secrets.values.push(...otlpHeaderValues(env));
  const metricsToken = parseLongSecret(
    secrets,
    "SWITCHBOARD_METRICS_TOKEN",
    "SWITCHBOARD_METRICS_TOKEN=$(openssl rand -hex 24)",
  );
  const approvalSecret = parseLongSecret(
    secrets,
    "SWITCHBOARD_APPROVAL_SECRET",
    "SWITCHBOARD_APPROVAL_SECRET=$(openssl rand -hex 32)",
  );

  const host = parseHost(env);
  const publicUrl = parsePublicUrl(env);
  const web = parseWebChat(env, host, publicUrl, secrets.read("SWITCHBOARD_WEB_TOKEN") ?? null);
  const timezone = parseTimezone(env);
  const mcpEnv = referencedVariables(file, env, secrets.values);
  const media = parseMedia(env);
  const webFetch = parseWebFetch(env);
  const webSearch = parseWebSearch(env, secrets.read("SWITCHBOARD_BRAVE_API_KEY"));

  return {
    database,
    http: { host, port, publicUrl },
    logLevel,
    logFormat,
    operatorToken,
    operatorTokens,
    appTokens,
    openaiCompat,
    timezone,
    instructions,
    instructionsSource,
    agentDir,
    shutdownGraceMs,
    idleCollection,
    ambiguousHoldMs,
    file,
    channels,
    allowLists,
    accounts,
    slackInstalls,
    web,
    secrets: secrets.values,
    mcpEnv,
    media,
    approvalSecret,
    metricsToken,
    webFetch,
    webSearch,
    modelEnv: modelEnvOf(env),
  };
}
