import { z } from "zod";
import { fail, nonEmpty, parseIntegerField, parseUrl, parseWithSchema } from "../../src/util/env.ts";
import { parseAccountSettings } from "../account-settings.ts";
import type { ChannelModule } from "../module.ts";
import {
  reengageTemplateSchema,
  type WhatsAppConfig,
  whatsappConfigSchema,
  whatsappFields,
} from "./config.ts";
import { accountOfWhatsAppKey } from "./keys.ts";

/** Loads the adapter only when a WhatsApp adapter is built (it has no SDK, but the rule is one for all). */
const adapterModule = (): typeof import("./adapter.ts") => require("./adapter.ts");

/** The `"whatsapp"` section of the SWITCHBOARD_CONFIG file. */
const fileSection = z.object({ reengageTemplate: reengageTemplateSchema.optional() }).strict();

const VERIFY_TOKEN_EXAMPLE = "$(openssl rand -hex 24)";

/**
 * The keys one entry of `accounts.whatsapp` may have: WHATSAPP_*'s settings by their schema names.
 * Every account's webhooks come to /whatsapp/webhook (Meta posts all numbers of an app to the
 * app's one callback URL), each taken by the account of its `metadata.phone_number_id`.
 */
const ACCOUNT_KEYS = [
  "phoneNumberId",
  "accessToken",
  "appSecret",
  "verifyToken",
  "apiRoot",
  "apiVersion",
  "requestTimeoutMs",
  "throughputPerSecond",
  "statusWaitMs",
  "reengageTemplate",
] as const;

const ACCOUNT_EXAMPLE = (name: string) =>
  `"accounts": {"whatsapp": {"${name}": {"phoneNumberId": "106540352242922", "accessToken": "\${WA_${name.toUpperCase()}_TOKEN}", "appSecret": "\${WA_APP_SECRET}", "verifyToken": "\${WA_VERIFY_TOKEN}"}}}`;

/** WhatsApp from WHATSAPP_*: the Cloud API, webhooks on the gateway's /whatsapp/webhook. */
export const whatsappModule: ChannelModule<WhatsAppConfig> = {
  name: "whatsapp",
  fileSection,
  secretVariables: ["WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"],
  accountSecrets: ["accessToken", "appSecret", "verifyToken"],
  userIds: {
    pattern: /^\d{5,20}$/,
    what: "WhatsApp user ids (wa_id) are phone numbers in international form, digits only, without +",
    example: "4915112345678",
  },
  howToConnect:
    "WHATSAPP_ACCESS_TOKEN, WHATSAPP_PHONE_NUMBER_ID, WHATSAPP_APP_SECRET and WHATSAPP_VERIFY_TOKEN (a Meta app with the WhatsApp product; see channels/whatsapp/README.md)",
  markup: "whatsapp-markdown",

  fromEnv(env, file) {
    const accessToken = nonEmpty(env, "WHATSAPP_ACCESS_TOKEN");
    if (!accessToken) return null;
    const required = (variable: string, example: string): string =>
      nonEmpty(env, variable) ??
      fail(variable, "must be set with WHATSAPP_ACCESS_TOKEN", `${variable}=${example}`);
    const phoneNumberId = required("WHATSAPP_PHONE_NUMBER_ID", "106540352242922");
    const appSecret = required("WHATSAPP_APP_SECRET", "(App settings → Basic → App secret)");
    const verifyToken = required("WHATSAPP_VERIFY_TOKEN", VERIFY_TOKEN_EXAMPLE);
    const apiRoot = parseUrl(env, "WHATSAPP_API_ROOT", "https://graph.facebook.com");
    const apiVersion = nonEmpty(env, "WHATSAPP_API_VERSION");
    const section = fileSection.parse(file.section ?? {});
    return parseWithSchema(
      whatsappConfigSchema,
      {
        accessToken,
        phoneNumberId,
        appSecret,
        verifyToken,
        ...(apiRoot ? { apiRoot } : {}),
        ...(apiVersion ? { apiVersion } : {}),
        statusWaitMs: parseIntegerField(
          env,
          "WHATSAPP_STATUS_WAIT_MS",
          whatsappFields.statusWaitMs,
          "a whole number of milliseconds",
        ),
        throughputPerSecond: parseIntegerField(
          env,
          "WHATSAPP_THROUGHPUT_PER_SECOND",
          whatsappFields.throughputPerSecond,
          "a whole number of messages per second",
        ),
        ...section,
      },
      {
        accessToken: { variable: "WHATSAPP_ACCESS_TOKEN", example: "EAAG…(a system user's token)" },
        phoneNumberId: { variable: "WHATSAPP_PHONE_NUMBER_ID", example: "106540352242922" },
        appSecret: { variable: "WHATSAPP_APP_SECRET", example: "(App settings → Basic → App secret)" },
        verifyToken: { variable: "WHATSAPP_VERIFY_TOKEN", example: VERIFY_TOKEN_EXAMPLE },
        apiRoot: { variable: "WHATSAPP_API_ROOT", example: "https://graph.facebook.com" },
        apiVersion: { variable: "WHATSAPP_API_VERSION", example: "v26.0" },
      },
    );
  },

  fromAccount(name, settings, file) {
    return parseAccountSettings({
      channel: "whatsapp",
      name,
      keys: ACCOUNT_KEYS,
      settings,
      input: { ...fileSection.parse(file.section ?? {}), ...settings },
      schema: whatsappConfigSchema,
      example: ACCOUNT_EXAMPLE(name),
    });
  },

  accountIdOf: (config) => config.phoneNumberId,
  accountOfKey: accountOfWhatsAppKey,

  create(config, { logger }) {
    return adapterModule().createWhatsAppAdapter(config, { logger });
  },
};
