import type { AssistantBoard } from "./assistant-threads.ts";
import type { ChannelRateLimiter } from "./faults.ts";
import type { MessageBoard } from "./message-board.ts";
import type { EphemeralMessage, SlackBlock, SlackIdentity, TokenKind, VisibleMessage } from "./types.ts";

/** Largest file the emulator takes (Slack's own limit is 1 GB). */
export const MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;

/** Slack's limit for markdown_text in the streaming methods. */
export const MAX_STREAM_MARKDOWN_CHARS = 12_000;

export interface WebApiAnswer {
  status: number;
  headers?: Record<string, string>;
  body: { ok: boolean; error?: string } & Record<string, unknown>;
}

export interface ChannelStates {
  archived: Set<string>;
  /** Channels the bot is not a member of. */
  notIn: Set<string>;
}

export interface WebApiContext {
  identity: SlackIdentity;
  board: MessageBoard;
  /** The bot's reactions, by `<channel>:<ts>` of the message, in the order added. */
  reactions: Map<string, string[]>;
  ephemerals: EphemeralMessage[];
  rateLimiter: ChannelRateLimiter;
  channels: ChannelStates;
  /** Issues a single-use Socket Mode URL. */
  openSocketUrl(): string;
  /** Files announced by files.getUploadURLExternal, by id; `bytes` once uploaded. */
  uploads: Map<string, PendingUpload>;
  /** Where the bytes of file `id` are POSTed. */
  uploadUrl(id: string): string;
  /** Assistant threads: their status, title and suggested prompts, and the feature switch. */
  assistant: AssistantBoard;
}

export interface PendingUpload {
  filename: string;
  length: number;
  bytes?: Uint8Array;
  completed: boolean;
}

type Params = Record<string, string>;
type MethodHandler = (params: Params, ctx: WebApiContext) => WebApiAnswer;

const ok = (fields: Record<string, unknown> = {}): WebApiAnswer => ({
  status: 200,
  body: { ok: true, ...fields },
});
const fail = (error: string): WebApiAnswer => ({ status: 200, body: { ok: false, error } });

/** Methods that need the app-level token (xapp-) instead of the bot token. */
const APP_TOKEN_METHODS = new Set(["apps.connections.open"]);

/** Runs one Web API method after the token was classified. Unknown methods answer unknown_method. */
export function answerWebApiCall(
  method: string,
  params: Params,
  tokenKind: TokenKind,
  ctx: WebApiContext,
): WebApiAnswer {
  if (tokenKind === "missing") return fail("not_authed");
  if (tokenKind === "invalid") return fail("invalid_auth");
  const wantsAppToken = APP_TOKEN_METHODS.has(method);
  if (wantsAppToken !== (tokenKind === "app")) return fail("not_allowed_token_type");
  const assistant = ctx.assistant.answer(method, params);
  if (assistant !== null) return assistant.ok ? ok(assistant.fields) : fail(assistant.error);
  const handler = HANDLERS[method];
  return handler === undefined ? fail("unknown_method") : handler(params, ctx);
}

const HANDLERS: Record<string, MethodHandler> = {
  "auth.test": (_params, { identity }) =>
    ok({
      url: "https://switchboard-emulated.slack.com/",
      team: identity.teamName,
      user: "switchboard",
      team_id: identity.teamId,
      user_id: identity.botUserId,
      bot_id: identity.botId,
      app_id: identity.appId,
      // An org-wide install's token answers with the org's id as team_id.
      ...(identity.enterpriseId === undefined ? {} : { enterprise_id: identity.enterpriseId }),
      is_enterprise_install: identity.isEnterpriseInstall === true,
    }),

  "apps.connections.open": (_params, ctx) => ok({ url: ctx.openSocketUrl() }),

  "conversations.info": (params, ctx) => {
    const problem = channelProblem(params.channel, ctx, { requireMember: false });
    if (problem !== null) return fail(problem);
    const id = params.channel ?? "";
    return ok({
      channel: {
        id,
        name: id.startsWith("D") ? undefined : `channel-${id.toLowerCase()}`,
        is_channel: id.startsWith("C"),
        is_group: id.startsWith("G"),
        is_im: id.startsWith("D"),
        is_archived: ctx.channels.archived.has(id),
        is_member: !ctx.channels.notIn.has(id),
      },
    });
  },

  "chat.postMessage": (params, ctx) => {
    const problem = channelProblem(params.channel, ctx, { requireMember: true });
    if (problem !== null) return fail(problem);
    const channel = params.channel ?? "";
    const text = params.text ?? "";
    if (text.length === 0 && params.blocks === undefined) return fail("no_text");
    const blocks = parseBlocks(params.blocks);
    if (blocks === "invalid") return fail("invalid_blocks");
    const retryAfterSeconds = ctx.rateLimiter.admit(channel);
    if (retryAfterSeconds !== null) return rateLimited(retryAfterSeconds);
    const message = ctx.board.post({
      channel,
      text,
      threadTs: params.thread_ts,
      mrkdwn: params.mrkdwn !== "false",
      ...(blocks === undefined ? {} : { blocks }),
    });
    ctx.assistant.botPosted(channel, params.thread_ts);
    const warning = message.truncated ? { warning: "message_truncated" } : {};
    return ok({ channel, ts: message.ts, message: messageJson(message, ctx.identity), ...warning });
  },

  "files.getUploadURLExternal": (params, ctx) => {
    const length = Number(params.length);
    if (!params.filename) return fail("invalid_arguments");
    if (!Number.isInteger(length) || length <= 0) return fail("invalid_arguments");
    if (length > MAX_UPLOAD_BYTES) return fail("file_too_large");
    const id = `F${String(ctx.uploads.size + 1).padStart(10, "0")}`;
    ctx.uploads.set(id, { filename: params.filename, length, completed: false });
    return ok({ upload_url: ctx.uploadUrl(id), file_id: id });
  },

  "files.completeUploadExternal": (params, ctx) => {
    let files: Array<{ id?: string; title?: string }>;
    try {
      files = JSON.parse(params.files ?? "") as Array<{ id?: string; title?: string }>;
    } catch {
      return fail("invalid_arguments");
    }
    if (!Array.isArray(files) || files.length === 0) return fail("invalid_arguments");
    const pending = files.map((f) => ({ file: f, upload: ctx.uploads.get(f.id ?? "") }));
    if (pending.some((p) => p.upload?.bytes === undefined || p.upload.completed))
      return fail("file_not_found");
    const channel = params.channel_id;
    if (channel !== undefined) {
      const problem = channelProblem(channel, ctx, { requireMember: true });
      if (problem !== null) return fail(problem);
      const retryAfterSeconds = ctx.rateLimiter.admit(channel);
      if (retryAfterSeconds !== null) return rateLimited(retryAfterSeconds);
    }
    for (const p of pending) p.upload!.completed = true;
    const shared = pending.map((p) => ({
      id: p.file.id!,
      title: p.file.title ?? p.upload!.filename,
      filename: p.upload!.filename,
      bytes: p.upload!.bytes!,
    }));
    if (channel !== undefined) {
      const message = ctx.board.post({
        channel,
        text: params.initial_comment ?? "",
        threadTs: params.thread_ts,
        mrkdwn: true,
      });
      message.files = shared;
    }
    return ok({
      files: shared.map((f) => ({ id: f.id, title: f.title, name: f.filename, size: f.bytes.length })),
    });
  },

  "chat.update": (params, ctx) => {
    const problem = channelProblem(params.channel, ctx, { requireMember: true });
    if (problem !== null) return fail(problem);
    const blocks = parseBlocks(params.blocks);
    if (blocks === "invalid") return fail("invalid_blocks");
    const result = ctx.board.update(params.channel ?? "", params.ts ?? "", params.text ?? "", blocks);
    if (typeof result === "string") return fail(result);
    return ok({
      channel: result.channel,
      ts: result.ts,
      text: result.text,
      message: messageJson(result, ctx.identity),
    });
  },

  "chat.postEphemeral": (params, ctx) => {
    const problem = channelProblem(params.channel, ctx, { requireMember: true });
    if (problem !== null) return fail(problem);
    if (!params.user) return fail("user_not_in_channel");
    const text = params.text ?? "";
    if (text.length === 0) return fail("no_text");
    ctx.ephemerals.push({
      channel: params.channel ?? "",
      user: params.user,
      text,
      ...(params.thread_ts === undefined ? {} : { threadTs: params.thread_ts }),
    });
    return ok({
      message_ts: `${Math.floor(Date.now() / 1000)}.${String(ctx.ephemerals.length).padStart(6, "0")}`,
    });
  },

  "reactions.add": (params, ctx) => {
    const problem = channelProblem(params.channel, ctx, { requireMember: true });
    if (problem !== null) return fail(problem);
    if (!params.timestamp) return fail("no_item_specified");
    if (!params.name) return fail("invalid_name");
    const key = `${params.channel}:${params.timestamp}`;
    const names = ctx.reactions.get(key) ?? [];
    if (names.includes(params.name)) return fail("already_reacted");
    ctx.reactions.set(key, [...names, params.name]);
    return ok();
  },

  "reactions.remove": (params, ctx) => {
    const problem = channelProblem(params.channel, ctx, { requireMember: true });
    if (problem !== null) return fail(problem);
    const key = `${params.channel}:${params.timestamp}`;
    const names = ctx.reactions.get(key) ?? [];
    if (!params.name || !names.includes(params.name)) return fail("no_reaction");
    ctx.reactions.set(
      key,
      names.filter((name) => name !== params.name),
    );
    return ok();
  },

  "chat.delete": (params, ctx) => {
    const problem = channelProblem(params.channel, ctx, { requireMember: true });
    if (problem !== null) return fail(problem);
    const error = ctx.board.delete(params.channel ?? "", params.ts ?? "");
    return error === null ? ok({ channel: params.channel, ts: params.ts }) : fail(error);
  },

  "chat.startStream": (params, ctx) => {
    const problem = channelProblem(params.channel, ctx, { requireMember: true });
    if (problem !== null) return fail(problem);
    if (params.thread_ts === undefined) return fail("invalid_arguments");
    const text = streamText(params);
    if (text === null) return fail("invalid_arguments");
    if (text.length > MAX_STREAM_MARKDOWN_CHARS) return fail("msg_too_long");
    const channel = params.channel ?? "";
    const retryAfterSeconds = ctx.rateLimiter.admit(channel);
    if (retryAfterSeconds !== null) return rateLimited(retryAfterSeconds);
    const message = ctx.board.post({ channel, text, threadTs: params.thread_ts, mrkdwn: true }, "streaming");
    ctx.assistant.botPosted(channel, params.thread_ts);
    return ok({ channel, ts: message.ts });
  },

  "chat.appendStream": (params, ctx) => appendToStream(params, ctx, false),
  "chat.stopStream": (params, ctx) => appendToStream(params, ctx, true),
};

function appendToStream(params: Params, ctx: WebApiContext, stop: boolean): WebApiAnswer {
  const text = streamText(params);
  if (text === null) return fail("invalid_arguments");
  if (text.length > MAX_STREAM_MARKDOWN_CHARS) return fail("msg_too_long");
  const result = ctx.board.append(params.channel ?? "", params.ts ?? "", text, stop);
  if (typeof result === "string") return fail(result);
  const message = stop ? { message: messageJson(result, ctx.identity) } : {};
  return ok({ channel: result.channel, ts: result.ts, ...message });
}

/** markdown_text, or the markdown_text chunks web-api 8.2 sends as a JSON string; null if malformed. */
function streamText(params: Params): string | null {
  let text = params.markdown_text ?? "";
  if (params.chunks !== undefined) {
    let chunks: unknown;
    try {
      chunks = JSON.parse(params.chunks);
    } catch {
      return null;
    }
    if (!Array.isArray(chunks)) return null;
    for (const chunk of chunks) {
      if (typeof chunk === "object" && chunk !== null && chunk.type === "markdown_text") {
        text += typeof chunk.text === "string" ? chunk.text : "";
      }
    }
  }
  return text;
}

function channelProblem(
  channel: string | undefined,
  ctx: WebApiContext,
  { requireMember }: { requireMember: boolean },
): string | null {
  if (channel === undefined || !/^[CDG][A-Z0-9]{2,}$/.test(channel)) return "channel_not_found";
  if (ctx.channels.archived.has(channel)) return "is_archived";
  if (requireMember && ctx.channels.notIn.has(channel)) return "not_in_channel";
  return null;
}

export function rateLimited(retryAfterSeconds: number): WebApiAnswer {
  return {
    status: 429,
    headers: { "retry-after": String(retryAfterSeconds) },
    body: { ok: false, error: "ratelimited" },
  };
}

function messageJson(message: VisibleMessage, identity: SlackIdentity): Record<string, unknown> {
  return {
    type: "message",
    user: message.user,
    bot_id: message.botId,
    app_id: identity.appId,
    text: message.text,
    ts: message.ts,
    thread_ts: message.threadTs,
    team: identity.teamId,
    edited: message.edited ? { user: message.user, ts: message.ts } : undefined,
  };
}

/**
 * `blocks` as web-api sends it (a JSON string in a form body); buttons need an action_id of at
 * most 255 characters, unique in the message, as Slack checks.
 */
function parseBlocks(raw: string | undefined): SlackBlock[] | undefined | "invalid" {
  if (raw === undefined) return undefined;
  let blocks: unknown;
  try {
    blocks = typeof raw === "string" ? JSON.parse(raw) : raw;
  } catch {
    return "invalid";
  }
  if (!Array.isArray(blocks) || blocks.length > 50) return "invalid";
  const actionIds = new Set<string>();
  for (const block of blocks as Array<Record<string, unknown>>) {
    if (typeof block !== "object" || block === null || typeof block.type !== "string") return "invalid";
    if (block.type !== "actions") continue;
    const elements = block.elements;
    if (!Array.isArray(elements) || elements.length === 0 || elements.length > 25) return "invalid";
    for (const element of elements as Array<Record<string, unknown>>) {
      const id = element.action_id;
      if (typeof id !== "string" || id.length === 0 || id.length > 255 || actionIds.has(id)) return "invalid";
      actionIds.add(id);
    }
  }
  return blocks as SlackBlock[];
}
