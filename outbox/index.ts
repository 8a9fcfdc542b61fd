export { finalAnswerMarkdown, STOPPED_MARK } from "./final-text.ts";
export { formatRenderer, type Renderer } from "./render.ts";
export {
  createRetryPolicy,
  type RetryDecision,
  type RetryPolicy,
  type RetryPolicyOptions,
} from "./retry-policy.ts";
export { EMPTY_PREVIEW, type StreamReply, type StreamReplyTarget } from "./stream.ts";
export { assertTransition, canTransition, OUTBOX_TRANSITIONS, type OutboxTransition } from "./transitions.ts";
export type * from "./types.ts";
export { targetKey } from "./types.ts";
export { createTypingIndicator, DEFAULT_TYPING_INTERVAL_MS, type TypingIndicator } from "./typing.ts";
export { createDeliveryWorker, type DeliveryWorker, type DeliveryWorkerOptions } from "./worker.ts";
