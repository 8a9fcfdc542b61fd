export {
  DEFAULT_ACCESS_TOKEN,
  DEFAULT_APP_SECRET,
  DEFAULT_BUSINESS,
  DEFAULT_TEMPLATES,
  type GraphCall,
  startWhatsAppEmulator,
  WhatsAppEmulator,
  type WhatsAppEmulatorOptions,
} from "./emulator.ts";
export type { Fault, GraphRoute } from "./faults.ts";
export { ERRORS, type GraphErrorBody, type StatusError, statusError } from "./graph-errors.ts";
export type { ContactCard, IncomingSpec, MediaSpec } from "./incoming.ts";
export { DEFAULT_LIMITS, type LimitStats, type LimitsConfig } from "./limits.ts";
export { MEDIA_LIMITS } from "./media.ts";
export {
  MAX_BUTTON_ID_CHARS,
  MAX_BUTTON_TITLE_CHARS,
  MAX_CAPTION_CHARS,
  MAX_REPLY_BUTTONS,
  MAX_TEXT_CHARS,
  type TemplateSpec,
  type WindowFailure,
} from "./messages-api.ts";
export type { BusinessNumber, WebhookBody, WebhookMessage, WebhookStatus } from "./payloads.ts";
export type { StatusPlan } from "./status-reports.ts";
export type { ChatState, TranscriptEntry } from "./transcript.ts";
export { signWebhookBody, type WebhookAttempt, type WebhookDelivery } from "./webhook.ts";
