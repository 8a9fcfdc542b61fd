import { z } from "zod";
import { SwitchboardError } from "../../src/errors.ts";

/** Settings of one Discord bot account. */
export const discordConfigSchema = z.object({
  /** Bot token from the Developer Portal, without the "Bot " prefix. */
  token: z
    .string({ error: "Set the Discord bot token (discord.token)." })
    .min(1, "Set the Discord bot token (discord.token); it is empty.")
    .refine((token) => !/^(Bot|Bearer)\s/i.test(token), {
      message: 'Remove the "Bot " prefix from discord.token; switchboard adds it.',
    }),
  /**
   * REST base without the version, e.g. "http://127.0.0.1:PORT/api" for an emulator.
   * Default: Discord's own API. The gateway URL comes from GET /gateway/bot on this API.
   */
  apiUrl: z
    .url({
      protocol: /^https?$/,
      error: "discord.apiUrl must be an http(s) URL such as https://discord.com/api.",
    })
    .refine((url) => !url.endsWith("/"), { message: "Remove the trailing '/' from discord.apiUrl." })
    .optional(),
  /** Abort one REST call after this long: 100 ms to 120 s. Default 15 000 ms. */
  requestTimeoutMs: z.number().int().min(100).max(120_000).default(15_000),
  /** Wait this long for the gateway to become ready in start(). Default 30 000 ms. */
  readyTimeoutMs: z.number().int().positive().default(30_000),
  /** Guild channels: one conversation per channel ("shared") or per channel and user ("per-user"). */
  groupSessions: z.enum(["shared", "per-user"]).default("shared"),
  /** Accept messages written by other bots. Default false. Own messages are always skipped. */
  allowBots: z.boolean().default(false),
  /**
   * Register the slash commands in this server only (development: changes show at once);
   * absent: globally (every server and DMs; Discord may take a while to show changes).
   */
  commandsGuildId: z
    .string()
    .regex(/^\d{1,20}$/, "must be a server (guild) id: a number such as 123456789012345678")
    .optional(),
  /**
   * Answer a slash command with "thinking…" when its reply was not sent this long after the
   * command: 0–2500 ms (Discord wants an answer within 3 s). Default 2000 ms.
   */
  interactionDeferMs: z.number().int().min(0).max(2500).default(2000),
});

export type DiscordConfigInput = z.input<typeof discordConfigSchema>;
export type DiscordConfig = z.output<typeof discordConfigSchema>;

/** Validates Discord settings; the error names each bad field and never echoes the token. */
export function parseDiscordConfig(input: unknown): DiscordConfig {
  const result = discordConfigSchema.safeParse(input);
  if (result.success) return result.data;
  throw new SwitchboardError(
    "config_invalid",
    `Invalid Discord settings:\n${z.prettifyError(result.error)}`,
    {
      details: { fields: result.error.issues.map((issue) => issue.path.join(".")) },
    },
  );
}
