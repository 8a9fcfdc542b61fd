import { z } from "zod";
import { DEFAULT_API_ROOT, DEFAULT_API_VERSION, DEFAULT_PAIR_INTERVAL_MS } from "./client.ts";

/** The route Meta posts webhooks to and checks with its GET handshake; the app's callback URL ends with it. */
export const WEBHOOK_PATH = "/whatsapp/webhook";

/**
 * The approved template sent instead of a message that WhatsApp refuses because the user's
 * 24-hour window is closed (a schedule firing, say): its name and language code. Its body has one
 * parameter, `{{1}}`, which carries the message's text (cut to TEMPLATE_TEXT_CHARS).
 */
export const reengageTemplateSchema = z
  .object({
    name: z.string().min(1, { error: "name must name an approved template" }).max(512),
    language: z.string().regex(/^[a-z]{2,3}(_[A-Z]{2})?$/, {
      error: 'language must be a template language code such as "en_US"',
    }),
  })
  .strict();
export type ReengageTemplate = z.output<typeof reengageTemplateSchema>;

/** The most text a re-engagement template's parameter carries; longer text is cut with "…". */
export const TEMPLATE_TEXT_CHARS = 900;

/** Every bound and default of the WhatsApp channel, written once (the module reads them from here). */
export const whatsappFields = {
  accessToken: z.string().min(1, { error: "accessToken is required: a system user's token" }),
  phoneNumberId: z.string().regex(/^\d{5,30}$/, {
    error: "phoneNumberId must be the number's id from WhatsApp → API Setup (digits), not the phone number",
  }),
  appSecret: z.string().min(1, { error: "appSecret is required: App settings → Basic → App secret" }),
  verifyToken: z
    .string()
    .min(8, { error: "verifyToken must be at least 8 characters (choose a random one)" }),
  apiRoot: z
    .url({ protocol: /^https?$/, error: "apiRoot must be an http(s) URL such as https://graph.facebook.com" })
    .default(DEFAULT_API_ROOT),
  apiVersion: z
    .string()
    .regex(/^v\d{1,3}\.\d$/, { error: 'apiVersion must look like "v26.0"' })
    .default(DEFAULT_API_VERSION),
  /** Deadline for one Graph call, in milliseconds. */
  requestTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
  /** Messages per second the number may send (Meta's default throughput is 80; higher tiers exist). */
  throughputPerSecond: z.number().int().min(1).max(1000).default(80),
  /** How long a pair-rate refusal (131056) holds back that user's chat, in milliseconds. */
  pairIntervalMs: z.number().int().min(100).max(60_000).default(DEFAULT_PAIR_INTERVAL_MS),
  /**
   * How long a send whose outcome is unknown (an answer lost, a crash mid-send) waits for its
   * status webhook before it becomes `ambiguous`, in milliseconds. Default 10 minutes.
   */
  statusWaitMs: z
    .number()
    .int()
    .min(1_000)
    .max(24 * 60 * 60 * 1000)
    .default(10 * 60 * 1000),
  /** The most recent message texts kept to quote in front of a user's reply to them. */
  quotedTextsKept: z.number().int().min(0).max(100_000).default(2_000),
  reengageTemplate: reengageTemplateSchema.optional(),
};

export const whatsappConfigSchema = z.object(whatsappFields).strict();
export type WhatsAppConfig = z.output<typeof whatsappConfigSchema>;
export type WhatsAppConfigInput = z.input<typeof whatsappConfigSchema>;
