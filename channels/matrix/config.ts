import { z } from "zod";

/** Matrix user ids: `@localpart:server`. */
export const MATRIX_USER_ID = /^@[^\s:]+:[A-Za-z0-9.[\]:-]+$/;

/** Who the bot joins rooms for: the ids of MATRIX_ALLOWED_USERS, or everyone (`*` and `pairing`). */
export const invitesSchema = z.union([
  z.object({ kind: z.literal("everyone") }).strict(),
  z.object({ kind: z.literal("users"), ids: z.array(z.string().regex(MATRIX_USER_ID)) }).strict(),
]);
export type InvitePolicy = z.output<typeof invitesSchema>;

/** Every bound and default of the Matrix channel, written once (the module reads them from here). */
export const matrixFields = {
  /** The client-server API base URL, e.g. https://matrix.example.org (no trailing slash). */
  homeserverUrl: z
    .url({
      protocol: /^https?$/,
      error: "homeserverUrl must be an http(s) URL such as https://matrix.example.org",
    })
    .refine((url) => !url.endsWith("/"), { error: "remove the trailing '/' from the homeserver URL" }),
  /** The bot's access token; absent: log in with userId + password once and keep the session. */
  accessToken: z.string().min(1).optional(),
  /** `@bot:example.org`: required with a password; with a token it is checked against whoami. */
  userId: z.string().regex(MATRIX_USER_ID, { error: "userId must look like @bot:example.org" }).optional(),
  password: z.string().min(1).optional(),
  /** Whose invites are joined (others are declined and logged). */
  invites: invitesSchema.default({ kind: "users", ids: [] }),
  /** Deadline for one client-server call other than /sync, in milliseconds. */
  requestTimeoutMs: z.number().int().min(100).max(120_000).default(15_000),
  /** How long one /sync long poll waits on the homeserver for news, in milliseconds. */
  syncTimeoutMs: z.number().int().min(0).max(120_000).default(30_000),
  /** A /sync that has not answered this long past its own timeout is stalled: aborted and restarted. */
  syncStallMarginMs: z.number().int().min(100).max(120_000).default(15_000),
  /** Waits after a failed /sync or a refused ingress before the same batch is fetched again. */
  syncRetryDelaysMs: z
    .array(z.number().int().min(0).max(300_000))
    .min(1)
    .default([1_000, 2_000, 5_000, 15_000]),
  /** Most events one room's timeline carries in one /sync answer (the sync filter's limit). */
  timelineLimit: z.number().int().min(1).max(1_000).default(100),
  /** Minimum spacing of edits of one message (streaming), below homeservers' default rate limits. */
  editIntervalMs: z.number().int().min(100).max(60_000).default(1_500),
  /**
   * Conversation keys carry the bot's user id (keys.ts): set for a named account, so its rooms are
   * its own conversations; off for the variables' bot, whose keys never carried it.
   */
  accountKeys: z.boolean().default(false),
};

export const matrixConfigSchema = z
  .object(matrixFields)
  .strict()
  .refine((config) => config.accessToken !== undefined || (config.userId && config.password), {
    error: "set accessToken, or userId and password to log in",
    path: ["accessToken"],
  });
export type MatrixConfig = z.output<typeof matrixConfigSchema>;
export type MatrixConfigInput = z.input<typeof matrixConfigSchema>;
