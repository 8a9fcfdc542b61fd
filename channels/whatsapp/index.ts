export {
  createWhatsAppAdapter,
  WHATSAPP_FILE_LIMITS,
  WhatsAppAdapter,
  type WhatsAppAdapterOptions,
} from "./adapter.ts";
export { WhatsAppClient } from "./client.ts";
export {
  type ReengageTemplate,
  WEBHOOK_PATH,
  type WhatsAppConfig,
  type WhatsAppConfigInput,
} from "./config.ts";
export { toSwitchboardError } from "./errors.ts";
export { decodeReplyTarget, dmConversationKey, encodeReplyTarget } from "./keys.ts";
export { type ParseContext, type ParseOutcome, parseWhatsAppMessage } from "./parse.ts";
export { toStatusUpdate } from "./status.ts";
export { verifySubscription, verifyWhatsAppSignature } from "./verify.ts";
