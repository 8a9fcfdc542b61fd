import type { APIUser } from "discord.js";
import type { SnowflakeGenerator } from "./snowflake.ts";
import type { EmulatedChannel, GatewayMessage, World } from "./world.ts";

/** Discord's interaction callback types the emulator understands. */
export const CALLBACK_TYPE = {
  channelMessage: 4,
  deferredChannelMessage: 5,
  deferredUpdate: 6,
  update: 7,
  autocompleteResult: 8,
} as const;

/** An option of a slash command as the user filled it in (`focused`: being typed, for autocomplete). */
export interface CommandOptionInput {
  name: string;
  value: string;
  focused?: boolean;
}

/** One button press or slash command: what was dispatched and how the application answered it. */
export interface EmulatedInteraction {
  /** `button` (type 3), `command` (type 2, a slash command) or `autocomplete` (type 4). */
  kind: "button" | "command" | "autocomplete";
  id: string;
  token: string;
  /** The message a button is under; "" for a slash command. */
  messageId: string;
  channelId: string;
  userId: string;
  customId: string;
  createdAtMs: number;
  /** Callback types answered, in order; Discord accepts exactly one. */
  callbacks: number[];
  /** Follow-up messages sent through the interaction webhook (content and flags). */
  followUps: Array<{ content: string; flags: number }>;
  /** A slash command's name and options. */
  command?: { name: string; options: CommandOptionInput[] };
  /** The `data` of each callback, in order (an autocomplete's `choices`). */
  callbackData: unknown[];
  /** The response message a type 4 or 5 callback created (5: "thinking…" until edited). */
  originalMessageId?: string;
  /** Contents PATCH …/messages/@original set, in order. */
  originalEdits: string[];
}

/** An interaction token works this long for follow-ups and edits, as on Discord; later: 50027. */
export const INTERACTION_TOKEN_MS = 15 * 60_000;

/** A press must be answered within this long, as on Discord; later callbacks get 10062. */
export const INTERACTION_ANSWER_MS = 3000;

/** Button interactions: built from a stored message, answered through REST callbacks. */
export class Interactions {
  readonly all: EmulatedInteraction[] = [];

  constructor(
    private readonly ids: SnowflakeGenerator,
    private readonly world: World,
    private readonly now: () => number,
  ) {}

  /**
   * An INTERACTION_CREATE body for `userId` pressing the button `customId` under `messageId`.
   * Discord sends only custom ids that exist on the message; `forged` skips that check to model
   * a client that makes up its own payload.
   */
  press(
    messageId: string,
    userId: string,
    customId: string,
    options: { forged?: boolean } = {},
  ): {
    interaction: EmulatedInteraction;
    payload: Record<string, unknown>;
  } {
    const stored = this.world.message(messageId);
    if (!stored || stored.deleted) throw new Error(`Discord emulator: no message ${messageId} to press.`);
    const message = stored.message;
    if (!options.forged && !customIds(message).includes(customId)) {
      throw new Error(
        `Discord emulator: message ${messageId} has no button "${customId}" (it has ${JSON.stringify(customIds(message))}).`,
      );
    }
    const channel = this.world.channels.get(message.channel_id) as EmulatedChannel;
    const user = this.world.requireUser(userId);
    const interaction: EmulatedInteraction = {
      kind: "button",
      id: this.ids.next(),
      token: `itoken-${this.ids.next()}`,
      messageId,
      channelId: channel.id,
      userId,
      customId,
      createdAtMs: this.now(),
      callbacks: [],
      followUps: [],
      callbackData: [],
      originalEdits: [],
    };
    this.all.push(interaction);
    return { interaction, payload: this.payload(interaction, channel, user, message) };
  }

  /**
   * An INTERACTION_CREATE body for `userId` running the slash command `command` (its id and name,
   * as registered) in `channelId`: type 2, or type 4 while an option is being typed (`autocomplete`).
   */
  runCommand(
    channelId: string,
    userId: string,
    command: { id: string; name: string },
    options: CommandOptionInput[],
    kind: "command" | "autocomplete",
  ): { interaction: EmulatedInteraction; payload: Record<string, unknown> } {
    const channel = this.world.channels.get(channelId);
    if (!channel) throw new Error(`Discord emulator: no channel ${channelId}.`);
    const user = this.world.requireUser(userId);
    const interaction: EmulatedInteraction = {
      kind,
      id: this.ids.next(),
      token: `itoken-${this.ids.next()}`,
      messageId: "",
      channelId,
      userId,
      customId: "",
      createdAtMs: this.now(),
      callbacks: [],
      followUps: [],
      command: { name: command.name, options },
      callbackData: [],
      originalEdits: [],
    };
    this.all.push(interaction);
    return { interaction, payload: this.commandPayload(interaction, command.id, channel, user) };
  }

  /** The same INTERACTION_CREATE body again, for a duplicate delivery of `interaction`. */
  replay(interaction: EmulatedInteraction, commandId = ""): { payload: Record<string, unknown> } {
    if (interaction.kind !== "button") {
      const channel = this.world.channels.get(interaction.channelId) as EmulatedChannel;
      const user = this.world.requireUser(interaction.userId);
      return { payload: this.commandPayload(interaction, commandId, channel, user) };
    }
    const stored = this.world.message(interaction.messageId);
    if (!stored) throw new Error(`Discord emulator: message ${interaction.messageId} is gone.`);
    const channel = this.world.channels.get(interaction.channelId) as EmulatedChannel;
    const user = this.world.requireUser(interaction.userId);
    return { payload: this.payload(interaction, channel, user, stored.message) };
  }

  /** The interaction `id` if `token` is its token. */
  find(id: string, token: string): EmulatedInteraction | undefined {
    return this.all.find((i) => i.id === id && i.token === token);
  }

  findByToken(token: string): EmulatedInteraction | undefined {
    return this.all.find((i) => i.token === token);
  }

  private commandPayload(
    interaction: EmulatedInteraction,
    commandId: string,
    channel: EmulatedChannel,
    user: APIUser,
  ): Record<string, unknown> {
    const command = interaction.command!;
    return this.envelope(interaction, channel, user, {
      type: interaction.kind === "autocomplete" ? 4 : 2,
      data: {
        id: commandId,
        name: command.name,
        type: 1, // CHAT_INPUT
        ...(channel.kind === "dm" ? {} : { guild_id: channel.guildId }),
        ...(command.options.length === 0
          ? {}
          : {
              options: command.options.map((o) => ({
                name: o.name,
                type: 3, // STRING
                value: o.value,
                ...(o.focused ? { focused: true } : {}),
              })),
            }),
      },
    });
  }

  private payload(
    interaction: EmulatedInteraction,
    channel: EmulatedChannel,
    user: APIUser,
    message: GatewayMessage,
  ): Record<string, unknown> {
    return this.envelope(interaction, channel, user, {
      type: 3, // MESSAGE_COMPONENT
      data: { custom_id: interaction.customId, component_type: 2 },
      message,
    });
  }

  private envelope(
    interaction: EmulatedInteraction,
    channel: EmulatedChannel,
    user: APIUser,
    fields: Record<string, unknown>,
  ): Record<string, unknown> {
    const inGuild = channel.kind !== "dm";
    return {
      id: interaction.id,
      application_id: this.world.bot.id,
      token: interaction.token,
      version: 1,
      ...fields,
      channel_id: channel.id,
      channel: this.world.channelPayload(channel),
      app_permissions: "68608",
      locale: "en-US",
      entitlements: [],
      authorizing_integration_owners: {},
      context: inGuild ? 0 : 1,
      attachment_size_limit: 10_485_760,
      ...(inGuild
        ? {
            guild_id: channel.guildId,
            guild_locale: "en-US",
            member: {
              user,
              roles: [],
              joined_at: new Date(0).toISOString(),
              deaf: false,
              mute: false,
              flags: 0,
              permissions: "68608",
            },
          }
        : { user }),
    };
  }
}

/** Every button custom_id in a message's action rows. */
export function customIds(message: GatewayMessage): string[] {
  const rows = (message.components ?? []) as Array<{ components?: Array<{ custom_id?: string }> }>;
  return rows.flatMap((row) => (row.components ?? []).flatMap((c) => (c.custom_id ? [c.custom_id] : [])));
}
