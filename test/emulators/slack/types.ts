/** Shapes shared by the Slack emulator's parts and the tests that drive it. */

/** Who the emulated workspace and app are. Event payloads and auth.test answers use these ids. */
export interface SlackIdentity {
  teamId: string;
  teamName: string;
  appId: string;
  botUserId: string;
  botId: string;
  /** The Enterprise Grid org the workspace belongs to; absent for a workspace outside any org. */
  enterpriseId?: string;
  /**
   * The app is installed org-wide in `enterpriseId`: events say so (`is_enterprise_install`), and
   * the bot (its user and token) is the org's, the same in every workspace of the org.
   */
  isEnterpriseInstall?: boolean;
}

/** A Slack event inside an `event_callback` (message, app_mention, …). */
export type SlackEvent = { type: string } & Record<string, unknown>;

/** The body Slack POSTs to the Events API URL and wraps in Socket Mode envelopes. */
export interface EventCallbackBody {
  token: string;
  /** The workspace the event happened in; null for an org-wide install's org-level events. */
  team_id: string | null;
  context_team_id: string | null;
  context_enterprise_id: string | null;
  /** Present for a workspace of an Enterprise Grid org. */
  enterprise_id?: string;
  /** Present (true) when the app is installed org-wide. */
  is_enterprise_install?: boolean;
  api_app_id: string;
  event: SlackEvent;
  type: "event_callback";
  event_id: string;
  event_time: number;
  authorizations: {
    enterprise_id: string | null;
    team_id: string | null;
    user_id: string;
    is_bot: true;
    is_enterprise_install: boolean;
  }[];
  is_ext_shared_channel: boolean;
  event_context: string;
}

/** What the next call(s) of one Web API method do instead of their normal work. */
export type SlackFault =
  /** HTTP 429 with a Retry-After header and `{ok:false, error:"ratelimited"}`. */
  | { kind: "rate_limited"; retryAfterSeconds: number }
  /** An HTTP 5xx with an HTML-ish body, as Slack's edge answers during incidents. */
  | { kind: "server_error"; status: 500 | 502 | 503 | 504 }
  /** HTTP 200 `{ok:false, error}`: channel_not_found, invalid_auth, internal_error, … */
  | { kind: "platform_error"; error: string }
  /**
   * Never answers (until the emulator closes): the client's timeout must fire. With `afterEffect`
   * the call takes effect first (the message is posted, its answer lost): an ambiguous outcome.
   */
  | { kind: "hang"; afterEffect?: boolean }
  /** Closes the connection without an answer. */
  | { kind: "reset" };

export type TokenKind = "bot" | "app" | "invalid" | "missing";

/** One Web API call as the emulator saw it. Tokens are never recorded. */
export interface ApiCallRecord {
  method: string;
  /** Request parameters without `token`. Nested values stay JSON strings, as web-api sends them. */
  params: Record<string, string>;
  tokenKind: TokenKind;
  /** HTTP status answered, or null when the call hung or was reset. */
  status: number | null;
  ok: boolean;
  error?: string;
  fault?: SlackFault["kind"];
  atMs: number;
  /** The installed workspace whose bot token made the call (an emulator started with `oauth`). */
  teamId?: string;
}

/** A message as a person in the channel would see it right now. */
export interface VisibleMessage {
  channel: string;
  ts: string;
  threadTs?: string;
  text: string;
  /** The user id that wrote it (the bot user for messages the bot posted). */
  user: string;
  botId?: string;
  mrkdwn: boolean;
  /** True once chat.update changed it. */
  edited: boolean;
  /** Present for messages made with chat.startStream. */
  stream?: "streaming" | "stopped";
  /** True when Slack cut the text at 40,000 characters. */
  truncated: boolean;
  /** Files shared with it (files.completeUploadExternal), with their uploaded bytes. */
  files?: Array<{ id: string; title: string; filename: string; bytes: Uint8Array }>;
  /** Block Kit blocks, when the message has them (chat.update with `blocks: []` removes them). */
  blocks?: SlackBlock[];
}

/** A Block Kit block as the emulator keeps it. */
export type SlackBlock = { type: string } & Record<string, unknown>;

/** A chat.postEphemeral message: shown to `user` alone, never in the channel's history. */
export interface EphemeralMessage {
  channel: string;
  user: string;
  text: string;
  threadTs?: string;
}

/** The `block_actions` payload Slack sends when a user presses a Block Kit button. */
export type BlockActionsBody = { type: "block_actions" } & Record<string, unknown>;

/**
 * What Slack sends when a user runs an app's slash command: form fields over HTTP, the same
 * fields as a JSON object in a Socket Mode `slash_commands` envelope.
 */
export interface SlashCommandBody {
  token: string;
  team_id: string;
  team_domain: string;
  channel_id: string;
  channel_name: string;
  user_id: string;
  user_name: string;
  command: string;
  text: string;
  api_app_id: string;
  is_enterprise_install: string;
  response_url: string;
  trigger_id: string;
  /** Present when the command was run in a thread. */
  thread_ts?: string;
}

export interface EnvelopeDelivery {
  retryAttempt: number;
  atMs: number;
}

/** A Socket Mode envelope and what happened to it. */
export interface EnvelopeRecord {
  envelopeId: string;
  payload: EventCallbackBody | BlockActionsBody | SlashCommandBody;
  /** Socket Mode envelope type: Events API events, interactivity (button presses) or slash commands. */
  type: "events_api" | "interactive" | "slash_commands";
  deliveries: EnvelopeDelivery[];
  /** "pending": waiting for a connection; "abandoned": redeliveries exhausted without an ack. */
  state: "pending" | "delivered" | "acked" | "abandoned";
  ackedAtMs?: number;
}
