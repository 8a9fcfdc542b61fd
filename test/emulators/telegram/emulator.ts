/**
 * A Telegram Bot API emulator on 127.0.0.1 for grammY and for out-of-process gateway tests.
 * `url` is the apiRoot to give grammY; test controls are methods here and JSON under /__control/.
 */
import type { Chat, Message, Update, User } from "grammy/types";
import { resetConnection } from "../fault-plan.ts";
import {
  type ApiAnswer,
  BotApi,
  type Params,
  type UploadedFile,
  type WebhookRegistration,
} from "./bot-api.ts";
import {
  botUser,
  editedMessageUpdate,
  type MessageSpec,
  message,
  messageUpdate,
  type UpdateBody,
} from "./builders.ts";
import { type ChatState, ChatStore, type VisibleMessage } from "./chats.ts";
import { handleControlRequest } from "./control.ts";
import { type Fault, FaultPlan } from "./faults.ts";
import { EmulatedFiles } from "./files.ts";
import { BotCommandMenus } from "./menus.ts";
import {
  preciseNow,
  type RateLimitConfig,
  RateLimiter,
  type RateLimitStats,
  TELEGRAM_RATE_LIMITS,
} from "./rate-limit.ts";
import { UpdateQueue } from "./update-queue.ts";
import { type WebhookAttempt, WebhookDelivery, type WebhookDeliveryOptions } from "./webhook.ts";

export interface TelegramEmulatorOptions {
  /** Default "123456789:AAEmulatorTokenForTests_abcdefghijk". */
  token?: string;
  /** The bot getMe returns. Default id 123456789, username "switchboard_test_bot". */
  bot?: User;
  /** Enforce Telegram-like flood limits (off by default). */
  rateLimits?: boolean | Partial<RateLimitConfig>;
  webhook?: Partial<WebhookDeliveryOptions>;
  firstUpdateId?: number;
  /**
   * Milliseconds since epoch; used for dates, the transcript and rate limits. Default `Date.now`,
   * and `preciseNow` (sub-millisecond) for the rate limits.
   */
  now?: () => number;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
}

export interface ApiCall {
  seq: number;
  method: string;
  params: Params;
  atMs: number;
  /** The fault that answered instead of the method, if any. */
  fault?: Fault["kind"];
  /** Filled in when answered; undefined while hung or for a reset connection. */
  response?: ApiAnswer;
  answeredAtMs?: number;
}

export type IncomingSpec = Omit<MessageSpec, "messageId"> & { messageId?: number };

export const DEFAULT_TOKEN = "123456789:AAEmulatorTokenForTests_abcdefghijk";

export class TelegramEmulator {
  /** Files getFile describes and /file/bot<token>/… serves; tests add them. */
  readonly files = new EmulatedFiles();
  readonly token: string;
  readonly bot: User;
  readonly calls: ApiCall[] = [];
  readonly faults = new FaultPlan();
  /** The bot's command menus as setMyCommands left them, by scope and language. */
  readonly menus = new BotCommandMenus();
  private readonly chats = new ChatStore();
  private readonly queue: UpdateQueue;
  private readonly webhook: WebhookDelivery;
  private readonly api: BotApi;
  private readonly now: () => number;
  /** The flood limiter's clock: `now` when given, else sub-millisecond wall time (like Telegram's). */
  private readonly rateNow: () => number;
  private readonly rateLimitConfig: RateLimitConfig;
  private limiter: RateLimiter | null;
  private server: ReturnType<typeof Bun.serve> | null = null;
  private readonly port: number;
  private readonly pendingRequests = new Set<Promise<unknown>>();
  /** The other bots this server answers for, by token (addBot). */
  private readonly otherBots = new Map<string, TelegramEmulator>();
  /** The emulator whose server answers for this bot, when it was made by addBot. */
  private host: TelegramEmulator | null = null;

  constructor(options: TelegramEmulatorOptions = {}) {
    this.token = options.token ?? DEFAULT_TOKEN;
    this.port = options.port ?? 0;
    this.bot =
      options.bot ?? botUser(Number(this.token.split(":")[0]), "switchboard_test_bot", "Switchboard");
    this.now = options.now ?? Date.now;
    this.rateNow = options.now ?? preciseNow;
    this.queue = new UpdateQueue(options.firstUpdateId ?? 100_001);
    this.webhook = new WebhookDelivery(
      this.queue,
      { maxAttempts: 5, firstRetryDelayMs: 50, attemptTimeoutMs: 10_000, ...options.webhook },
      this.now,
    );
    const custom = typeof options.rateLimits === "object" ? options.rateLimits : {};
    this.rateLimitConfig = { ...TELEGRAM_RATE_LIMITS, ...custom };
    this.limiter = options.rateLimits ? new RateLimiter(this.rateLimitConfig, this.rateNow) : null;
    this.api = new BotApi({
      bot: this.bot,
      chats: this.chats,
      queue: this.queue,
      rateLimiter: () => this.limiter,
      webhook: {
        current: () => this.webhook.current(),
        set: (registration) => this.webhook.set(registration),
        clear: () => this.webhook.clear(),
      },
      now: this.now,
      menus: this.menus,
    });
  }

  /** The apiRoot for grammY (`new Bot(token, { client: { apiRoot: emulator.url } })`). */
  get url(): string {
    if (this.host) return this.host.url;
    if (!this.server)
      throw new Error("The emulator is not listening: call start() (or startTelegramEmulator()) first");
    return `http://127.0.0.1:${this.server.port}`;
  }

  /**
   * Another bot on this emulator's server (same `url`), by its own token: its own updates, calls,
   * faults, flood limits and chats (Telegram shows a bot only its own chats and messages). Its
   * controls are the returned emulator's methods; `close()` of this one closes it too.
   */
  addBot(options: Omit<TelegramEmulatorOptions, "port"> & { token: string }): TelegramEmulator {
    if (options.token === this.token || this.otherBots.has(options.token))
      throw new Error("addBot: this emulator already serves a bot with that token");
    const bot = new TelegramEmulator(options);
    bot.host = this;
    this.otherBots.set(bot.token, bot);
    return bot;
  }

  start(): this {
    if (this.host) throw new Error("A bot made by addBot is served by its host emulator: start that one");
    this.server = Bun.serve({
      hostname: "127.0.0.1",
      port: this.port,
      // Long polls and hung calls outlive Bun's default 10 s idle timeout.
      idleTimeout: 0,
      fetch: (request) => {
        const handling = this.route(request);
        this.pendingRequests.add(handling);
        void handling.finally(() => this.pendingRequests.delete(handling));
        return handling;
      },
    });
    return this;
  }

  /** Ends every connection (long polls and hung calls included) so the test process can exit. */
  async close(): Promise<void> {
    for (const bot of this.otherBots.values()) await bot.close();
    this.webhook.close();
    this.queue.releaseWaiter();
    this.faults.releaseHung();
    const server = this.server;
    this.server = null;
    await server?.stop(true);
  }

  // ── updates ──────────────────────────────────────────────────────────────

  /** Queues an update (assigning update_id unless given); delivered by getUpdates or webhook. */
  pushUpdate(update: UpdateBody): Update {
    const message = update.message ?? update.edited_message;
    if (message) this.chats.remember(message.chat);
    return this.queue.push(update);
  }

  /**
   * `from` presses an inline button under the bot's message `messageId`: a callback_query update
   * with that button's callback_data, or with `forgedData` (a client sending what no button
   * carries). Returns the update and the query id the bot must answer.
   */
  press(
    chatId: number,
    messageId: number,
    from: User,
    button: { label: string } | { forgedData: string },
  ): { update: Update; queryId: string } {
    const visible = this.chats.get(chatId)?.messages.get(messageId);
    if (!visible) throw new Error(`press: message ${messageId} is not visible in chat ${chatId}`);
    let data: string;
    if ("forgedData" in button) data = button.forgedData;
    else {
      const found = visible.buttons?.flat().find((b) => b.text === button.label);
      if (!found) throw new Error(`press: message ${messageId} has no button "${button.label}"`);
      data = found.callbackData;
    }
    this.callbackCounter += 1;
    const queryId = `${chatId}${messageId}${this.callbackCounter}`.slice(-18);
    this.api.openCallbackQueries.add(queryId);
    const update = this.pushUpdate({
      callback_query: {
        id: queryId,
        from,
        message: visible.raw,
        chat_instance: String(chatId),
        data,
      },
    } as UpdateBody);
    return { update, queryId };
  }

  /** The bot's reaction on message `messageId` of chat `chatId` now (empty: none). */
  reactionsOn(chatId: number, messageId: number): string[] {
    return [...(this.api.reactions.get(`${chatId}:${messageId}`) ?? [])];
  }

  /** The answers the bot gave to button presses, in order. */
  callbackAnswers(): Array<{ id: string; text: string }> {
    return [...this.api.callbackAnswers];
  }

  private callbackCounter = 0;

  /** A user (or bot) writes a message: it gets the chat's next message_id and becomes visible. */
  incoming(spec: IncomingSpec): { update: Update; message: Message } {
    this.chats.remember(spec.chat);
    const messageId = spec.messageId ?? this.chats.allocateMessageId(spec.chat.id);
    if (spec.topic && !this.chats.get(spec.chat.id)?.topics.has(spec.topic.threadId)) {
      this.chats.addTopic(spec.chat.id, spec.topic.threadId, spec.topic.name);
    }
    const msg = message({ dateSeconds: Math.floor(this.now() / 1000), ...spec, messageId });
    this.chats.recordIncoming(msg, this.now());
    return { update: this.pushUpdate(messageUpdate(msg)), message: msg };
  }

  /** The author edits a message they wrote: an edited_message update with a fresh edit_date. */
  incomingEdit(
    chatId: number,
    messageId: number,
    newText: string,
  ): { update: Update; editDateSeconds: number } {
    const existing = this.chats.get(chatId)?.messages.get(messageId);
    if (!existing) throw new Error(`incomingEdit: message ${messageId} is not visible in chat ${chatId}`);
    const editDateSeconds = Math.max(
      Math.floor(this.now() / 1000),
      (existing.raw.edit_date ?? existing.raw.date) + 1,
    );
    const body = editedMessageUpdate(existing.raw, newText, editDateSeconds);
    existing.previousVersions.push({ text: existing.text, parseMode: undefined, atMs: existing.sentAtMs });
    existing.text = newText;
    existing.visibleText = newText;
    existing.raw = body.edited_message as Message;
    return { update: this.pushUpdate(body), editDateSeconds };
  }

  /** Queues an already pushed update again: a replay (or a duplicate if still pending). */
  deliverAgain(updateId: number): Update {
    return this.queue.deliverAgain(updateId);
  }

  pendingUpdateIds(): number[] {
    return this.queue.pendingIds();
  }

  confirmedUpdateIds(): number[] {
    return [...this.queue.confirmedIds];
  }

  droppedUpdateIds(): number[] {
    return [...this.queue.droppedIds];
  }

  webhookRegistration(): WebhookRegistration | null {
    return this.webhook.current();
  }

  webhookAttempts(): WebhookAttempt[] {
    return [...this.webhook.attempts];
  }

  // ── chats ────────────────────────────────────────────────────────────────

  /** Makes a chat known (the bot can send to it) without any message in it. */
  addChat(chat: Chat): void {
    this.chats.remember(chat);
  }

  addTopic(chatId: number, threadId: number, name: string): void {
    this.chats.addTopic(chatId, threadId, name);
  }

  /** The user blocks the bot: sends to their private chat answer 403. */
  blockBot(userId: number): void {
    this.chats.block(userId);
  }

  /** Messages a member of the chat sees now, oldest first. */
  messages(chatId: number): VisibleMessage[] {
    return this.chats.visibleMessages(chatId);
  }

  chat(chatId: number): ChatState | undefined {
    return this.chats.get(chatId);
  }

  /** Every chat this bot knows (it was written to there, or the test added it), in no order. */
  chatIds(): number[] {
    return this.chats.ids();
  }

  // ── faults and limits ────────────────────────────────────────────────────

  /** The next `times` calls of `method` answer with `fault`. */
  injectFault(method: string, fault: Fault, times = 1): void {
    this.faults.add(method, fault, times);
  }

  /** Answers every hung call now (normally, as if the server had just been slow). */
  releaseHung(): void {
    this.faults.releaseHung();
  }

  /** Calls held by a `hang` fault right now. */
  hungCount(): number {
    return this.faults.hungCount();
  }

  setRateLimits(enabled: boolean): void {
    this.limiter = enabled ? (this.limiter ?? new RateLimiter(this.rateLimitConfig, this.rateNow)) : null;
  }

  rateLimitStats(): RateLimitStats | null {
    return this.limiter?.snapshot() ?? null;
  }

  // ── waiting ──────────────────────────────────────────────────────────────

  /** Resolves with the probe's first truthy value; rejects after timeoutMs naming `what`. */
  async waitFor<T>(
    probe: () => T | undefined | null | false,
    timeoutMs: number,
    what = "condition",
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value) return value;
      if (Date.now() >= deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
      await Bun.sleep(5);
    }
  }

  waitForCall(
    method: string,
    predicate: (call: ApiCall) => boolean = () => true,
    timeoutMs = 2_000,
  ): Promise<ApiCall> {
    return this.waitFor(
      () => this.calls.find((call) => call.method === method && predicate(call)),
      timeoutMs,
      `a ${method} call`,
    );
  }

  waitForMessage(
    chatId: number,
    predicate: (message: VisibleMessage) => boolean = () => true,
    timeoutMs = 2_000,
  ): Promise<VisibleMessage> {
    return this.waitFor(
      () => this.messages(chatId).find((m) => m.fromBot && predicate(m)),
      timeoutMs,
      `a bot message in chat ${chatId}`,
    );
  }

  waitForConfirmed(updateId: number, timeoutMs = 2_000): Promise<true> {
    return this.waitFor(
      () => this.queue.confirmedIds.includes(updateId) || undefined,
      timeoutMs,
      `update ${updateId} to be confirmed`,
    );
  }

  callsOf(method: string): ApiCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  // ── HTTP ─────────────────────────────────────────────────────────────────

  private async route(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/__control/")) return await handleControlRequest(this, request, url);
    const other = this.otherBots.get(/^\/(?:file\/)?bot([^/]+)\//.exec(url.pathname)?.[1] ?? "");
    if (other) return await other.route(request);
    const download = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (download) {
      if (download[1] !== this.token)
        return json({ ok: false, error_code: 401, description: "Unauthorized" }, 401);
      return this.files.serve(download[2] ?? "");
    }
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!match) return json(apiNotFound(), 404);
    const [, token, method = ""] = match;
    let params: Params;
    try {
      params = await readParams(request, url);
    } catch {
      return json({ ok: false, error_code: 400, description: "Bad Request: can't parse JSON" }, 400);
    }
    const call: ApiCall = { seq: this.calls.length + 1, method, params, atMs: this.now() };
    this.calls.push(call);
    if (token !== this.token)
      return this.answer(call, { ok: false, error_code: 401, description: "Unauthorized" });
    if (method === "getFile") return this.answer(call, this.files.getFile(params));
    if (!this.api.has(method)) return this.answer(call, apiNotFound());

    const fault = this.faults.take(method);
    if (fault) call.fault = fault.kind;
    switch (fault?.kind) {
      case "rate_limited":
        return this.answer(call, {
          ok: false,
          error_code: 429,
          description: `Too Many Requests: retry after ${fault.retryAfterSeconds}`,
          parameters: { retry_after: fault.retryAfterSeconds },
        });
      case "server_error":
        return this.answer(call, {
          ok: false,
          error_code: fault.status ?? 500,
          description: fault.description ?? "Internal Server Error",
        });
      case "api_error":
        return this.answer(call, {
          ok: false,
          error_code: fault.status,
          description: fault.description,
          ...(fault.parameters ? { parameters: fault.parameters } : {}),
        });
      case "reset":
        return resetConnection();
      case "hang":
        await this.faults.hang();
        if (!this.server) return resetConnection();
        break;
      case "reset_after_effect":
        call.response = await this.api.call(method, params, request.signal);
        return resetConnection();
      case undefined:
        break;
    }
    return this.answer(call, await this.api.call(method, params, request.signal));
  }

  private answer(call: ApiCall, response: ApiAnswer): Response {
    call.response = response;
    call.answeredAtMs = this.now();
    return json(response, response.ok ? 200 : response.error_code);
  }
}

/** Creates and starts an emulator; remember `await emulator.close()` in afterEach/afterAll. */
export function startTelegramEmulator(options: TelegramEmulatorOptions = {}): TelegramEmulator {
  return new TelegramEmulator(options).start();
}

function apiNotFound(): ApiAnswer {
  return { ok: false, error_code: 404, description: "Not Found" };
}

export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/** Bot API parameters from the query string, a JSON body, or a form (nested values are JSON strings). */
async function readParams(request: Request, url: URL): Promise<Params> {
  const params: Params = {};
  for (const [key, value] of url.searchParams) params[key] = parseLoose(value);
  if (request.method !== "POST") return params;
  const type = request.headers.get("content-type") ?? "";
  if (type.includes("application/json")) {
    const text = await request.text();
    if (text.trim() !== "") Object.assign(params, JSON.parse(text) as Params);
  } else if (type.includes("form")) {
    const form = await request.formData();
    for (const [key, value] of form.entries()) {
      if (typeof value === "string") {
        params[key] = parseLoose(value);
        continue;
      }
      const part = value as unknown as File;
      params[key] = {
        filename: part.name,
        bytes: new Uint8Array(await part.arrayBuffer()),
      } satisfies UploadedFile;
    }
  }
  return params;
}

function parseLoose(value: string): unknown {
  if (/^[[{]/.test(value) || value === "true" || value === "false") {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}
