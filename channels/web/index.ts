export {
  createWebChannel,
  WEB_ADMISSION,
  WEB_CAPABILITIES,
  WEB_LIMITS,
  type WebChannel,
  type WebChannelOptions,
} from "./adapter.ts";
export { WEB_FILES_PATH, webFileHeaders, webFileOf } from "./files.ts";
export { conversationKeyFor, toInboundMessage, WEB_ACCOUNT, type WebMessageBody } from "./inbound.ts";
export { WEB_MESSAGES_PATH, WEB_SESSION_HEADER, WEB_STREAM_PATH } from "./routes.ts";
export type { WebFile, WebHistory, WebStreamEvent, WebTranscriptEntry } from "./transcript.ts";
export { isWebUserId, WEB_USER_ID_SECRET, type WebUserIds, webUserIds } from "./user-id.ts";
