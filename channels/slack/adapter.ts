import { SocketModeReceiver } from "@slack/bolt";
import { SwitchboardError } from "../../src/errors.ts";
import { type Clock, systemClock } from "../../src/util/clock.ts";
import type { Logger } from "../../src/util/log.ts";
import type { CommandMenu } from "../commands.ts";
import { downloadFile, httpUrl } from "../download.ts";
import type {
  ChannelAdapter,
  ChannelCapabilities,
  ChannelFiles,
  ChannelLimits,
  HttpRoute,
  InboundMessage,
  Ingress,
  IngressOutcome,
  NativeStream,
  OutgoingMessage,
  RemoteFile,
  ReplyStatus,
  SendReceipt,
} from "../types.ts";
import { AssistantThreads } from "./assistant.ts";
import { AckAfterListenersApp, GatewayHttpReceiver } from "./bolt-app.ts";
import { boltLogger } from "./bolt-logger.ts";
import { configuredAccount, parseSlackConfig, type SlackConfig } from "./config.ts";
import { toSwitchboardError } from "./errors.ts";
import { createEventsRoute } from "./http-route.ts";
import { decodeReplyTarget } from "./keys.ts";
import { isBlockActions, parseSlackAction, parseSlackEvent, type SkipReason } from "./parse.ts";
import { SlackSender } from "./send.ts";
import { isSlashCommand, parseSlashCommand, type SlashParse } from "./slash.ts";

/** Slack truncates at 40,000 characters but renders long messages poorly; stay under 4,000. */
export const SLACK_LIMITS: ChannelLimits = {
  maxMessageChars: 4000,
  perChatIntervalMs: 1000,
  perAccountPerSecond: 20,
  editIntervalMs: 1000,
};

/** The status reactions, by Slack's emoji names: 👀 ⏳ ✅ ⚠️. */
const STATUS_REACTIONS: Record<ReplyStatus, string> = {
  seen: "eyes",
  waiting: "hourglass_flowing_sand",
  done: "white_check_mark",
  failed: "warning",
};

/** Sends are not idempotent. Slack bots have no typing indicator API, so the adapter has no typing(). */
export const SLACK_CAPABILITIES: ChannelCapabilities = {
  idempotentSend: false,
};

export interface SlackAdapterOptions {
  /** Time for signature windows and fallbacks. Default: the system clock. */
  clock?: Clock;
  /** The adapter's own events (`slack.*`) and, bridged, Bolt's, web-api's and Socket Mode's logs. */
  logger: Logger;
  /** Told about every event acknowledged without reaching ingress (own messages, junk, unknown kinds). */
  onSkip?: (skip: SlackSkip) => void;
  /** The chat commands, taken as slash commands (the app's manifest lists them); absent: none. */
  commands?: CommandMenu;
  /**
   * The current bot token, read at each call: an installed workspace's (installations.ts), which
   * rotates when the app has token rotation on. Default: `config.botToken`.
   */
  botToken?: () => string;
  /**
   * The adapter of one installed workspace: the app's one events route (`/slack/events`, served by
   * workspaces.ts) hands it that workspace's requests through `sharedEventsRoute()`, and `routes()`
   * is empty. Needs HTTP mode.
   */
  sharedEventsRoute?: boolean;
}

/** An event acknowledged without reaching ingress. No text or user content inside. */
export interface SlackSkip {
  reason: SkipReason | Extract<SlashParse, { kind: "skip" }>["reason"];
  eventId: string | undefined;
  /** The inner event's type, when there is one. */
  eventType: string | undefined;
}

interface BotIdentity {
  teamId: string;
  botUserId: string;
  botId: string | undefined;
  account: string;
}

/**
 * Slack through Bolt: Socket Mode (SocketModeReceiver) or the Events API served on the gateway's
 * HTTP server (`routes()`), Web API calls through Bolt's client. Every event goes to ingress
 * before Slack is acknowledged.
 */
export class SlackAdapter implements ChannelAdapter {
  readonly channel = "slack" as const;
  readonly capabilities = SLACK_CAPABILITIES;
  readonly limits = SLACK_LIMITS;
  readonly markup = "slack-mrkdwn" as const;
  /** Slack takes files up to 1 GB; the caption is the share's initial comment. */
  readonly files: ChannelFiles = {
    limits: { maxFileBytes: 1024 * 1024 * 1024, maxCaptionChars: SLACK_LIMITS.maxMessageChars },
    send: async (target, file) => {
      const receipt = await this.#sender.sendFile(target, file);
      this.#assistant.settled(target);
      return receipt;
    },
  };

  readonly #config: SlackConfig;
  readonly #clock: Clock;
  readonly #onSkip: (skip: SlackSkip) => void;
  readonly #commands: CommandMenu | undefined;
  readonly #logger: Logger;
  readonly #token: () => string;
  readonly #sharedEventsRoute: boolean;
  readonly #app: AckAfterListenersApp;
  readonly #receiver: SocketModeReceiver | GatewayHttpReceiver;
  readonly #sender: SlackSender;
  readonly #assistant: AssistantThreads;
  #identity: BotIdentity | undefined;
  #ingress: Ingress | undefined;
  #accepting = false;
  #socketConnected = false;
  /** Button presses being handled after their acknowledgement. */
  readonly #presses = new Set<Promise<void>>();

  constructor(config: SlackConfig, options: SlackAdapterOptions) {
    this.#config = config;
    this.#clock = options.clock ?? systemClock;
    this.#onSkip = options.onSkip ?? (() => {});
    this.#commands = options.commands;
    this.#logger = options.logger;
    this.#token = options.botToken ?? (() => config.botToken);
    this.#sharedEventsRoute = options.sharedEventsRoute ?? false;
    const logging = { logger: boltLogger(options.logger) };
    const clientOptions = {
      slackApiUrl: config.apiUrl,
      // The outbox owns retries; web-api's default would retry a call for about 30 minutes.
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: config.requestTimeoutMs,
    };
    this.#receiver =
      config.mode === "socket"
        ? new SocketModeReceiver({
            appToken: config.appToken,
            ...logging,
            // apps.connections.open also goes to apiUrl; a few retries ride out a blip on reconnect.
            installerOptions: {
              clientOptions: { ...clientOptions, retryConfig: { retries: 3, maxTimeout: 5000 } },
            },
            processEventErrorHandler: async ({ error }) => {
              this.#logger.warn("slack.event_not_acknowledged", {
                error: describe(error),
                hint: "Slack redelivers it",
              });
              return false;
            },
          })
        : new GatewayHttpReceiver();
    this.#app = new AckAfterListenersApp({
      receiver: this.#receiver,
      // An authorize function instead of `token`: Bolt would otherwise call auth.test from its
      // constructor; start() calls it once and the answer serves every event.
      authorize: async () => this.#authorization(),
      clientOptions,
      convoStore: false,
      ...logging,
    });
    // Bolt's default error handler logs every failure; the receivers report it instead.
    this.#app.error(async (error) => {
      throw error;
    });
    // Assistant threads first: Bolt's Assistant takes their events and the app DM's thread messages
    // (those go to #handleEvent like any message, then get the thinking status and title).
    this.#assistant = new AssistantThreads({
      client: this.#app.client,
      botToken: this.#token,
      prompts: config.assistantPrompts,
      team: () => this.#identity?.teamId,
      clock: this.#clock,
      logger: options.logger,
    });
    this.#app.assistant(this.#assistant.boltAssistant((body) => this.#handleEvent(body)));
    // One middleware sees every event Bolt can type, so parseSlackEvent decides (and names) what
    // is skipped, unknown event kinds included; listeners would drop those without a word.
    // Slash commands go on to Bolt's `app.command` listener below.
    this.#app.use(async ({ body, next }) => {
      if (isSlashCommand(body)) await next();
      else await this.#handleEvent(body as Record<string, unknown>);
    });
    this.#app.command(/^\/.+/, async ({ body }) =>
      this.#handleSlashCommand(body as unknown as Record<string, unknown>),
    );
    this.#sender = new SlackSender(this.#app.client, this.#token, SLACK_LIMITS.maxMessageChars);
  }

  /** `<team_id>:<app_id or bot user id>`; known after start(), or from `teamId` and `appId` before. */
  get account(): string {
    if (this.#identity === undefined) {
      const configured = configuredAccount(this.#config);
      if (configured !== null) return configured;
      throw new SwitchboardError(
        "runtime_closed",
        "The Slack adapter learns its account from auth.test: call start() first",
      );
    }
    return this.#identity.account;
  }

  async start(ingress: Ingress): Promise<void> {
    const auth = await this.#callWebApi("auth.test", () =>
      this.#app.client.auth.test({ token: this.#token() }),
    );
    if (typeof auth.team_id !== "string" || typeof auth.user_id !== "string") {
      throw new SwitchboardError(
        "platform_rejected",
        "Slack auth.test did not name the team and bot user; is slack.botToken a bot token?",
      );
    }
    const configured = configuredAccount(this.#config);
    if (
      configured !== null &&
      (!sameInstallation(auth, this.#config.teamId) ||
        (auth.app_id !== undefined && auth.app_id !== this.#config.appId))
    )
      throw new SwitchboardError(
        "config_invalid",
        `The Slack bot token belongs to the workspace ${auth.team_id} and app ${auth.app_id ?? "(not named)"}, but this account's teamId and appId say ${this.#config.teamId} and ${this.#config.appId}; set the ones of the app this token is from.`,
      );
    this.#identity = {
      teamId: auth.team_id,
      botUserId: auth.user_id,
      botId: auth.bot_id,
      account: configured ?? `${auth.team_id}:${auth.app_id ?? auth.user_id}`,
    };
    this.#ingress = ingress;
    this.#accepting = true;
    if (this.#receiver instanceof SocketModeReceiver) {
      const client = this.#receiver.client;
      client.on("connected", () => {
        this.#socketConnected = true;
      });
      for (const state of ["disconnecting", "reconnecting", "disconnected"]) {
        client.on(state, () => {
          this.#socketConnected = false;
        });
      }
      try {
        await this.#app.start();
      } catch (error) {
        this.#accepting = false;
        throw toSwitchboardError(error, "apps.connections.open");
      }
      this.#socketConnected = true;
    }
  }

  async stop(): Promise<void> {
    this.#accepting = false;
    await this.#app.drain();
    await Promise.allSettled([...this.#presses]);
    await this.#assistant.close();
    if (this.#receiver instanceof SocketModeReceiver) {
      await this.#receiver.client.disconnect();
      this.#socketConnected = false;
    }
  }

  isConnected(): boolean {
    if (!this.#accepting) return false;
    return this.#config.mode === "http" || this.#socketConnected;
  }

  routes(): HttpRoute[] {
    if (this.#sharedEventsRoute) return [];
    const route = this.#eventsRoute();
    return route === null ? [] : [route];
  }

  /** The events route of an installed workspace's adapter, for the app's one route to hand its requests to. */
  sharedEventsRoute(): HttpRoute | null {
    return this.#sharedEventsRoute ? this.#eventsRoute() : null;
  }

  #eventsRoute(): HttpRoute | null {
    const config = this.#config;
    const receiver = this.#receiver;
    if (config.mode !== "http" || !(receiver instanceof GatewayHttpReceiver)) return null;
    return createEventsRoute({
      path: config.eventsPath,
      signingSecret: config.signingSecret,
      clock: this.#clock,
      isAccepting: () => this.#accepting,
      onDispatchError: (error) =>
        this.#logger.warn("slack.event_answered_500", { error: describe(error), hint: "Slack retries it" }),
      dispatch: (body, retryNum, retryReason) => receiver.dispatch(body, retryNum, retryReason),
    });
  }

  async send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    const receipt = await this.#sender.send(target, message);
    this.#assistant.settled(target);
    return receipt;
  }

  edit(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
    return this.#sender.edit(target, messageId, message);
  }

  delete(target: string, messageId: string): Promise<void> {
    return this.#sender.delete(target, messageId);
  }

  react(
    target: string,
    messageId: string,
    status: ReplyStatus,
    previous: readonly ReplyStatus[],
  ): Promise<void> {
    // The run ended without a message to the thread (or after it): the thinking status goes too.
    if (status === "done" || status === "failed") this.#assistant.settled(target);
    return this.#sender.react(
      target,
      messageId,
      STATUS_REACTIONS[status],
      previous.map((shown) => STATUS_REACTIONS[shown]),
    );
  }

  /** Chat streaming needs a thread; a top-level target, or an adapter not yet started, has none. */
  nativeStreamFor(target: string, recipient: string): NativeStream | null {
    const identity = this.#identity;
    if (identity === undefined || decodeReplyTarget(target).threadTs === undefined) return null;
    const sender = this.#sender;
    const to = { userId: recipient, teamId: identity.teamId };
    return {
      maxChars: SLACK_LIMITS.maxMessageChars,
      start: async (markdown) => {
        const receipt = await sender.startStream(target, to, markdown);
        this.#assistant.settled(target);
        return receipt;
      },
      append: (messageId, markdown) => sender.appendStream(target, messageId, markdown),
      stop: (messageId, markdown) => sender.stopStream(target, messageId, markdown),
    };
  }

  /** Hands one event to ingress; the outcome, or null when it was skipped or was a button press. */
  async #handleEvent(body: Record<string, unknown>): Promise<IngressOutcome | null> {
    const ingress = this.#ingress;
    const identity = this.#identity;
    if (!this.#accepting || ingress === undefined || identity === undefined) {
      // Throwing leaves the event un-acknowledged (HTTP 500 / no envelope ack): Slack redelivers it.
      throw new SwitchboardError(
        "runtime_closed",
        "Slack adapter is stopping; the event will be redelivered",
      );
    }
    if (isBlockActions(body)) {
      this.#onPress(body, ingress, identity);
      return null;
    }
    const parsed = parseSlackEvent(body, {
      account: identity.account,
      botUserId: identity.botUserId,
      botId: identity.botId,
      allowOtherBots: this.#config.allowOtherBots,
      receivedAtMs: this.#clock.now(),
    });
    if (parsed.kind === "skip") {
      this.#onSkip({
        reason: parsed.reason,
        eventId: stringField(body, "event_id"),
        eventType: eventTypeOf(body),
      });
      return null;
    }
    return await ingress(parsed.message);
  }

  /**
   * A slash command: an input like a message, acknowledged (within Slack's 3 s; ingress only
   * records it and enqueues the reply) once ingress resolved; when it rejects, Slack shows the
   * user an error instead. The answer goes through the outbox to the channel or thread it came
   * from; one that is not taken gets a notice only its user sees.
   */
  async #handleSlashCommand(body: Record<string, unknown>): Promise<void> {
    const ingress = this.#ingress;
    const identity = this.#identity;
    const commands = this.#commands;
    if (!this.#accepting || ingress === undefined || identity === undefined) {
      throw new SwitchboardError("runtime_closed", "Slack adapter is stopping; the command was not taken");
    }
    const parsed =
      commands === undefined
        ? ({ kind: "skip", reason: "unknown_command" } as const)
        : parseSlashCommand(body, commands, {
            account: identity.account,
            botUserId: identity.botUserId,
            botId: identity.botId,
            allowOtherBots: this.#config.allowOtherBots,
            receivedAtMs: this.#clock.now(),
          });
    if (parsed.kind === "skip") {
      this.#onSkip({ reason: parsed.reason, eventId: undefined, eventType: "slash_command" });
      return;
    }
    const outcome = await ingress(parsed.message);
    if (outcome.kind !== "ignored") return;
    const notice =
      outcome.reason === "user not allowed"
        ? "You are not on this bot's allow list, so it does not take commands from you."
        : `This command was not taken (${outcome.reason}).`;
    const { replyTarget, principal } = parsed.message;
    await this.#sender.postEphemeral(replyTarget, principal.id, notice).catch((error: unknown) =>
      this.#logger.warn("slack.command_notice_failed", {
        updateKey: parsed.message.updateKey,
        error: describe(error),
      }),
    );
  }

  /**
   * A button press is acknowledged at once (Slack wants it within 3 s and never redelivers an
   * interactivity payload, so holding the ack back would not make it safer); ingress runs after,
   * then the outcome's notice is shown to the presser alone (chat.postEphemeral).
   */
  #onPress(body: Record<string, unknown>, ingress: Ingress, identity: BotIdentity): void {
    const parsed = parseSlackAction(body, {
      account: identity.account,
      botUserId: identity.botUserId,
      botId: identity.botId,
      allowOtherBots: this.#config.allowOtherBots,
      receivedAtMs: this.#clock.now(),
    });
    if (parsed.kind === "skip") {
      this.#onSkip({ reason: parsed.reason, eventId: undefined, eventType: "block_actions" });
      return;
    }
    const handling = this.#handlePress(parsed.message, ingress);
    this.#presses.add(handling);
    void handling.finally(() => this.#presses.delete(handling));
  }

  async #handlePress(press: InboundMessage, ingress: Ingress): Promise<void> {
    let notice: string;
    try {
      const outcome = await ingress(press);
      notice = outcome.kind === "action" ? outcome.notice : "";
    } catch (error) {
      this.#logger.warn("slack.press_not_recorded", {
        updateKey: press.updateKey,
        error: describe(error),
        hint: "Slack does not redeliver a button press; the user can press again",
      });
      notice = "That press could not be recorded; please press again.";
    }
    if (notice === "") return;
    await this.#sender.postEphemeral(press.replyTarget, press.principal.id, notice).catch((error: unknown) =>
      this.#logger.warn("slack.press_notice_failed", {
        updateKey: press.updateKey,
        error: describe(error),
      }),
    );
  }

  #authorization() {
    const identity = this.#identity;
    if (identity === undefined) throw new Error("Slack event arrived before auth.test completed");
    return {
      botToken: this.#token(),
      botId: identity.botId,
      botUserId: identity.botUserId,
      teamId: identity.teamId,
    };
  }

  async #callWebApi<T>(method: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw toSwitchboardError(error, method);
    }
  }

  /**
   * A file's `url_private` with the bot token (the app needs the `files:read` scope). The token
   * goes only to Slack's file host or the configured API server's host, never elsewhere.
   */
  async openFile(ref: string, signal: AbortSignal): Promise<RemoteFile> {
    const url = httpUrl("Slack", ref);
    const apiHost = this.#config.apiUrl ? new URL(this.#config.apiUrl).host : null;
    if (url.host !== "files.slack.com" && url.host !== apiHost) {
      throw new SwitchboardError(
        "platform_rejected",
        `Slack file URL is not on files.slack.com (${url.host})`,
      );
    }
    return await downloadFile("Slack", url.href, {
      signal,
      headers: { authorization: `Bearer ${this.#token()}` },
    });
  }
}

/** Validates `config` (see parseSlackConfig) and builds the adapter. */
export function createSlackAdapter(config: unknown, options: SlackAdapterOptions): SlackAdapter {
  return new SlackAdapter(parseSlackConfig(config), options);
}

function stringField(body: Record<string, unknown>, key: string): string | undefined {
  const value = body[key];
  return typeof value === "string" ? value.slice(0, 100) : undefined;
}

function eventTypeOf(body: Record<string, unknown>): string | undefined {
  const event = body.event;
  if (typeof event !== "object" || event === null) return undefined;
  return stringField(event as Record<string, unknown>, "type");
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const original = (error as Error & { original?: unknown }).original;
    return original instanceof Error ? original.message : error.message;
  }
  return String(error);
}

/**
 * Whether auth.test names the installation `teamId`: its workspace, or for an org-wide (Enterprise
 * Grid) install its org, which Slack may report as `enterprise_id` beside a member's `team_id`.
 */
function sameInstallation(
  auth: { team_id?: string; enterprise_id?: string; is_enterprise_install?: boolean },
  teamId: string | undefined,
): boolean {
  return auth.team_id === teamId || (auth.is_enterprise_install === true && auth.enterprise_id === teamId);
}
