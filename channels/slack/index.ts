export {
  createSlackAdapter,
  SLACK_CAPABILITIES,
  SLACK_LIMITS,
  SlackAdapter,
  type SlackAdapterOptions,
} from "./adapter.ts";
export { parseSlackConfig, type SlackConfig, type SlackConfigInput } from "./config.ts";
export { toSwitchboardError } from "./errors.ts";
export { decodeReplyTarget, encodeReplyTarget, type ReplyTarget } from "./keys.ts";
export { type ParseContext, type ParseOutcome, parseSlackEvent, type SkipReason } from "./parse.ts";
export { SIGNATURE_TOLERANCE_SECONDS, type SignatureVerdict, verifySlackSignature } from "./verify.ts";
