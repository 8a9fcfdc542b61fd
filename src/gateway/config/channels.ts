/** The platform channels configured from the environment, and who may talk to the bot on each. */
import type { ChannelModule } from "../../../channels/module.ts";
import { type Env, fail, nonEmpty } from "../../util/env.ts";
import { allowListVariable, CHANNEL_MODULES, PLATFORM_CHANNELS } from "../channels.ts";
import type { FileConfig } from "./file.ts";
import type { SecretCollector } from "./secrets.ts";
import type { AllowList, GatewayConfig } from "./types.ts";

/**
 * Each registered channel's settings from its module's `fromEnv` (its secret variables kept as
 * secrets first); a configured channel also gets its `<PLATFORM>_ALLOWED_USERS`.
 */
export function loadChannels(
  env: Env,
  file: FileConfig,
  secrets: SecretCollector,
): Pick<GatewayConfig, "channels" | "allowLists"> {
  const channels: GatewayConfig["channels"] = {};
  const allowLists: GatewayConfig["allowLists"] = {};
  for (const name of PLATFORM_CHANNELS) {
    const channelModule = CHANNEL_MODULES[name];
    for (const variable of channelModule.secretVariables) secrets.read(variable);
    const settings = channelModule.fromEnv(env, { section: file[name] ?? {}, allowBots: file.allowBots });
    if (settings === null) continue;
    channels[name] = settings;
    const variable = allowListVariable(name);
    allowLists[name] = parseAllowList(nonEmpty(env, variable), variable, channelModule.userIds);
  }
  return { channels, allowLists };
}

/**
 * `<PLATFORM>_ALLOWED_USERS` (or an account's `allowedUsers`, `name` naming where it is): ids
 * shaped as the channel's `userIds` say, `*`, and `pairing`; unset: nobody.
 */
export function parseAllowList(
  raw: string | undefined,
  name: string,
  ids: ChannelModule<unknown>["userIds"],
): AllowList {
  if (!raw?.trim()) return { kind: "ids", ids: new Set() };
  const items = raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (items.includes("*")) return { kind: "everyone" };
  const pairing = items.includes("pairing");
  for (const item of items) {
    if (item === "pairing") continue;
    if (!ids.pattern.test(item))
      fail(
        name,
        `has "${item}", which is not a user id (${ids.what}; the log line ingress.denied shows the id of a refused user)`,
        `${name}=${ids.example}, ${name}=pairing,${ids.example} or ${name}=*`,
      );
  }
  const listed = new Set(items.filter((item) => item !== "pairing"));
  return pairing ? { kind: "ids", ids: listed, pairing: true } : { kind: "ids", ids: listed };
}
