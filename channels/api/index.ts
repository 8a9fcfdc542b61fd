export { API_ADMISSION, API_CAPABILITIES, type ApiChannel, createApiChannel } from "./adapter.ts";
export { type ApiConfig, apiConfigSchema } from "./config.ts";
export { type ApiMessage, toInboundMessage } from "./inbound.ts";
export {
  API_ACCOUNT,
  APP_NAME,
  type ApiOwner,
  conversationKeyFor,
  decodeTarget,
  ownerOfApp,
  parseConversationKey,
  replyTargetFor,
} from "./keys.ts";
