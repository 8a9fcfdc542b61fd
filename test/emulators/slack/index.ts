export type { AssistantThreadState } from "./assistant-threads.ts";
export { SlackEmulatorControl } from "./control-client.ts";
export {
  DEFAULT_IDENTITY,
  SlackEmulator,
  type SlackEmulatorOptions,
  startSlackEmulator,
} from "./emulator.ts";
export { createTsGenerator, newEventId, type SlackEventBuilders, slackEventBuilders } from "./events.ts";
export { MAX_TEXT_CHARS } from "./message-board.ts";
export { SlackOAuthApp, type SlackOAuthAppOptions } from "./oauth.ts";
export {
  type PostEventOptions,
  type PostEventResult,
  postEvent,
  postInteraction,
  postSlashCommand,
  signSlackRequest,
} from "./post-event.ts";
export type * from "./types.ts";
export { waitFor } from "./wait-for.ts";
