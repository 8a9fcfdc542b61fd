import { z } from "zod";
import { SwitchboardError } from "../../src/errors.ts";

const botToken = z
  .string({ error: "botToken is required: the Bot User OAuth Token (xoxb-…) from OAuth & Permissions" })
  // A rotating token (token rotation on) is `xoxe.xoxb-…`.
  .regex(/^(xoxe\.)?xoxb-/, {
    error: "botToken must be a bot token starting with xoxb- (Slack app settings → OAuth & Permissions)",
  });

/** The suggested prompts of an assistant thread when `assistantPrompts` is not set. */
export const DEFAULT_ASSISTANT_PROMPTS = [
  { title: "What can you do?", message: "What can you do, and which commands do you take?" },
  { title: "Help me write", message: "Help me write a short, clear message. Ask me what it is about first." },
] as const;

const common = {
  botToken,
  /**
   * The workspace (`T…`, or `E…` for an org-wide install) and app (`A…`, Basic Information → App ID)
   * the tokens belong to, so the account (`<team>:<app>`) is known before start: a named account
   * needs them, a reply queued for it routes by them. start() checks them against auth.test.
   */
  teamId: z
    .string()
    .regex(/^[TE][A-Z0-9]{2,}$/, { error: "teamId must be a Slack workspace id such as T0123ABCD" })
    .optional(),
  appId: z
    .string()
    .regex(/^A[A-Z0-9]{2,}$/, {
      error: "appId must be a Slack app id such as A0123ABCD (Basic Information → App ID)",
    })
    .optional(),
  /** Web API base URL; web-api appends the method name, so it ends with "/". */
  apiUrl: z
    .url({ protocol: /^https?$/, error: "apiUrl must be an http(s) URL such as https://slack.com/api/" })
    .default("https://slack.com/api/")
    .transform((url) => (url.endsWith("/") ? url : `${url}/`)),
  /** Deadline for one Web API call, in milliseconds. */
  requestTimeoutMs: z
    .number()
    .int()
    .positive({ error: "requestTimeoutMs must be a positive number of milliseconds" })
    .default(10_000),
  /** Pass messages written by other bots to ingress (the bot's own are always skipped). */
  allowOtherBots: z.boolean().default(false),
  /**
   * Suggested prompts offered when a user opens an assistant thread (Agents & AI Apps): at most
   * 4, each `{title, message}` or one string for both; `[]` offers none.
   */
  assistantPrompts: z
    .array(
      z.union([
        z
          .string()
          .min(1)
          .transform((text) => ({ title: text, message: text })),
        z.object({
          title: z.string().min(1, { error: "a prompt's title must not be empty" }),
          message: z.string().min(1, { error: "a prompt's message must not be empty" }),
        }),
      ]),
      { error: 'assistantPrompts must be a JSON array such as ["What can you do?"]' },
    )
    .max(4, { error: "Slack shows at most 4 suggested prompts" })
    .default([...DEFAULT_ASSISTANT_PROMPTS]),
};

const socketMode = z.object({
  mode: z.literal("socket"),
  ...common,
  appToken: z
    .string({
      error: "appToken is required for Socket Mode: an app-level token (xapp-…) with connections:write",
    })
    .startsWith("xapp-", {
      error: "appToken must be an app-level token starting with xapp- (Basic Information → App-Level Tokens)",
    }),
});

const httpMode = z.object({
  mode: z.literal("http"),
  ...common,
  signingSecret: z
    .string({ error: "signingSecret is required for HTTP mode (Basic Information → Signing Secret)" })
    .min(1, { error: "signingSecret must not be empty" }),
  /** Path the gateway serves the Events API on; the app's Request URL must point here. */
  eventsPath: z
    .string()
    .startsWith("/", { error: 'eventsPath must start with "/"' })
    .default("/slack/events"),
});

export const slackConfigSchema = z.discriminatedUnion("mode", [socketMode, httpMode], {
  error: 'mode must be "socket" (Socket Mode, needs appToken) or "http" (Events API, needs signingSecret)',
});

export type SlackConfig = z.output<typeof slackConfigSchema>;

/** `<teamId>:<appId>` when the config names both (a named account's), else null (learnt at start). */
export function configuredAccount(config: Pick<SlackConfig, "teamId" | "appId">): string | null {
  return config.teamId !== undefined && config.appId !== undefined
    ? `${config.teamId}:${config.appId}`
    : null;
}
export type SlackConfigInput = z.input<typeof slackConfigSchema>;
export type SlackSocketConfig = Extract<SlackConfig, { mode: "socket" }>;
export type SlackHttpConfig = Extract<SlackConfig, { mode: "http" }>;

/**
 * Validates Slack settings. Defaults: apiUrl https://slack.com/api/, requestTimeoutMs 10000,
 * allowOtherBots false, assistantPrompts DEFAULT_ASSISTANT_PROMPTS, eventsPath /slack/events (HTTP mode).
 * Throws SwitchboardError("config_invalid") naming each bad field; never echoes token values.
 */
export function parseSlackConfig(input: unknown): SlackConfig {
  const result = slackConfigSchema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const field = issue.path.length > 0 ? `slack.${issue.path.join(".")}` : "slack";
    return `${field}: ${issue.message}`;
  });
  throw new SwitchboardError("config_invalid", `Invalid Slack configuration. ${problems.join("; ")}`, {
    details: { fields: result.error.issues.map((issue) => issue.path.join(".")) },
  });
}
