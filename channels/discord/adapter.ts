import {
  type AutocompleteInteraction,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  Client,
  Events,
  GatewayIntentBits,
  type Interaction,
  type Message,
  MessageFlags,
  type PartialMessage,
  Partials,
  Status,
} from "discord.js";
import { SwitchboardError } from "../../src/errors.ts";
import { type Clock, systemClock } from "../../src/util/clock.ts";
import type { Logger } from "../../src/util/log.ts";
import type { CommandMenu } from "../commands.ts";
import { downloadFile, httpUrl } from "../download.ts";
import type { ChannelStateStore } from "../module.ts";
import type {
  CatchUpCursor,
  CatchUpReport,
  ChannelAdapter,
  ChannelCapabilities,
  ChannelEvents,
  ChannelFiles,
  ChannelLimits,
  InboundMessage,
  Ingress,
  IngressOutcome,
  OutgoingMessage,
  RemoteFile,
  ReplyStatus,
  SendReceipt,
} from "../types.ts";
import { CATCH_UP_MAX_MESSAGES_PER_CHANNEL, CATCH_UP_MAX_TARGETS, fetchMessagesAfter } from "./catch-up.ts";
import { autocompleteChoices, registerDiscordCommands } from "./commands.ts";
import { type DiscordConfig, type DiscordConfigInput, parseDiscordConfig } from "./config.ts";
import { toSwitchboardError } from "./errors.ts";
import { InteractionReplies } from "./interaction-replies.ts";
import { decodeTarget, interactionOf } from "./keys.ts";
import {
  deletionToInbound,
  editToInbound,
  pressToInbound,
  readMessage,
  readPress,
  toInbound,
} from "./parse.ts";
import { DISCORD_FILE_LIMITS, DiscordSender, MAX_MESSAGE_CHARS } from "./send.ts";
import { slashToInbound } from "./slash.ts";
import { botUserIdOfToken } from "./token.ts";

export const DISCORD_CAPABILITIES: ChannelCapabilities = {
  idempotentSend: true,
};

export const DISCORD_LIMITS: ChannelLimits = {
  maxMessageChars: MAX_MESSAGE_CHARS,
  // Discord's per-channel bucket is about 5 messages per 5 s.
  perChatIntervalMs: 1000,
  perAccountPerSecond: 50,
  editIntervalMs: 1000,
};

export interface DiscordAdapterOptions {
  clock?: Clock;
  /** Operational events (`discord.*`); fields never contain the token. */
  logger: Logger;
  /**
   * Pauses between attempts to hand one message to ingress. Discord never redelivers a
   * MESSAGE_CREATE, so a message whose ingress keeps failing is lost after the last attempt.
   * Default [250, 1000, 4000].
   */
  ingressRetryDelaysMs?: readonly number[];
  /** The chat commands, registered as slash commands at start and run as inputs; absent: none. */
  commands?: CommandMenu;
  /** Keeps the registered commands' hash across restarts, so an unchanged list is not sent again. */
  state?: ChannelStateStore;
}

type Lifecycle = "idle" | "starting" | "running" | "stopped";

/** The status reactions: 👀 ⏳ ✅ ⚠️. */
const STATUS_EMOJI: Record<ReplyStatus, string> = {
  seen: "👀",
  waiting: "⏳",
  done: "✅",
  failed: "⚠️",
};

/** One Discord bot account over discord.js: gateway in, REST out. */
export class DiscordAdapter implements ChannelAdapter {
  readonly channel = "discord" as const;
  readonly capabilities = DISCORD_CAPABILITIES;
  readonly limits = DISCORD_LIMITS;
  readonly markup = "discord-markdown" as const;
  readonly files: ChannelFiles = {
    limits: DISCORD_FILE_LIMITS,
    send: (target, file) => this.sender.sendFile(target, file),
  };
  private readonly client: Client;
  private readonly sender: DiscordSender;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly retryDelaysMs: readonly number[];
  private readonly commands: CommandMenu | undefined;
  private readonly state: ChannelStateStore | undefined;
  private readonly replies: InteractionReplies;
  private lifecycle: Lifecycle = "idle";
  private botUserId: string | null = null;
  /** Set by start(): catch-up hands what it fetched to the same ingress as live messages. */
  private ingress: Ingress | null = null;
  /** Per conversation, the tail of its ingress chain: messages of one conversation stay in order. */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly config: DiscordConfig,
    options: DiscordAdapterOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger;
    this.retryDelaysMs = options.ingressRetryDelaysMs ?? [250, 1000, 4000];
    this.client = new Client({
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.MessageContent,
        GatewayIntentBits.DirectMessages,
      ],
      // DM channels are not cached at startup; without this discord.js drops DMs. Messages: a
      // delete of one not in the cache still arrives (as ids only).
      partials: [Partials.Channel, Partials.Message],
      rest: {
        ...(config.apiUrl === undefined ? {} : { api: config.apiUrl }),
        // The outbox owns retries: surface 5xx, timeouts and 429s instead of retrying or sleeping.
        retries: 0,
        timeout: config.requestTimeoutMs,
        rejectOnRateLimit: () => true,
      },
    });
    // Sending works before start() and after stop(), so the outbox can drain independently.
    this.client.rest.setToken(config.token);
    this.sender = new DiscordSender(this.client.rest, config.requestTimeoutMs);
    this.commands = options.commands;
    this.state = options.state;
    this.replies = new InteractionReplies(
      this.client.rest,
      this.clock,
      this.logger,
      config.interactionDeferMs,
    );
    this.client.on(Events.Error, (error) =>
      this.logger.error("discord.client_error", { error: error.message }),
    );
    this.client.on(Events.ShardError, (error) =>
      this.logger.warn("discord.gateway_error", { error: error.message }),
    );
    this.client.on(Events.ShardReconnecting, () => this.logger.info("discord.gateway_reconnecting"));
    this.client.on(Events.ShardResume, (_id, replayed) =>
      this.logger.info("discord.gateway_resumed", { replayed }),
    );
    this.client.on(Events.ShardDisconnect, (event) =>
      this.logger.error("discord.gateway_closed", {
        closeCode: event.code,
        hint: "the gateway connection closed for good; restart switchboard",
      }),
    );
  }

  /** The bot's user id: the token's (see token.ts) until start() learns it from Discord. */
  get account(): string {
    const id = this.botUserId ?? botUserIdOfToken(this.config.token);
    if (id === null)
      throw new Error(
        "DiscordAdapter.account is known only after start() resolves (the token does not tell it).",
      );
    return id;
  }

  async start(ingress: Ingress, events: ChannelEvents = {}): Promise<void> {
    if (this.lifecycle !== "idle") {
      throw new Error(`DiscordAdapter.start() can be called once; the adapter is ${this.lifecycle}.`);
    }
    this.lifecycle = "starting";
    const readyTimeout = new AbortController();
    const ready = new Promise<void>((resolve, reject) => {
      this.client.once(Events.ClientReady, () => resolve());
      this.clock.sleep(this.config.readyTimeoutMs, readyTimeout.signal).then(
        () =>
          reject(
            new SwitchboardError(
              "platform_timeout",
              `Discord gateway was not ready within ${this.config.readyTimeoutMs} ms; check discord.apiUrl and the network.`,
              { retryable: true },
            ),
          ),
        () => undefined,
      );
    });
    this.ingress = ingress;
    this.client.on(Events.MessageCreate, (message) => this.onMessage(message, ingress));
    this.client.on(Events.InteractionCreate, (interaction) => this.onInteraction(interaction, ingress));
    this.client.on(Events.MessageDelete, (message) => this.onDelete(message, ingress));
    this.client.on(Events.MessageUpdate, (_old, message) => this.onEdit(message, ingress));
    // READY after the first one means Discord refused to resume: what was sent meanwhile is
    // only in the channels' history now.
    this.client.on(Events.ShardReady, () => {
      if (this.lifecycle !== "running") return;
      this.logger.warn("discord.session_renewed", {
        hint: "Discord did not replay what was sent meanwhile; catching up from channel history",
      });
      events.sessionRenewed?.();
    });
    try {
      // A login that never completes (no READY) still ends: `ready` rejects after readyTimeoutMs.
      await Promise.all([this.client.login(this.config.token), ready]);
    } catch (error) {
      this.lifecycle = "stopped";
      await this.client.destroy();
      throw toSwitchboardError(error, { action: "connect", requestTimeoutMs: this.config.requestTimeoutMs });
    } finally {
      readyTimeout.abort();
    }
    const loggedIn = this.client.user?.id ?? null;
    const expected = botUserIdOfToken(this.config.token);
    if (expected !== null && loggedIn !== expected) {
      this.lifecycle = "stopped";
      await this.client.destroy();
      throw new SwitchboardError(
        "config_invalid",
        `Discord logged this token in as the user ${loggedIn}, but the token names the user ${expected}; use the bot's token as the developer portal shows it.`,
      );
    }
    this.botUserId = loggedIn;
    if (this.commands && this.botUserId !== null) {
      await registerDiscordCommands({
        rest: this.client.rest,
        applicationId: this.client.application?.id ?? this.botUserId,
        guildId: this.config.commandsGuildId,
        menu: this.commands,
        ...(this.state ? { state: this.state } : {}),
        nowMs: this.clock.now(),
        logger: this.logger,
      });
    }
    this.lifecycle = "running";
  }

  async stop(): Promise<void> {
    if (this.lifecycle === "stopped") return;
    this.lifecycle = "stopped";
    // Closing with 1000 ends the gateway session: nothing new arrives after this.
    await this.client.destroy();
    this.client.rest.setToken(this.config.token);
    await Promise.allSettled([...this.inFlight]);
  }

  isConnected(): boolean {
    return (
      this.lifecycle === "running" &&
      this.client.isReady() &&
      this.client.ws.shards.every((shard) => shard.status === Status.Ready)
    );
  }

  /**
   * A slash command's answer goes as the interaction's response while its token works (see
   * InteractionReplies), else to the channel like any reply.
   */
  async send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    const interactionId = interactionOf(target);
    if (interactionId !== undefined) {
      const answered = await this.replies.send(interactionId, message).catch((error: unknown) => {
        throw toSwitchboardError(error, { action: "send", requestTimeoutMs: this.config.requestTimeoutMs });
      });
      if (answered !== null) return answered;
    }
    return await this.sender.send(target, message);
  }

  edit(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
    return this.sender.edit(target, messageId, message);
  }

  delete(target: string, messageId: string): Promise<void> {
    return this.sender.delete(target, messageId);
  }

  typing(target: string): Promise<void> {
    return this.sender.typing(target);
  }

  react(
    target: string,
    messageId: string,
    status: ReplyStatus,
    previous: readonly ReplyStatus[],
  ): Promise<void> {
    return this.sender.react(
      target,
      messageId,
      STATUS_EMOJI[status],
      previous.map((shown) => STATUS_EMOJI[shown]),
    );
  }

  /**
   * Fetches what was written after each cursor (at most 100 messages in each of at most 200
   * targets) and hands it to ingress in order, through the same parse path as live messages.
   * Resolves once ingress has taken all of it. A target that cannot be read is logged and skipped.
   */
  async catchUp(cursors: CatchUpCursor[]): Promise<CatchUpReport> {
    const ingress = this.ingress;
    if (this.lifecycle !== "running" || ingress === null) {
      throw new Error(`DiscordAdapter.catchUp() needs a running adapter; it is ${this.lifecycle}.`);
    }
    const report: CatchUpReport = { targets: 0, fetched: 0, delivered: 0, failedTargets: 0 };
    const deliveries: Promise<void>[] = [];
    for (const cursor of cursors.slice(0, CATCH_UP_MAX_TARGETS)) {
      report.targets += 1;
      const messages = await this.fetchForCatchUp(cursor);
      if (messages === null) {
        report.failedTargets += 1;
        continue;
      }
      report.fetched += messages.length;
      for (const message of messages) {
        const delivery = this.onMessage(message, ingress);
        if (delivery !== null) {
          report.delivered += 1;
          deliveries.push(delivery);
        }
      }
    }
    await Promise.all(deliveries);
    return report;
  }

  /** One page after the cursor, oldest first; null (logged) when the target cannot be read. */
  private async fetchForCatchUp(cursor: CatchUpCursor): Promise<Message[] | null> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        const channelId = decodeTarget(cursor.target);
        return await fetchMessagesAfter(
          this.client,
          channelId,
          cursor.afterMessageId,
          CATCH_UP_MAX_MESSAGES_PER_CHANNEL,
        );
      } catch (cause) {
        const error = toSwitchboardError(cause, {
          action: "catch_up",
          requestTimeoutMs: this.config.requestTimeoutMs,
        });
        // A rate limit says when to come back; anything else would fail the same way again.
        if (attempt === 0 && error.retryAfterMs !== undefined) {
          await this.clock.sleep(error.retryAfterMs);
          continue;
        }
        this.logger.warn("discord.catch_up_target_skipped", {
          target: cursor.target,
          afterMessageId: cursor.afterMessageId,
          error: error.message,
          hint: "messages missed in this channel while down stay unanswered",
        });
        return null;
      }
    }
  }

  /**
   * Parses and hands one message to ingress, after earlier messages of its conversation; null
   * when the parse path skips it (own message, other bots, system messages, group DMs).
   */
  private onMessage(message: Message, ingress: Ingress): Promise<void> | null {
    const botUserId = this.client.user?.id;
    if (botUserId === undefined) return null;
    const facts = readMessage(message, botUserId);
    if (facts === null) return null;
    const parsed = toInbound(facts, {
      botUserId,
      groupSessions: this.config.groupSessions,
      allowBots: this.config.allowBots,
    });
    if (parsed.kind === "skip") return null;
    return this.enqueue(parsed.message, ingress).then(() => undefined);
  }

  /**
   * A deleted message: its run is withdrawn (cancelled while queued, stopped while running). The
   * message is whole when discord.js had it cached, else partial (ids only: Partials.Message).
   */
  private onDelete(message: Message | PartialMessage, ingress: Ingress): Promise<void> | null {
    const botUserId = this.client.user?.id;
    if (botUserId === undefined) return null;
    const facts = message.partial ? null : readMessage(message, botUserId);
    if (!message.partial && facts === null) return null;
    const parsed = deletionToInbound(
      { id: message.id, channelId: message.channelId, guildId: message.guildId, facts },
      { botUserId, groupSessions: this.config.groupSessions, allowBots: this.config.allowBots },
      this.clock.now(),
    );
    if (parsed.kind === "skip") return null;
    return this.enqueue(parsed.message, ingress).then(() => undefined);
  }

  /**
   * An edited message (MESSAGE_UPDATE with an `edited_timestamp`): its new content, keyed by that
   * time. Discord also sends MESSAGE_UPDATE when it adds an embed, without a new edit time: the
   * first such update of a message never edited is skipped, a later one repeats the edit's key.
   */
  private onEdit(message: Message | PartialMessage, ingress: Ingress): Promise<void> | null {
    const botUserId = this.client.user?.id;
    if (botUserId === undefined || message.partial || message.editedTimestamp === null) return null;
    const facts = readMessage(message, botUserId);
    if (facts === null) return null;
    const parsed = editToInbound(facts, message.editedTimestamp, {
      botUserId,
      groupSessions: this.config.groupSessions,
      allowBots: this.config.allowBots,
    });
    if (parsed.kind === "skip") return null;
    return this.enqueue(parsed.message, ingress).then(() => undefined);
  }

  /** Hands `inbound` to ingress after what its conversation already has in flight. */
  private enqueue(inbound: InboundMessage, ingress: Ingress): Promise<IngressOutcome | null> {
    const key = inbound.conversationKey;
    const previous = this.chains.get(key) ?? Promise.resolve();
    const delivery = previous.then(() => this.deliver(inbound, ingress));
    const tail = delivery.then(() => undefined);
    this.chains.set(key, tail);
    this.inFlight.add(tail);
    void tail.finally(() => {
      this.inFlight.delete(tail);
      if (this.chains.get(key) === tail) this.chains.delete(key);
    });
    return delivery;
  }

  /**
   * A button press: acknowledged at once with a deferred update (Discord wants an answer within
   * 3 s, ingress may take longer), handed to ingress, then the outcome's notice is shown to the
   * presser alone as an ephemeral follow-up. The outcome edit of the message removes the buttons.
   */
  private onInteraction(interaction: Interaction, ingress: Ingress): void {
    if (interaction.isAutocomplete()) {
      void this.onAutocomplete(interaction);
      return;
    }
    if (interaction.isChatInputCommand()) {
      this.onSlashCommand(interaction, ingress);
      return;
    }
    if (!interaction.isButton()) return;
    const botUserId = this.client.user?.id;
    if (botUserId === undefined) return;
    const facts = readPress(interaction);
    if (facts === null) return;
    const parsed = pressToInbound(facts, {
      botUserId,
      groupSessions: this.config.groupSessions,
      allowBots: this.config.allowBots,
    });
    if (parsed.kind === "skip") return;
    const handling = this.handlePress(interaction, parsed.message, ingress);
    this.inFlight.add(handling);
    void handling.finally(() => this.inFlight.delete(handling));
  }

  private async handlePress(
    interaction: ButtonInteraction,
    inbound: InboundMessage,
    ingress: Ingress,
  ): Promise<void> {
    const failed = (step: string) => (error: unknown) =>
      this.logger.warn("discord.interaction_answer_failed", {
        interactionId: interaction.id,
        step,
        error: error instanceof Error ? error.message : String(error),
      });
    const acknowledged = await interaction.deferUpdate().then(() => true, failed("defer_update"));
    const outcome = await this.enqueue(inbound, ingress);
    const notice = outcome?.kind === "action" ? outcome.notice : "";
    if (acknowledged && notice !== "") {
      await interaction
        .followUp({ content: notice, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } })
        .catch(failed("follow_up"));
    }
  }

  /**
   * A slash command: an input like a message (admitted, deduplicated by the interaction's id and
   * authorised by ingress). Its answer comes through the outbox to the interaction (deferred when
   * it takes longer than `interactionDeferMs`); one that is not taken gets a notice only the user sees.
   */
  private onSlashCommand(interaction: ChatInputCommandInteraction, ingress: Ingress): void {
    const botUserId = this.client.user?.id;
    if (botUserId === undefined || this.commands === undefined) return;
    const parsed = slashToInbound(interaction, this.commands, {
      botUserId,
      groupSessions: this.config.groupSessions,
      allowBots: this.config.allowBots,
    });
    if (parsed.kind === "skip") {
      this.logger.debug("discord.command_skipped", { interactionId: interaction.id, reason: parsed.reason });
      return;
    }
    const id = interaction.id;
    const tracked = this.replies.track({
      id,
      token: interaction.token,
      applicationId: interaction.applicationId,
      createdAtMs: interaction.createdTimestamp,
    });
    const handling = this.enqueue(parsed.message, ingress).then(async (outcome) => {
      if (outcome === null)
        await this.replies.notice(id, "That command could not be recorded; please run it again.");
      else if (outcome.kind === "duplicate" && tracked) this.replies.forget(id);
      else if (outcome.kind === "ignored") await this.replies.notice(id, notTakenNotice(outcome.reason));
    });
    this.inFlight.add(handling);
    void handling.finally(() => this.inFlight.delete(handling));
  }

  /** Suggestions while a user types an option (the model names for /model); a read, not an input. */
  private async onAutocomplete(interaction: AutocompleteInteraction): Promise<void> {
    const focused = interaction.options.getFocused(true);
    const spec = this.commands?.commands.find((c) => c.name === interaction.commandName);
    const source = spec?.arguments.find((a) => a.name === focused.name)?.autocomplete;
    const choices =
      source === undefined || this.commands === undefined
        ? []
        : autocompleteChoices(this.commands.choices(source), String(focused.value));
    await interaction.respond(choices).catch((error: unknown) =>
      this.logger.warn("discord.autocomplete_failed", {
        interactionId: interaction.id,
        error: error instanceof Error ? error.message : String(error),
      }),
    );
  }

  /** Never rejects: failures are retried in memory, then logged as a loss (null). */
  private async deliver(inbound: InboundMessage, ingress: Ingress): Promise<IngressOutcome | null> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await ingress(inbound);
      } catch (error) {
        const fields = {
          updateKey: inbound.updateKey,
          conversationKey: inbound.conversationKey,
          attempt: attempt + 1,
          error: error instanceof Error ? error.message : String(error),
        };
        const delayMs = this.retryDelaysMs[attempt];
        if (delayMs === undefined) {
          this.logger.error("discord.message_lost", {
            ...fields,
            hint: "ingress kept failing and Discord never redelivers a message; check the database",
          });
          return null;
        }
        this.logger.warn("discord.ingress_retry", { ...fields, retryInMs: delayMs });
        await this.clock.sleep(delayMs);
      }
    }
  }

  /** An attachment's CDN URL (signed by Discord; no token is sent). */
  async openFile(ref: string, signal: AbortSignal): Promise<RemoteFile> {
    return await downloadFile("Discord", httpUrl("Discord", ref).href, { signal });
  }
}

/** What a user who ran a slash command sees when ingress did not take it. */
function notTakenNotice(reason: string): string {
  return reason === "user not allowed"
    ? "You are not on this bot's allow list, so it does not take commands from you."
    : `This command was not taken (${reason}).`;
}

/** Validates `config` and builds the adapter; call start() to connect. */
export function createDiscordAdapter(
  config: DiscordConfigInput,
  options: DiscordAdapterOptions,
): DiscordAdapter {
  return new DiscordAdapter(parseDiscordConfig(config), options);
}
