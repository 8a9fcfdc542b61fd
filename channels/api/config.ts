/** The api channel's options: every bound is written here once. */
import { z } from "zod";

export const apiConfigSchema = z.strictObject({
  /** Longest text one API message may carry, and one answer chunk; default 16 000 characters. */
  maxMessageChars: z.number().int().min(100).max(100_000).default(16_000),
});

export type ApiConfig = z.infer<typeof apiConfigSchema>;
export type ApiConfigInput = z.input<typeof apiConfigSchema>;
