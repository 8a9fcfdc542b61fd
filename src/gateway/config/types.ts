/** The gateway's settings as `loadConfig` returns them: read and validated once, at startup. */
import type { PlatformChannel } from "../../../channels/module.ts";
import type { SlackInstallsConfig } from "../../../channels/slack/oauth.ts";
import type { DatabaseConfig } from "../../store/open-backend.ts";
import type { SearchBackend } from "../../tools/web/search.ts";
import type { LogFormat, LogLevel } from "../../util/log.ts";
import type { AppTokens } from "../http/api-caller.ts";
import type { OperatorTokens } from "../http/auth.ts";
import type { FileConfig } from "./file.ts";

export interface GatewayConfig {
  database: DatabaseConfig;
  /** `publicUrl`: SWITCHBOARD_PUBLIC_URL, the origin browsers use (no trailing slash); null if unset. */
  http: { host: string; port: number; publicUrl: string | null };
  logLevel: LogLevel;
  /** SWITCHBOARD_LOG_FORMAT; null: pretty on a terminal, JSON otherwise (decided at start). */
  logFormat: LogFormat | null;
  operatorToken: string | null;
  /** SWITCHBOARD_OPERATOR_TOKENS: one token per named operator, who is then recorded as acting. */
  operatorTokens: OperatorTokens;
  /** SWITCHBOARD_APP_TOKENS: applications that may use the conversation API only (docs/api.md). */
  appTokens: AppTokens;
  /** SWITCHBOARD_OPENAI_COMPAT=on: `POST /v1/chat/completions` for OpenAI clients (docs/api.md). */
  openaiCompat: boolean;
  timezone: string;
  instructions: string;
  /**
   * Where `instructions` came from: SWITCHBOARD_INSTRUCTIONS or the config file win over the agent
   * directory's INSTRUCTIONS.md; only `default` instructions give way to it.
   */
  instructionsSource: "env" | "config" | "default";
  /**
   * SWITCHBOARD_AGENT_DIR (absolute; default ./agent): INSTRUCTIONS.md, skills/ and resources/.
   * A missing default directory means none (today's behaviour).
   */
  agentDir: string;
  shutdownGraceMs: number;
  /**
   * SWITCHBOARD_IDLE_GC (on/off, default on): a full garbage collection once no conversation has
   * work (at most every 10 s, and only after the heap or the resident set grew), so memory goes
   * back down after a burst (src/gateway/idle-collector.ts).
   */
  idleCollection: boolean;
  /** How long an ambiguous reply holds back its chat's later replies; Infinity: until an operator decides. */
  ambiguousHoldMs: number;
  file: FileConfig;
  /** The platform channels configured from the environment: each one's settings, from its module's `fromEnv`. */
  channels: Partial<Record<PlatformChannel, unknown>>;
  /** Who may talk to the bot on each configured platform channel (`<PLATFORM>_ALLOWED_USERS`). */
  allowLists: Partial<Record<PlatformChannel, AllowList>>;
  /**
   * The named accounts of the file's `accounts` (each its own adapter), besides the `default` one
   * each channel in `channels` has; settings hold expanded secrets.
   */
  accounts: ChannelAccount[];
  /** The Slack app installed into many workspaces (SLACK_CLIENT_ID); null or absent when off. */
  slackInstalls?: SlackInstallsConfig | null;
  web: WebChatConfig;
  /** Every secret value, so the logger can scrub them from any line. */
  secrets: string[];
  /** Environment passed through to the model registry. */
  modelEnv: Record<string, string | undefined>;
  /** Attachments: size limit, what the model accepts, the transcription model. */
  media: MediaConfig;
  /** The built-in web_fetch tool: offered, and whether it may reach private addresses. */
  webFetch: { enabled: boolean; allowPrivate: boolean };
  /** The web_search tool's backend; null: no web_search (SWITCHBOARD_SEARXNG_URL or SWITCHBOARD_BRAVE_API_KEY). */
  webSearch: SearchBackend | null;
  /** The variables MCP server headers reference as ${VAR} (their values are also in `secrets`). */
  mcpEnv: Record<string, string | undefined>;
  /** SWITCHBOARD_APPROVAL_SECRET; null: a key generated once and kept in the database. */
  approvalSecret: string | null;
  /** SWITCHBOARD_METRICS_TOKEN: what a scrape from beyond this machine sends to /metrics; null: none. */
  metricsToken: string | null;
}

/**
 * A list of user ids, `*` for everyone; empty means nobody. With `pairing` in the list, a user
 * off it gets a pairing code in a DM, and the users the operator approved are admitted too.
 */
export type AllowList = { kind: "everyone" } | { kind: "ids"; ids: ReadonlySet<string>; pairing?: true };

/** The web chat (channels/web) and who may reach it; docs/operators.md "Exposure". */
export interface WebChatConfig {
  enabled: boolean;
  /** Why it is off although SWITCHBOARD_WEB did not say so, for the startup log. */
  offReason?: string;
  /** SWITCHBOARD_WEB_TOKEN: the bearer token the chat API requires; null: none. */
  token: string | null;
  /** Messages one browser session may post per minute (SWITCHBOARD_WEB_MESSAGES_PER_MINUTE). */
  messagesPerSessionPerMinute: number;
  /** Chat API requests per client address per minute (SWITCHBOARD_WEB_REQUESTS_PER_MINUTE). */
  requestsPerIpPerMinute: number;
}

export interface MediaConfig {
  /** SWITCHBOARD_MAX_FILE_MB, in bytes: larger files are refused, unread. */
  maxFileBytes: number;
  /** SWITCHBOARD_MAX_CONVERSATION_MB, in bytes: files one conversation may download in all. */
  maxConversationBytes: number;
  /** SWITCHBOARD_MAX_AUDIO_MINUTES, in seconds: longer voice notes and audio are not transcribed. */
  maxAudioSeconds: number;
  /** SWITCHBOARD_BLOB_RETENTION_DAYS in ms: files of history older than this are removed; null: kept. */
  blobRetentionMs: number | null;
  /** SWITCHBOARD_EXPORT_TTL_HOURS in ms (default 24 h): how long an /export's web download link works. */
  exportTtlMs: number;
  /** SWITCHBOARD_MODEL_INPUTS; null: the default for the model's provider. */
  modelInputs: ReadonlySet<"image" | "file" | "audio"> | null;
  /** SWITCHBOARD_TRANSCRIPTION_MODEL (`openai-compatible:whisper-1`); null: voice notes are not transcribed. */
  transcriptionModel: string | null;
}

/** One bot (or app) of a platform channel, ready to build an adapter from (config/accounts.ts). */
export interface ChannelAccount {
  channel: PlatformChannel;
  /** Its name in `accounts`; `default` for the one the channel's variables configure. */
  name: string;
  /** The module's config for it (secrets expanded: never log it). */
  settings: unknown;
  allowList: AllowList;
  /** The platform's id for it (`ChannelAdapter.account`) when its settings tell it; null: known once started. */
  accountId: string | null;
}
