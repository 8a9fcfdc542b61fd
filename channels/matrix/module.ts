import { z } from "zod";
import { fail, nonEmpty, parseIntegerField, parseUrl, parseWithSchema } from "../../src/util/env.ts";
import { parseAccountSettings } from "../account-settings.ts";
import type { ChannelModule } from "../module.ts";
import {
  type InvitePolicy,
  MATRIX_USER_ID,
  type MatrixConfig,
  matrixConfigSchema,
  matrixFields,
} from "./config.ts";
import { accountOfMatrixKey } from "./keys.ts";

/** Loads the adapter only when a Matrix adapter is built (it has no SDK, but the rule is one for all). */
const adapterModule = (): typeof import("./adapter.ts") => require("./adapter.ts");

const USER_EXAMPLE = "@bot:example.org";

/** The `"matrix"` section of the SWITCHBOARD_CONFIG file. */
const fileSection = z
  .object({
    /**
     * The default of the Matrix surfaces' `edits` (what an edit after the answer becomes); the
     * gateway reads it from the file, the adapter passes every edit on.
     */
    editedMessages: z.enum(["ignore", "new-input"]).optional(),
  })
  .strict();

/**
 * Whose invites the bot accepts, from MATRIX_ALLOWED_USERS (which the gateway validates and applies
 * to messages): its user ids, or everyone with `*` or `pairing` (a new user must reach the bot to pair).
 */
function invitePolicy(raw: string | undefined): InvitePolicy {
  const items = (raw ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
  if (items.includes("*") || items.includes("pairing")) return { kind: "everyone" };
  return { kind: "users", ids: items.filter((item) => MATRIX_USER_ID.test(item)) };
}

/**
 * The keys one entry of `accounts.matrix` may have: MATRIX_*'s settings by their schema names.
 * `userId` is required: the gateway tells the accounts apart by it before they start.
 */
const ACCOUNT_KEYS = ["homeserverUrl", "accessToken", "userId", "password", "requestTimeoutMs"] as const;

const ACCOUNT_EXAMPLE = (name: string) =>
  `"accounts": {"matrix": {"${name}": {"homeserverUrl": "https://matrix.example.org", "userId": "@${name}:example.org", "accessToken": "\${MATRIX_${name.toUpperCase()}_TOKEN}", "allowedUsers": "@alice:example.org"}}}`;

/** Matrix from MATRIX_*: one bot user on a homeserver, /sync long polling and the client-server API. */
export const matrixModule: ChannelModule<MatrixConfig> = {
  name: "matrix",
  fileSection,
  secretVariables: ["MATRIX_ACCESS_TOKEN", "MATRIX_PASSWORD"],
  accountSecrets: ["accessToken", "password"],
  userIds: {
    pattern: MATRIX_USER_ID,
    what: "Matrix user ids look like @name:server",
    example: "@alice:example.org",
  },
  howToConnect:
    "MATRIX_HOMESERVER_URL and MATRIX_ACCESS_TOKEN (or MATRIX_USER_ID and MATRIX_PASSWORD) of a bot user, then invite it to a room (see channels/matrix/README.md)",
  markup: "matrix-html",

  fromEnv(env, file) {
    const accessToken = nonEmpty(env, "MATRIX_ACCESS_TOKEN");
    const password = nonEmpty(env, "MATRIX_PASSWORD");
    if (!accessToken && !password) return null;
    const homeserverUrl =
      parseUrl(env, "MATRIX_HOMESERVER_URL", "https://matrix.example.org") ??
      fail(
        "MATRIX_HOMESERVER_URL",
        "must be set with the Matrix credentials",
        "MATRIX_HOMESERVER_URL=https://matrix.example.org",
      );
    const userId = nonEmpty(env, "MATRIX_USER_ID");
    const { editedMessages: _edits, ...section } = fileSection.parse(file.section ?? {});
    if (!accessToken && !userId)
      fail(
        "MATRIX_USER_ID",
        "must be set with MATRIX_PASSWORD (the user to log in as)",
        `MATRIX_USER_ID=${USER_EXAMPLE}`,
      );
    return parseWithSchema(
      matrixConfigSchema,
      {
        homeserverUrl,
        ...(accessToken ? { accessToken } : {}),
        ...(userId ? { userId } : {}),
        ...(password && !accessToken ? { password } : {}),
        invites: invitePolicy(env.MATRIX_ALLOWED_USERS),
        requestTimeoutMs: parseIntegerField(
          env,
          "MATRIX_REQUEST_TIMEOUT_MS",
          matrixFields.requestTimeoutMs,
          "a whole number of milliseconds",
        ),
        ...section,
      },
      {
        homeserverUrl: { variable: "MATRIX_HOMESERVER_URL", example: "https://matrix.example.org" },
        accessToken: { variable: "MATRIX_ACCESS_TOKEN", example: "syt_… (the bot's access token)" },
        userId: { variable: "MATRIX_USER_ID", example: USER_EXAMPLE },
        password: { variable: "MATRIX_PASSWORD", example: "(the bot user's password)" },
      },
    );
  },

  fromAccount(name, settings, file) {
    const { editedMessages: _edits, ...section } = fileSection.parse(file.section ?? {});
    if (typeof settings.userId !== "string")
      fail(
        "SWITCHBOARD_CONFIG",
        `has accounts.matrix.${name} without userId: a Matrix account names its bot user, by which its replies are routed`,
        ACCOUNT_EXAMPLE(name),
      );
    return parseAccountSettings({
      channel: "matrix",
      name,
      keys: ACCOUNT_KEYS,
      settings,
      input: {
        ...section,
        ...settings,
        invites: invitePolicy(file.allowedUsers),
        accountKeys: true,
      },
      schema: matrixConfigSchema,
      example: ACCOUNT_EXAMPLE(name),
    });
  },

  accountIdOf: (config) => config.userId ?? null,
  accountOfKey: accountOfMatrixKey,

  create(config, { logger, clock, state }) {
    return adapterModule().createMatrixAdapter(config, { logger, clock, ...(state ? { state } : {}) });
  },
};
