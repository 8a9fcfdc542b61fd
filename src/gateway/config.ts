import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import { CHANNEL_NAMES, type ChannelName, SURFACE_KINDS, type SurfaceKind } from "../../channels/types.ts";
import { budgetsSchema } from "../budgets/config.ts";
import { SwitchboardError } from "../errors.ts";
import { modelSpecProblem } from "../models/spec.ts";
import { DEFAULT_SCHEMA_BUDGET_BYTES } from "../runtime/tool-catalog.ts";
import type { InputPolicy } from "../runtime/types.ts";
import type { DatabaseConfig } from "../store/open-backend.ts";
import { mcpServersSchema } from "../tools/mcp/config.ts";
import { BRAVE_SEARCH_URL, type SearchBackend } from "../tools/web/search.ts";
import type { LogFormat, LogLevel } from "../util/log.ts";
import { closest } from "../util/suggest.ts";
import { describeConfigIssues, parseConfigJson } from "./config-file.ts";
import type { OperatorTokens } from "./http/auth.ts";
import { isLoopbackHost, type WebAccessPolicy, webAccessPolicy } from "./http/web-guard.ts";

/** What a new message does to a running answer, and how the answer is delivered, per surface. */
export interface SurfacePolicy {
  inputPolicy: Exclude<InputPolicy, "interrupt-next">;
  delivery: "terminal" | "stream";
  /** In groups and channels: answer only when mentioned, replied to, or in the bot's thread. */
  requireMention: boolean;
  /** Preview a streamed answer with the platform's native drafts where it has them (Telegram DMs). */
  nativeStreaming: boolean;
  /** Appended to the agent's instructions on this surface. */
  instructions?: string;
  /** The tool sets offered here, by name (MCP servers, `web`, `schedules`, `agent`, `state`, `history`); absent: all of them. */
  tools?: readonly string[];
  /** This surface's agent directory (absolute), instead of SWITCHBOARD_AGENT_DIR. */
  agentDir?: string;
  /**
   * What history_search sees: `user` (the default when absent) the conversations of the same user
   * on the same platform, `channel` every conversation in the current room (a Slack channel with
   * its threads, a Telegram group with its topics, whoever wrote there; a DM is its own room),
   * `conversation` only the current one, `off` no history tools.
   */
  historyScope?: HistoryScope;
  /** User ids who may decide any approval here, besides the user whose message asked. */
  approvers: readonly string[];
  /** The flood limit: messages one user may send per minute here (a burst of as many, then that rate). */
  messagesPerMinute: number;
}

/** What a surface's history tools may search; see SurfacePolicy.historyScope. */
export const HISTORY_SCOPES = ["user", "channel", "conversation", "off"] as const;
export type HistoryScope = (typeof HISTORY_SCOPES)[number];

/** The flood limit where the config names none: 20 messages a minute per user and surface. */
export const DEFAULT_MESSAGES_PER_MINUTE = 20;

/** Defaults, documented in docs/configuration.md: supersede in DMs, queue in groups and threads. */
export const DEFAULT_SURFACES: Record<SurfaceKind, SurfacePolicy> = {
  dm: {
    inputPolicy: "supersede",
    delivery: "stream",
    requireMention: false,
    nativeStreaming: false,
    approvers: [],
    messagesPerMinute: DEFAULT_MESSAGES_PER_MINUTE,
  },
  group: {
    inputPolicy: "queue",
    delivery: "terminal",
    requireMention: true,
    nativeStreaming: false,
    approvers: [],
    messagesPerMinute: DEFAULT_MESSAGES_PER_MINUTE,
  },
  thread: {
    inputPolicy: "queue",
    delivery: "terminal",
    requireMention: true,
    nativeStreaming: false,
    approvers: [],
    messagesPerMinute: DEFAULT_MESSAGES_PER_MINUTE,
  },
};

const surfaceOverride = z
  .object({
    inputPolicy: z.enum(["queue", "supersede", "interrupt", "inject"]).optional(),
    delivery: z.enum(["terminal", "stream"]).optional(),
    requireMention: z.boolean().optional(),
    nativeStreaming: z.boolean().optional(),
    instructions: z.string().max(20_000).optional(),
    tools: z.array(z.string().min(1)).max(100).optional(),
    /** An agent directory for this surface (relative to the config file), e.g. a support persona. */
    agentDir: z.string().min(1).optional(),
    /** What history_search sees on this surface: user (default), channel, conversation, or off. */
    historyScope: z.enum(HISTORY_SCOPES).optional(),
    approvers: z.array(z.string().min(1).max(200)).max(1000).optional(),
    messagesPerMinute: z.number().int().min(1).max(100_000).optional(),
  })
  .strict();

/** The gateway's own tool sets, named beside the MCP servers in a surface's `tools`. */
export const BUILT_IN_TOOL_SETS = ["web", "schedules", "agent", "state", "history", "files"] as const;

/** Every key of `surfaces`: a channel (or `*`) and a kind of chat (or `*`). */
export const SURFACE_KEYS = [...CHANNEL_NAMES, "*"].flatMap((channel) =>
  [...SURFACE_KINDS, "*"].map((surface) => `${channel}:${surface}`),
);
const SURFACE_KEY_HINT = `a surface key is "<channel>:<surface>" with channel ${CHANNEL_NAMES.join(", ")} or *, and surface ${SURFACE_KINDS.join(", ")} or * (e.g. "telegram:dm", "*:group")`;

/** What a name in `models` looks like: what users type after /model. */
const MODEL_NAME = /^[a-z0-9][a-z0-9_.-]{0,31}$/;

/**
 * `models`: the models users may pick with /model, by name (`"smart": "openrouter:…"`), and the
 * reserved key `default`: one name, or surface keys to names (`{"telegram:dm": "fast", "*:*": "smart"}`).
 */
const modelsSchema = z
  .record(z.string(), z.union([z.string(), z.record(z.string(), z.string())]))
  .default({})
  .superRefine((models, ctx) => {
    const names = Object.keys(models).filter((key) => key !== "default");
    for (const name of names) {
      const spec = models[name];
      if (!MODEL_NAME.test(name))
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `"${name}" is not a model name: use lowercase letters, digits, "-", "_" or "." (at most 32), e.g. "smart"`,
        });
      if (typeof spec !== "string") {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: 'must be a model spec such as "openrouter:anthropic/claude-sonnet-4"',
        });
        continue;
      }
      const problem = modelSpecProblem(spec);
      if (problem)
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `"${spec}" is not a model spec (${problem}); use "openrouter:<id>", "openai-compatible:<id>" or "offline"`,
        });
    }
    const fallback = models.default;
    if (fallback === undefined) return;
    const entries = typeof fallback === "string" ? [["*:*", fallback] as const] : Object.entries(fallback);
    for (const [surface, name] of entries) {
      const path = typeof fallback === "string" ? ["default"] : ["default", surface];
      if (!SURFACE_KEYS.includes(surface))
        ctx.addIssue({
          code: "custom",
          path,
          message: `"${surface}" is not a surface key: ${SURFACE_KEY_HINT}`,
        });
      if (!names.includes(name))
        ctx.addIssue({
          code: "custom",
          path,
          message: `"${name}" is not one of the models named here (${names.join(", ") || "none"})`,
        });
    }
  });

/** The JSON file named by SWITCHBOARD_CONFIG. Versioned so its meaning can evolve. */
const fileSchema = z
  .object({
    /** The config format; 1, the only one so far, when absent. */
    version: z.literal(1).default(1),
    instructions: z.string().max(50_000).optional(),
    instructionsFile: z.string().optional(),
    surfaces: z
      .record(
        z.string().refine((key) => SURFACE_KEYS.includes(key), SURFACE_KEY_HINT),
        surfaceOverride,
      )
      .default({}),
    allowBots: z.boolean().default(false),
    telegram: z
      .object({
        editedMessages: z.enum(["ignore", "new-input"]).optional(),
        groupSessions: z.enum(["shared", "per-user"]).optional(),
      })
      .strict()
      .default({}),
    discord: z
      .object({ groupSessions: z.enum(["shared", "per-user"]).optional() })
      .strict()
      .default({}),
    mcpServers: mcpServersSchema,
    /** The deferred tool catalog: above budgetBytes of schemas the model searches with tool_search. */
    toolCatalog: z
      .object({
        budgetBytes: z.number().int().min(1024).max(10_000_000).default(DEFAULT_SCHEMA_BUDGET_BYTES),
        /** Tools (as the model sees them) always offered, besides the built-in ones. */
        pinned: z.array(z.string().min(1)).max(100).default([]),
      })
      .strict()
      .default({ budgetBytes: DEFAULT_SCHEMA_BUDGET_BYTES, pinned: [] }),
    /** How long a tool call waits for a decision before it counts as denied ("expired"). */
    approvalTimeoutMs: z
      .number()
      .int()
      .min(1000)
      .max(30 * 86_400_000)
      .default(86_400_000),
    models: modelsSchema,
    /** Token and cost budgets per user and per surface (src/budgets, docs/configuration.md "Budgets"). */
    budgets: budgetsSchema(SURFACE_KEYS, SURFACE_KEY_HINT).optional(),
  })
  .strict()
  .superRefine((file, ctx) => {
    const known = [...BUILT_IN_TOOL_SETS, ...Object.keys(file.mcpServers)];
    for (const [key, surface] of Object.entries(file.surfaces)) {
      for (const [i, name] of (surface.tools ?? []).entries()) {
        if (known.includes(name)) continue;
        const close = closest(name, known);
        ctx.addIssue({
          code: "custom",
          path: ["surfaces", key, "tools", i],
          message: `"${name}" is not a tool set${close ? ` (did you mean "${close}"?)` : ""}; tool sets are ${known.join(", ")} (the built-in ones and the names in mcpServers)`,
        });
      }
    }
  });

export type FileConfig = z.output<typeof fileSchema>;

/**
 * A list of user ids, `*` for everyone; empty means nobody. With `pairing` in the list, a user
 * off it gets a pairing code in a DM, and the users the operator approved are admitted too.
 */
export type AllowList = { kind: "everyone" } | { kind: "ids"; ids: ReadonlySet<string>; pairing?: true };

export interface TelegramSettings {
  token: string;
  mode: "polling" | "webhook";
  apiRoot?: string;
  webhookUrl?: string;
  webhookSecret?: string;
  webhookPath?: string;
  /** TELEGRAM_REQUEST_TIMEOUT_MS: the deadline of one Bot API call. */
  requestTimeoutMs: number;
  allowed: AllowList;
}

export interface DiscordSettings {
  token: string;
  apiUrl?: string;
  /** DISCORD_REQUEST_TIMEOUT_MS: the deadline of one REST call. */
  requestTimeoutMs: number;
  allowed: AllowList;
}

export interface SlackSettings {
  botToken: string;
  mode: "socket" | "http";
  appToken?: string;
  signingSecret?: string;
  apiUrl?: string;
  allowed: AllowList;
}

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
  /** How long an ambiguous reply holds back its chat's later replies; Infinity: until an operator decides. */
  ambiguousHoldMs: number;
  file: FileConfig;
  telegram: TelegramSettings | null;
  discord: DiscordSettings | null;
  slack: SlackSettings | null;
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

/** Variables whose values are secrets: never written to a log line or an error message. */
export const SECRET_VARIABLES = [
  "TELEGRAM_BOT_TOKEN",
  "TELEGRAM_WEBHOOK_SECRET",
  "DISCORD_BOT_TOKEN",
  "SLACK_BOT_TOKEN",
  "SLACK_APP_TOKEN",
  "SLACK_SIGNING_SECRET",
  "OPENROUTER_API_KEY",
  "OPENAI_COMPATIBLE_API_KEY",
  "SWITCHBOARD_OPERATOR_TOKEN",
  "SWITCHBOARD_WEB_TOKEN",
  "SWITCHBOARD_METRICS_TOKEN",
  "SWITCHBOARD_BRAVE_API_KEY",
  "SWITCHBOARD_APPROVAL_SECRET",
] as const;

/** `text` with every secret value of `env` replaced by "[redacted]" (config errors echo values). */
export function redactSecrets(text: string, env: Record<string, string | undefined>): string {
  return SECRET_VARIABLES.map((name) => env[name]?.trim())
    .filter((value): value is string => value !== undefined && value.length >= 6)
    .reduce((redacted, value) => redacted.split(value).join("[redacted]"), text);
}

export const DEFAULT_INSTRUCTIONS =
  "You are a helpful assistant reached through a chat app. Answer concisely in Markdown. " +
  "You can schedule reminders and recurring prompts with your schedule tools when the user asks.";

function fail(variable: string, problem: string, example: string): never {
  throw new SwitchboardError("config_invalid", `${variable} ${problem}. Example: ${example}`, {
    details: { variable },
  });
}

function nonEmpty(env: Record<string, string | undefined>, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

const POSTGRES_EXAMPLE = "SWITCHBOARD_DATABASE_URL=postgres://switchboard@127.0.0.1:5432/switchboard";

/** SWITCHBOARD_DATABASE_URL selects PostgreSQL; otherwise SWITCHBOARD_DB names the SQLite file. */
function parseDatabase(env: Record<string, string | undefined>, secrets: string[]): DatabaseConfig {
  const url = nonEmpty(env, "SWITCHBOARD_DATABASE_URL");
  const path = nonEmpty(env, "SWITCHBOARD_DB");
  const standbyRaw = nonEmpty(env, "SWITCHBOARD_STANDBY") ?? "off";
  if (standbyRaw !== "on" && standbyRaw !== "off")
    fail("SWITCHBOARD_STANDBY", `must be on or off (got "${standbyRaw}")`, "SWITCHBOARD_STANDBY=on");
  if (url === undefined) {
    if (standbyRaw === "on")
      fail(
        "SWITCHBOARD_STANDBY",
        "needs SWITCHBOARD_DATABASE_URL: gateways share a PostgreSQL database, never a SQLite file, so a standby has nothing to wait for",
        POSTGRES_EXAMPLE,
      );
    const blobDir = nonEmpty(env, "SWITCHBOARD_BLOB_DIR");
    return { engine: "sqlite", path: path ?? "./data/switchboard.sqlite", ...(blobDir ? { blobDir } : {}) };
  }
  if (path !== undefined) {
    fail(
      "SWITCHBOARD_DATABASE_URL",
      "and SWITCHBOARD_DB are both set; keep SWITCHBOARD_DATABASE_URL for PostgreSQL or SWITCHBOARD_DB for a SQLite file, not both",
      POSTGRES_EXAMPLE,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    fail("SWITCHBOARD_DATABASE_URL", "is not a URL", POSTGRES_EXAMPLE);
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    fail(
      "SWITCHBOARD_DATABASE_URL",
      `must be a postgres:// or postgresql:// URL (got a ${parsed.protocol.replace(/:$/, "")} URL); for SQLite set SWITCHBOARD_DB instead`,
      POSTGRES_EXAMPLE,
    );
  }
  if (parsed.password) secrets.push(decodeURIComponent(parsed.password), parsed.password);
  return { engine: "postgres", url, standby: standbyRaw === "on" };
}

/** What a platform's user ids look like, for refusing a user name where an id belongs. */
const USER_ID = {
  telegram: { pattern: /^\d{1,20}$/, what: "Telegram user ids are numbers", example: "12345678" },
  discord: {
    pattern: /^[A-Za-z0-9_.:@-]{1,64}$/,
    what: "Discord user ids are numbers",
    example: "123456789012345678",
  },
  slack: {
    pattern: /^[A-Za-z0-9_.:@-]{1,64}$/,
    what: "Slack user ids look like U012AB3CD",
    example: "U012AB3CD",
  },
} as const;

function parseAllowList(
  env: Record<string, string | undefined>,
  name: string,
  platform: keyof typeof USER_ID,
): AllowList {
  const raw = nonEmpty(env, name);
  if (!raw) return { kind: "ids", ids: new Set() };
  const items = raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (items.includes("*")) return { kind: "everyone" };
  const pairing = items.includes("pairing");
  const ids = USER_ID[platform];
  for (const item of items) {
    if (item === "pairing") continue;
    if (!ids.pattern.test(item))
      fail(
        name,
        `has "${item}", which is not a user id (${ids.what}; the log line ingress.denied shows the id of a refused user)`,
        `${name}=${ids.example}, ${name}=pairing,${ids.example} or ${name}=*`,
      );
  }
  const listed = new Set(items.filter((item) => item !== "pairing"));
  return pairing ? { kind: "ids", ids: listed, pairing: true } : { kind: "ids", ids: listed };
}

function parseUrl(
  env: Record<string, string | undefined>,
  name: string,
  example: string,
): string | undefined {
  const raw = nonEmpty(env, name);
  if (!raw) return undefined;
  try {
    const url = new URL(raw);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("protocol");
  } catch {
    fail(name, `is not an http(s) URL ("${raw}")`, `${name}=${example}`);
  }
  return raw.replace(/\/+$/, "");
}

function parsePositiveInteger(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
): number {
  return parseIntegerIn(env, name, fallback, { min: 1, what: "a whole number" });
}

/** A whole number within bounds, or the fallback when unset; anything else names the variable. */
function parseIntegerIn(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  bounds: { min: number; max?: number; what: string },
): number {
  const raw = nonEmpty(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  const { min, max, what } = bounds;
  if (!Number.isInteger(value) || value < min || (max !== undefined && value > max))
    fail(
      name,
      `must be ${what} ${max === undefined ? `of at least ${min}` : `from ${min} to ${max}`} (got "${raw}")`,
      `${name}=${fallback}`,
    );
  return value;
}

/**
 * `alice=<token>,bob=<token>`: names as the history records them (`operator:alice`), tokens of 16+
 * characters, each distinct (also from SWITCHBOARD_OPERATOR_TOKEN), so a token names one operator.
 */
function parseOperatorTokens(raw: string | undefined, sharedToken: string | null): OperatorTokens {
  if (raw === undefined) return [];
  const example = "SWITCHBOARD_OPERATOR_TOKENS=alice=$(openssl rand -hex 24),bob=$(openssl rand -hex 24)";
  const tokens: Array<{ name: string; token: string }> = [];
  for (const pair of raw
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const at = pair.indexOf("=");
    const name = at < 0 ? pair : pair.slice(0, at).trim();
    const token = at < 0 ? "" : pair.slice(at + 1).trim();
    if (!/^[A-Za-z0-9._@-]{1,64}$/.test(name))
      fail(
        "SWITCHBOARD_OPERATOR_TOKENS",
        `names an operator "${name.slice(0, 70)}"; use 1-64 characters of A-Z a-z 0-9 . _ @ -`,
        example,
      );
    if (token.length < 16)
      fail(
        "SWITCHBOARD_OPERATOR_TOKENS",
        `gives ${name} a token shorter than 16 characters (write name=token pairs)`,
        example,
      );
    if (tokens.some((t) => t.name === name))
      fail("SWITCHBOARD_OPERATOR_TOKENS", `names ${name} twice`, example);
    if (tokens.some((t) => t.token === token) || token === sharedToken)
      fail(
        "SWITCHBOARD_OPERATOR_TOKENS",
        `gives ${name} a token already in use; each operator needs their own`,
        example,
      );
    tokens.push({ name, token });
  }
  return tokens;
}

/** A platform call's deadline: from 100 ms (anything less fails on a healthy network) to 120 s. */
function parseRequestTimeout(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
): number {
  return parseIntegerIn(env, name, fallback, {
    min: 100,
    max: 120_000,
    what: "a whole number of milliseconds",
  });
}

/** SWITCHBOARD_PUBLIC_URL: an origin only, since the pages call the gateway at absolute paths. */
function parsePublicUrl(env: Record<string, string | undefined>): string | null {
  const example = "https://chat.example.com";
  const raw = parseUrl(env, "SWITCHBOARD_PUBLIC_URL", example);
  if (raw === undefined) return null;
  const url = new URL(raw);
  if (url.pathname !== "/" || url.search || url.hash || url.username || url.password)
    fail(
      "SWITCHBOARD_PUBLIC_URL",
      `must be an origin (scheme, host and optional port), without a path, query or credentials (got "${raw}")`,
      `SWITCHBOARD_PUBLIC_URL=${example}`,
    );
  return url.origin;
}

/**
 * The web chat is on by default only where nobody else can reach it: a gateway listening on a
 * non-loopback address, or published at a non-loopback SWITCHBOARD_PUBLIC_URL, needs
 * SWITCHBOARD_WEB_TOKEN for it; without one it is off, and SWITCHBOARD_WEB=on is an error.
 */
function parseWebChat(
  env: Record<string, string | undefined>,
  listenHost: string,
  publicUrl: string | null,
  token: string | null,
): WebChatConfig {
  const switchRaw = nonEmpty(env, "SWITCHBOARD_WEB");
  if (switchRaw !== undefined && switchRaw !== "on" && switchRaw !== "off")
    fail("SWITCHBOARD_WEB", `must be on or off (got "${switchRaw}")`, "SWITCHBOARD_WEB=on");
  if (token !== null && token.length < 16)
    fail(
      "SWITCHBOARD_WEB_TOKEN",
      "must be at least 16 characters",
      "SWITCHBOARD_WEB_TOKEN=$(openssl rand -hex 24)",
    );
  const limits = {
    token,
    messagesPerSessionPerMinute: parsePositiveInteger(env, "SWITCHBOARD_WEB_MESSAGES_PER_MINUTE", 30),
    requestsPerIpPerMinute: parsePositiveInteger(env, "SWITCHBOARD_WEB_REQUESTS_PER_MINUTE", 120),
  };
  if (switchRaw === "off") return { enabled: false, ...limits };
  const exposedBy = !isLoopbackHost(listenHost)
    ? `SWITCHBOARD_HTTP_HOST=${listenHost} is reachable from other machines`
    : publicUrl !== null && !isLoopbackHost(new URL(publicUrl).hostname)
      ? `SWITCHBOARD_PUBLIC_URL=${publicUrl} publishes it`
      : null;
  if (exposedBy === null || token !== null) return { enabled: true, ...limits };
  if (switchRaw === "on")
    fail(
      "SWITCHBOARD_WEB_TOKEN",
      `must be set for SWITCHBOARD_WEB=on because ${exposedBy}; anyone who reaches the page could otherwise talk to the agent on your credits`,
      "SWITCHBOARD_WEB_TOKEN=$(openssl rand -hex 24)",
    );
  return {
    enabled: false,
    offReason: `${exposedBy} and SWITCHBOARD_WEB_TOKEN is not set; set it (or SWITCHBOARD_WEB=off to silence this)`,
    ...limits,
  };
}

function parseTimezone(value: string, variable: string): string {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: value });
    return value;
  } catch {
    fail(variable, `is not an IANA time zone ("${value}")`, `${variable}=Europe/Berlin`);
  }
}

function readFileConfig(path: string | undefined): { file: FileConfig; baseDir: string } {
  if (!path) return { file: fileSchema.parse({}), baseDir: process.cwd() };
  const full = resolve(path);
  if (!existsSync(full))
    fail(
      "SWITCHBOARD_CONFIG",
      `points at ${full}, which does not exist`,
      "SWITCHBOARD_CONFIG=./switchboard.json",
    );
  const json = parseConfigJson(readFileSync(full, "utf8"));
  if (!json.ok)
    fail(
      "SWITCHBOARD_CONFIG",
      `(${full}) is not valid JSON: ${json.problem}`,
      'a file containing {"version": 1}',
    );
  const parsed = fileSchema.safeParse(json.value, { reportInput: true });
  if (!parsed.success) {
    fail(
      "SWITCHBOARD_CONFIG",
      `(${full}) is invalid: ${describeConfigIssues(fileSchema, parsed.error.issues, () => SURFACE_KEYS).join("; ")}`,
      'see docs/configuration.md; e.g. {"version":1,"surfaces":{"telegram:dm":{"inputPolicy":"queue"}}}',
    );
  }
  return { file: parsed.data, baseDir: dirname(full) };
}

/** Only the SWITCHBOARD_CONFIG file (for the CLI, which needs its `models` and nothing else). */
export function loadFileConfig(env: Record<string, string | undefined>): FileConfig {
  return readFileConfig(nonEmpty(env, "SWITCHBOARD_CONFIG")).file;
}

/**
 * Reads and validates every setting once, at startup. A missing or invalid setting throws
 * `config_invalid` naming the variable, what is wrong and an example.
 */
export function loadConfig(env: Record<string, string | undefined>): GatewayConfig {
  const portRaw = nonEmpty(env, "SWITCHBOARD_HTTP_PORT") ?? "8787";
  const port = Number(portRaw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    fail(
      "SWITCHBOARD_HTTP_PORT",
      `must be a port number from 0 to 65535 (got "${portRaw}")`,
      "SWITCHBOARD_HTTP_PORT=8787",
    );
  }
  const logLevel = (nonEmpty(env, "SWITCHBOARD_LOG_LEVEL") ?? "info") as LogLevel;
  if (!["debug", "info", "warn", "error"].includes(logLevel)) {
    fail(
      "SWITCHBOARD_LOG_LEVEL",
      `must be debug, info, warn or error (got "${logLevel}")`,
      "SWITCHBOARD_LOG_LEVEL=info",
    );
  }
  const logFormat = (nonEmpty(env, "SWITCHBOARD_LOG_FORMAT") ?? null) as LogFormat | null;
  if (logFormat !== null && logFormat !== "json" && logFormat !== "pretty") {
    fail(
      "SWITCHBOARD_LOG_FORMAT",
      `must be json or pretty (got "${logFormat}"); unset, it is pretty on a terminal and JSON otherwise`,
      "SWITCHBOARD_LOG_FORMAT=json",
    );
  }
  const graceRaw = nonEmpty(env, "SWITCHBOARD_SHUTDOWN_GRACE_MS") ?? "10000";
  const shutdownGraceMs = Number(graceRaw);
  if (!Number.isInteger(shutdownGraceMs) || shutdownGraceMs < 0) {
    fail(
      "SWITCHBOARD_SHUTDOWN_GRACE_MS",
      `must be a whole number of milliseconds (got "${graceRaw}")`,
      "SWITCHBOARD_SHUTDOWN_GRACE_MS=10000",
    );
  }
  const holdRaw = nonEmpty(env, "SWITCHBOARD_AMBIGUOUS_HOLD_MS") ?? "300000";
  const ambiguousHoldMs = holdRaw === "forever" ? Number.POSITIVE_INFINITY : Number(holdRaw);
  if (
    !(
      ambiguousHoldMs === Number.POSITIVE_INFINITY ||
      (Number.isInteger(ambiguousHoldMs) && ambiguousHoldMs >= 0)
    )
  ) {
    fail(
      "SWITCHBOARD_AMBIGUOUS_HOLD_MS",
      `must be a whole number of milliseconds or "forever" (got "${holdRaw}")`,
      "SWITCHBOARD_AMBIGUOUS_HOLD_MS=300000",
    );
  }
  const operatorToken = nonEmpty(env, "SWITCHBOARD_OPERATOR_TOKEN") ?? null;
  if (operatorToken !== null && operatorToken.length < 16) {
    fail(
      "SWITCHBOARD_OPERATOR_TOKEN",
      "must be at least 16 characters",
      "SWITCHBOARD_OPERATOR_TOKEN=$(openssl rand -hex 24)",
    );
  }
  const operatorTokens = parseOperatorTokens(nonEmpty(env, "SWITCHBOARD_OPERATOR_TOKENS"), operatorToken);
  const { file, baseDir } = readFileConfig(nonEmpty(env, "SWITCHBOARD_CONFIG"));
  const agentDir = parseAgentDirs(env, file, baseDir);
  let instructions = nonEmpty(env, "SWITCHBOARD_INSTRUCTIONS") ?? file.instructions;
  const instructionsSource = nonEmpty(env, "SWITCHBOARD_INSTRUCTIONS")
    ? "env"
    : file.instructions || file.instructionsFile
      ? "config"
      : "default";
  if (!instructions && file.instructionsFile) {
    const path = resolve(baseDir, file.instructionsFile);
    if (!existsSync(path))
      fail(
        "SWITCHBOARD_CONFIG",
        `names instructionsFile ${path}, which does not exist`,
        '"instructionsFile": "./instructions.md"',
      );
    instructions = readFileSync(path, "utf8");
  }

  const secrets: string[] = [];
  const secret = (name: string) => {
    const value = nonEmpty(env, name);
    if (value) secrets.push(value);
    return value;
  };

  const database = parseDatabase(env, secrets);

  const telegramToken = secret("TELEGRAM_BOT_TOKEN");
  let telegram: TelegramSettings | null = null;
  if (telegramToken) {
    const mode = nonEmpty(env, "TELEGRAM_MODE") ?? "polling";
    if (mode !== "polling" && mode !== "webhook")
      fail("TELEGRAM_MODE", `must be polling or webhook (got "${mode}")`, "TELEGRAM_MODE=polling");
    const webhookUrl = parseUrl(env, "TELEGRAM_WEBHOOK_URL", "https://bot.example.com/telegram/webhook");
    const webhookSecret = secret("TELEGRAM_WEBHOOK_SECRET");
    if (mode === "webhook") {
      if (!webhookUrl)
        fail(
          "TELEGRAM_WEBHOOK_URL",
          "must be set when TELEGRAM_MODE=webhook",
          "TELEGRAM_WEBHOOK_URL=https://bot.example.com/telegram/webhook",
        );
      if (!webhookSecret)
        fail(
          "TELEGRAM_WEBHOOK_SECRET",
          "must be set when TELEGRAM_MODE=webhook",
          "TELEGRAM_WEBHOOK_SECRET=$(openssl rand -hex 24)",
        );
    }
    telegram = {
      token: telegramToken,
      mode,
      ...(parseUrl(env, "TELEGRAM_API_ROOT", "http://127.0.0.1:8081")
        ? { apiRoot: parseUrl(env, "TELEGRAM_API_ROOT", "")! }
        : {}),
      ...(webhookUrl ? { webhookUrl, webhookPath: new URL(webhookUrl).pathname } : {}),
      ...(webhookSecret ? { webhookSecret } : {}),
      requestTimeoutMs: parseRequestTimeout(env, "TELEGRAM_REQUEST_TIMEOUT_MS", 10_000),
      allowed: parseAllowList(env, "TELEGRAM_ALLOWED_USERS", "telegram"),
    };
  }

  const discordToken = secret("DISCORD_BOT_TOKEN");
  const discord: DiscordSettings | null = discordToken
    ? {
        token: discordToken,
        ...(parseUrl(env, "DISCORD_API_URL", "http://127.0.0.1:3000/api")
          ? { apiUrl: parseUrl(env, "DISCORD_API_URL", "")! }
          : {}),
        requestTimeoutMs: parseRequestTimeout(env, "DISCORD_REQUEST_TIMEOUT_MS", 15_000),
        allowed: parseAllowList(env, "DISCORD_ALLOWED_USERS", "discord"),
      }
    : null;

  const slackToken = secret("SLACK_BOT_TOKEN");
  let slack: SlackSettings | null = null;
  if (slackToken) {
    const appToken = secret("SLACK_APP_TOKEN");
    const signingSecret = secret("SLACK_SIGNING_SECRET");
    if (!appToken && !signingSecret) {
      fail(
        "SLACK_APP_TOKEN",
        "or SLACK_SIGNING_SECRET must be set with SLACK_BOT_TOKEN (Socket Mode or HTTP Events API)",
        "SLACK_APP_TOKEN=xapp-1-...",
      );
    }
    const apiUrl = parseUrl(env, "SLACK_API_URL", "http://127.0.0.1:3001/api");
    slack = {
      botToken: slackToken,
      mode: appToken ? "socket" : "http",
      ...(appToken ? { appToken } : {}),
      ...(signingSecret ? { signingSecret } : {}),
      ...(apiUrl ? { apiUrl: `${apiUrl}/` } : {}),
      allowed: parseAllowList(env, "SLACK_ALLOWED_USERS", "slack"),
    };
  }
  for (const name of ["OPENROUTER_API_KEY", "OPENAI_COMPATIBLE_API_KEY"]) secret(name);
  if (operatorToken) secrets.push(operatorToken);
  for (const { token } of operatorTokens) secrets.push(token);
  const metricsToken = secret("SWITCHBOARD_METRICS_TOKEN") ?? null;
  if (metricsToken !== null && metricsToken.length < 16) {
    fail(
      "SWITCHBOARD_METRICS_TOKEN",
      "must be at least 16 characters",
      "SWITCHBOARD_METRICS_TOKEN=$(openssl rand -hex 24)",
    );
  }
  const approvalSecret = secret("SWITCHBOARD_APPROVAL_SECRET") ?? null;
  if (approvalSecret !== null && approvalSecret.length < 16) {
    fail(
      "SWITCHBOARD_APPROVAL_SECRET",
      "must be at least 16 characters",
      "SWITCHBOARD_APPROVAL_SECRET=$(openssl rand -hex 32)",
    );
  }

  const host = nonEmpty(env, "SWITCHBOARD_HTTP_HOST") ?? "127.0.0.1";
  const publicUrl = parsePublicUrl(env);
  const web = parseWebChat(env, host, publicUrl, secret("SWITCHBOARD_WEB_TOKEN") ?? null);

  return {
    database,
    http: { host, port, publicUrl },
    logLevel,
    logFormat,
    operatorToken,
    operatorTokens,
    timezone: parseTimezone(nonEmpty(env, "SWITCHBOARD_TIMEZONE") ?? "UTC", "SWITCHBOARD_TIMEZONE"),
    instructions: instructions ?? DEFAULT_INSTRUCTIONS,
    instructionsSource,
    agentDir,
    shutdownGraceMs,
    ambiguousHoldMs,
    file,
    telegram,
    discord,
    slack,
    web,
    secrets,
    mcpEnv: referencedVariables(file, env, secrets),
    media: parseMedia(env),
    approvalSecret,
    metricsToken,
    webFetch: {
      enabled: onOff(env, "SWITCHBOARD_WEB_FETCH", true),
      allowPrivate: onOff(env, "SWITCHBOARD_FETCH_ALLOW_PRIVATE", false),
    },
    webSearch: parseWebSearch(env, secret("SWITCHBOARD_BRAVE_API_KEY")),
    modelEnv: {
      SWITCHBOARD_MODEL: env.SWITCHBOARD_MODEL,
      SWITCHBOARD_FALLBACK_MODELS: env.SWITCHBOARD_FALLBACK_MODELS,
      OPENROUTER_API_KEY: env.OPENROUTER_API_KEY,
      OPENROUTER_BASE_URL: env.OPENROUTER_BASE_URL,
      OPENAI_COMPATIBLE_BASE_URL: env.OPENAI_COMPATIBLE_BASE_URL,
      OPENAI_COMPATIBLE_API_KEY: env.OPENAI_COMPATIBLE_API_KEY,
    },
  };
}

/** At most one web_search backend: a SearXNG instance, or the Brave Search API with a key. */
function parseWebSearch(
  env: Record<string, string | undefined>,
  braveKey: string | undefined,
): SearchBackend | null {
  const searxng = parseUrl(env, "SWITCHBOARD_SEARXNG_URL", "http://127.0.0.1:8888");
  if (searxng && braveKey)
    fail(
      "SWITCHBOARD_SEARXNG_URL",
      "and SWITCHBOARD_BRAVE_API_KEY are both set; web_search uses one backend, so keep one of them",
      "SWITCHBOARD_SEARXNG_URL=http://127.0.0.1:8888",
    );
  if (searxng) return { kind: "searxng", url: searxng };
  if (braveKey) {
    const url = parseUrl(env, "SWITCHBOARD_BRAVE_API_URL", BRAVE_SEARCH_URL) ?? BRAVE_SEARCH_URL;
    return { kind: "brave", apiKey: braveKey, url };
  }
  return null;
}

const MODEL_INPUT_KINDS = ["text", "image", "file", "audio"] as const;

function parseMedia(env: Record<string, string | undefined>): MediaConfig {
  const maxRaw = nonEmpty(env, "SWITCHBOARD_MAX_FILE_MB") ?? "20";
  const maxMb = Number(maxRaw);
  if (!Number.isFinite(maxMb) || maxMb <= 0 || maxMb > 2000) {
    fail(
      "SWITCHBOARD_MAX_FILE_MB",
      `must be a number of megabytes above 0, at most 2000 (got "${maxRaw}")`,
      "SWITCHBOARD_MAX_FILE_MB=20",
    );
  }
  const conversationRaw = nonEmpty(env, "SWITCHBOARD_MAX_CONVERSATION_MB") ?? "500";
  const conversationMb = Number(conversationRaw);
  if (!Number.isFinite(conversationMb) || conversationMb <= 0) {
    fail(
      "SWITCHBOARD_MAX_CONVERSATION_MB",
      `must be a number of megabytes above 0 (got "${conversationRaw}")`,
      "SWITCHBOARD_MAX_CONVERSATION_MB=500",
    );
  }
  const audioRaw = nonEmpty(env, "SWITCHBOARD_MAX_AUDIO_MINUTES") ?? "10";
  const audioMinutes = Number(audioRaw);
  if (!Number.isFinite(audioMinutes) || audioMinutes <= 0 || audioMinutes > 600) {
    fail(
      "SWITCHBOARD_MAX_AUDIO_MINUTES",
      `must be a number of minutes above 0, at most 600 (got "${audioRaw}")`,
      "SWITCHBOARD_MAX_AUDIO_MINUTES=10",
    );
  }
  const retentionRaw = nonEmpty(env, "SWITCHBOARD_BLOB_RETENTION_DAYS");
  let blobRetentionMs: number | null = null;
  if (retentionRaw !== undefined && retentionRaw !== "off") {
    const days = Number(retentionRaw);
    if (!Number.isFinite(days) || days <= 0) {
      fail(
        "SWITCHBOARD_BLOB_RETENTION_DAYS",
        `must be a number of days above 0, or off (got "${retentionRaw}")`,
        "SWITCHBOARD_BLOB_RETENTION_DAYS=30",
      );
    }
    blobRetentionMs = Math.round(days * 24 * 60 * 60 * 1000);
  }
  const exportTtlRaw = nonEmpty(env, "SWITCHBOARD_EXPORT_TTL_HOURS") ?? "24";
  const exportTtlHours = Number(exportTtlRaw);
  if (!Number.isFinite(exportTtlHours) || exportTtlHours <= 0 || exportTtlHours > 24 * 365) {
    fail(
      "SWITCHBOARD_EXPORT_TTL_HOURS",
      `must be a number of hours above 0, at most 8760 (got "${exportTtlRaw}")`,
      "SWITCHBOARD_EXPORT_TTL_HOURS=24",
    );
  }
  const inputsRaw = nonEmpty(env, "SWITCHBOARD_MODEL_INPUTS");
  let modelInputs: MediaConfig["modelInputs"] = null;
  if (inputsRaw !== undefined) {
    const kinds = inputsRaw
      .split(",")
      .map((k) => k.trim())
      .filter((k) => k !== "");
    const unknown = kinds.filter((k) => !(MODEL_INPUT_KINDS as readonly string[]).includes(k));
    if (unknown.length > 0) {
      fail(
        "SWITCHBOARD_MODEL_INPUTS",
        `lists ${unknown.map((k) => `"${k}"`).join(", ")}; use a comma list of ${MODEL_INPUT_KINDS.join(", ")}`,
        "SWITCHBOARD_MODEL_INPUTS=text,image",
      );
    }
    modelInputs = new Set(kinds.filter((k): k is "image" | "file" | "audio" => k !== "text"));
  }
  const transcriptionModel = nonEmpty(env, "SWITCHBOARD_TRANSCRIPTION_MODEL") ?? null;
  if (transcriptionModel !== null && !transcriptionModel.startsWith("openai-compatible:")) {
    fail(
      "SWITCHBOARD_TRANSCRIPTION_MODEL",
      `must name an openai-compatible model, served at OPENAI_COMPATIBLE_BASE_URL (got "${transcriptionModel}")`,
      "SWITCHBOARD_TRANSCRIPTION_MODEL=openai-compatible:whisper-1",
    );
  }
  return {
    maxFileBytes: Math.round(maxMb * 1024 * 1024),
    maxConversationBytes: Math.round(conversationMb * 1024 * 1024),
    maxAudioSeconds: Math.round(audioMinutes * 60),
    blobRetentionMs,
    exportTtlMs: Math.round(exportTtlHours * 60 * 60 * 1000),
    modelInputs,
    transcriptionModel,
  };
}

/**
 * SWITCHBOARD_AGENT_DIR, and each surface's `agentDir` made absolute (relative to the config file).
 * A directory named explicitly must exist; the default ./agent may be absent.
 */
function parseAgentDirs(env: Record<string, string | undefined>, file: FileConfig, baseDir: string): string {
  const explicit = nonEmpty(env, "SWITCHBOARD_AGENT_DIR");
  const agentDir = resolve(explicit ?? "./agent");
  if (explicit !== undefined && !isDirectory(agentDir))
    fail(
      "SWITCHBOARD_AGENT_DIR",
      `points at ${agentDir}, which is not a directory (create it, or unset the variable to use ./agent when it exists)`,
      "SWITCHBOARD_AGENT_DIR=./agent",
    );
  for (const [key, surface] of Object.entries(file.surfaces)) {
    if (surface.agentDir === undefined) continue;
    const dir = resolve(baseDir, surface.agentDir);
    if (!isDirectory(dir))
      fail(
        "SWITCHBOARD_CONFIG",
        `gives surface ${key} the agentDir ${dir}, which is not a directory`,
        `"surfaces": {"${key}": {"agentDir": "./agents/support"}}`,
      );
    surface.agentDir = dir;
  }
  return agentDir;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Every agent directory the configuration names: the default one and the surfaces' own. */
export function agentDirsOf(config: Pick<GatewayConfig, "agentDir" | "file">): string[] {
  const dirs = new Set([config.agentDir]);
  for (const surface of Object.values(config.file.surfaces)) if (surface.agentDir) dirs.add(surface.agentDir);
  return [...dirs];
}

/** Who may use the web chat, for the HTTP server. */
export function webAccessFor(config: GatewayConfig): WebAccessPolicy {
  return webAccessPolicy({
    listenHost: config.http.host,
    publicUrl: config.http.publicUrl,
    token: config.web.token,
  });
}

function onOff(env: Record<string, string | undefined>, name: string, fallback: boolean): boolean {
  const raw = nonEmpty(env, name);
  if (raw === undefined) return fallback;
  if (raw !== "on" && raw !== "off")
    fail(name, `must be on or off (got "${raw}")`, `${name}=${fallback ? "off" : "on"}`);
  return raw === "on";
}

/** The ${VAR}s MCP headers name, with their values kept as secrets so no log line shows them. */
function referencedVariables(
  file: FileConfig,
  env: Record<string, string | undefined>,
  secrets: string[],
): Record<string, string | undefined> {
  const picked: Record<string, string | undefined> = {};
  for (const server of Object.values(file.mcpServers)) {
    if (!("headers" in server)) continue;
    for (const value of Object.values(server.headers)) {
      for (const [, name] of value.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
        picked[name!] = env[name!];
        if (env[name!]) secrets.push(env[name!]!);
      }
    }
  }
  return picked;
}

/** The pickable models of `models`, name → spec, without the `default` key. */
export function pickableModels(file: FileConfig): Record<string, string> {
  const named: Record<string, string> = {};
  for (const [name, spec] of Object.entries(file.models)) {
    if (name !== "default" && typeof spec === "string") named[name] = spec;
  }
  return named;
}

/**
 * The model name `models.default` gives `channel:surface` (exact key, then `channel:*`, then
 * `*:surface`, then `*:*`), or null: the gateway's own model (SWITCHBOARD_MODEL).
 */
export function defaultModelName(
  file: FileConfig,
  channel: ChannelName,
  surface: SurfaceKind,
): string | null {
  const fallback = file.models.default;
  if (fallback === undefined) return null;
  if (typeof fallback === "string") return fallback;
  return (
    fallback[`${channel}:${surface}`] ??
    fallback[`${channel}:*`] ??
    fallback[`*:${surface}`] ??
    fallback["*:*"] ??
    null
  );
}

/** The policy for `channel:surface`: exact key, then `channel:*`, then `*:surface`, then `*:*`, over the defaults. */
export function surfacePolicy(file: FileConfig, channel: ChannelName, surface: SurfaceKind): SurfacePolicy {
  const base = DEFAULT_SURFACES[surface];
  const overrides = [
    file.surfaces["*:*"],
    file.surfaces[`*:${surface}`],
    file.surfaces[`${channel}:*`],
    file.surfaces[`${channel}:${surface}`],
  ];
  let policy: SurfacePolicy = { ...base };
  for (const o of overrides) {
    if (!o) continue;
    policy = {
      inputPolicy: o.inputPolicy ?? policy.inputPolicy,
      delivery: o.delivery ?? policy.delivery,
      requireMention: o.requireMention ?? policy.requireMention,
      nativeStreaming: o.nativeStreaming ?? policy.nativeStreaming,
      ...((o.tools ?? policy.tools) ? { tools: o.tools ?? policy.tools } : {}),
      ...((o.historyScope ?? policy.historyScope)
        ? { historyScope: o.historyScope ?? policy.historyScope }
        : {}),
      ...((o.agentDir ?? policy.agentDir) ? { agentDir: o.agentDir ?? policy.agentDir } : {}),
      approvers: o.approvers ?? policy.approvers,
      messagesPerMinute: o.messagesPerMinute ?? policy.messagesPerMinute,
      ...((o.instructions ?? policy.instructions)
        ? { instructions: o.instructions ?? policy.instructions }
        : {}),
    };
  }
  return policy;
}
