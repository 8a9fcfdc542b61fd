import { nonEmpty } from "../../src/util/env.ts";
import type { ChannelModule } from "../module.ts";
import { type ApiConfig, apiConfigSchema } from "./config.ts";

/**
 * The conversation API's channel: configured whenever a token may use the API (an operator token
 * or SWITCHBOARD_APP_TOKENS, which src/gateway/config/tokens.ts parses). It loads no SDK.
 */
export const apiModule: ChannelModule<ApiConfig> = {
  name: "api",
  secretVariables: ["SWITCHBOARD_APP_TOKENS"],
  userIds: {
    pattern: /^(operator|app\.[A-Za-z0-9._-]{1,64})$/,
    what: "api users are `operator` or `app.<name>` (a name from SWITCHBOARD_APP_TOKENS)",
    example: "app.crm",
  },
  howToConnect:
    "SWITCHBOARD_APP_TOKENS (name=token pairs) or SWITCHBOARD_OPERATOR_TOKEN to use the conversation API (docs/api.md)",
  markup: "commonmark",

  fromEnv(env) {
    const enabled =
      nonEmpty(env, "SWITCHBOARD_APP_TOKENS") ??
      nonEmpty(env, "SWITCHBOARD_OPERATOR_TOKEN") ??
      nonEmpty(env, "SWITCHBOARD_OPERATOR_TOKENS");
    return enabled === undefined ? null : apiConfigSchema.parse({});
  },

  create(config) {
    const { createApiChannel } = require("./adapter.ts") as typeof import("./adapter.ts");
    return createApiChannel(config);
  },
};
