import { createHash } from "node:crypto";
import {
  AllowedMentionsTypes,
  type APIActionRowComponent,
  type APIAllowedMentions,
  type APIButtonComponentWithCustomId,
  type APIMessage,
  ButtonStyle,
  ComponentType,
  type REST,
  RESTJSONErrorCodes,
  type RESTPatchAPIChannelMessageJSONBody,
  type RESTPostAPIChannelMessageJSONBody,
  Routes,
} from "discord.js";
import { isSwitchboardError, SwitchboardError } from "../../src/errors.ts";
import type { FileLimits, OutgoingFile, OutgoingMessage, SendReceipt } from "../types.ts";
import { type DiscordAction, toSwitchboardError } from "./errors.ts";
import { decodeTarget } from "./keys.ts";

export const MAX_MESSAGE_CHARS = 2000;
/** Discord accepts nonces of at most 25 characters. */
export const MAX_NONCE_CHARS = 25;

/** Bots upload files up to 10 MiB (Discord's default); a caption is the message's content. */
export const DISCORD_FILE_LIMITS: FileLimits = {
  maxFileBytes: 10 * 1024 * 1024,
  maxCaptionChars: MAX_MESSAGE_CHARS,
};

/** Model output may contain "@everyone" or role pings; only plain user mentions may ping. */
const ALLOWED_MENTIONS: APIAllowedMentions = { parse: [AllowedMentionsTypes.User], replied_user: true };

/**
 * The nonce for an outbox record: the same key always gives the same ≤ 25-char value, so with
 * `enforce_nonce` a retried create returns the first message instead of posting a second one.
 */
export function nonceFor(idempotencyKey: string): string {
  return createHash("sha256").update(idempotencyKey).digest("hex").slice(0, MAX_NONCE_CHARS);
}

/** Creates, edits and deletes messages and sends typing through discord.js's REST client. */
export class DiscordSender {
  constructor(
    private readonly rest: REST,
    private readonly requestTimeoutMs: number,
  ) {}

  async send(target: string, message: OutgoingMessage): Promise<SendReceipt> {
    const channelId = decodeTarget(target);
    checkText(message.text);
    const body: RESTPostAPIChannelMessageJSONBody = {
      content: message.text,
      nonce: nonceFor(message.idempotencyKey),
      enforce_nonce: true,
      allowed_mentions: ALLOWED_MENTIONS,
      ...(message.buttons ? { components: actionRows(message.buttons) } : {}),
      ...(message.replyTo === undefined
        ? {}
        : {
            message_reference: {
              message_id: checkSnowflake(message.replyTo, "replyTo"),
              fail_if_not_exists: false,
            },
          }),
    };
    const created = (await this.call("send", () =>
      this.rest.post(Routes.channelMessages(channelId), { body }),
    )) as APIMessage;
    return { messageIds: [created.id] };
  }

  /**
   * Posts the file as a multipart attachment with its caption as the content, under the record's
   * nonce with `enforce_nonce`: a retried upload returns the first message instead of a second.
   */
  async sendFile(target: string, file: OutgoingFile): Promise<SendReceipt> {
    const channelId = decodeTarget(target);
    if (file.caption !== "") checkText(file.caption);
    const filename = file.filename.replace(/[\p{Cc}\\/]/gu, "_");
    const body: RESTPostAPIChannelMessageJSONBody = {
      ...(file.caption === "" ? {} : { content: file.caption }),
      nonce: nonceFor(file.idempotencyKey),
      enforce_nonce: true,
      allowed_mentions: ALLOWED_MENTIONS,
      attachments: [{ id: 0, filename }],
      ...(file.replyTo === undefined
        ? {}
        : {
            message_reference: {
              message_id: checkSnowflake(file.replyTo, "replyTo"),
              fail_if_not_exists: false,
            },
          }),
    };
    const created = (await this.call("send", () =>
      this.rest.post(Routes.channelMessages(channelId), {
        body,
        files: [{ name: filename, data: file.bytes, contentType: file.mimeType }],
      }),
    )) as APIMessage;
    return { messageIds: [created.id] };
  }

  async edit(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
    const channelId = decodeTarget(target);
    checkText(message.text);
    const body: RESTPatchAPIChannelMessageJSONBody = {
      content: message.text,
      allowed_mentions: ALLOWED_MENTIONS,
      // An edit without buttons removes them (an approval prompt once decided).
      components: message.buttons ? actionRows(message.buttons) : [],
    };
    await this.call("edit", () =>
      this.rest.patch(Routes.channelMessage(channelId, checkSnowflake(messageId, "messageId")), { body }),
    );
  }

  /** Deleting a message that is already gone succeeds, so a retried delete is harmless. */
  async delete(target: string, messageId: string): Promise<void> {
    const channelId = decodeTarget(target);
    try {
      await this.call("delete", () =>
        this.rest.delete(Routes.channelMessage(channelId, checkSnowflake(messageId, "messageId"))),
      );
    } catch (error) {
      if (
        isSwitchboardError(error, "platform_rejected") &&
        error.details?.discordCode === RESTJSONErrorCodes.UnknownMessage
      ) {
        return;
      }
      throw error;
    }
  }

  /**
   * Shows `emoji` as the bot's reaction on the message, then takes each of `previous` away
   * (Discord answers 204 for a reaction the bot has not put there).
   */
  async react(target: string, messageId: string, emoji: string, previous: readonly string[]): Promise<void> {
    const channelId = decodeTarget(target);
    const id = checkSnowflake(messageId, "messageId");
    await this.call("react", () =>
      this.rest.put(Routes.channelMessageOwnReaction(channelId, id, encodeURIComponent(emoji))),
    );
    for (const old of previous) {
      if (old === emoji) continue;
      await this.call("react", () =>
        this.rest.delete(Routes.channelMessageOwnReaction(channelId, id, encodeURIComponent(old))),
      );
    }
  }

  async typing(target: string): Promise<void> {
    const channelId = decodeTarget(target);
    await this.call("typing", () => this.rest.post(Routes.channelTyping(channelId)));
  }

  private async call<T>(action: DiscordAction, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      throw toSwitchboardError(error, { action, requestTimeoutMs: this.requestTimeoutMs });
    }
  }
}

/** Discord allows 5 action rows of 5 buttons, labels up to 80 and custom ids up to 100 characters. */
const MAX_ROWS = 5;
const MAX_ROW_BUTTONS = 5;
const MAX_LABEL_CHARS = 80;
const MAX_CUSTOM_ID_CHARS = 100;

/** Buttons as action rows; custom_id is the button's data (signed by its maker), the press brings it back. */
export function actionRows(
  rows: NonNullable<OutgoingMessage["buttons"]>,
): APIActionRowComponent<APIButtonComponentWithCustomId>[] {
  if (rows.length > MAX_ROWS || rows.some((row) => row.length === 0 || row.length > MAX_ROW_BUTTONS)) {
    throw new SwitchboardError(
      "input_invalid",
      `Discord shows at most ${MAX_ROWS} rows of 1–${MAX_ROW_BUTTONS} buttons; regroup the buttons.`,
    );
  }
  return rows.map((row) => ({
    type: ComponentType.ActionRow,
    components: row.map((button) => {
      if (button.data.length === 0 || button.data.length > MAX_CUSTOM_ID_CHARS) {
        throw new SwitchboardError(
          "input_invalid",
          `A Discord button's data must be 1–${MAX_CUSTOM_ID_CHARS} characters, got ${button.data.length}.`,
        );
      }
      return {
        type: ComponentType.Button,
        style: ButtonStyle.Secondary,
        label: button.label.slice(0, MAX_LABEL_CHARS),
        custom_id: button.data,
      };
    }),
  }));
}

function checkText(text: string): void {
  if (text.length === 0) {
    throw new SwitchboardError(
      "input_invalid",
      "Discord cannot send an empty message; skip the send instead.",
    );
  }
  if (text.length > MAX_MESSAGE_CHARS) {
    throw new SwitchboardError(
      "input_invalid",
      `Discord messages hold at most ${MAX_MESSAGE_CHARS} characters, got ${text.length}; split the text (outbox/format) before sending.`,
    );
  }
}

function checkSnowflake(id: string, field: string): string {
  if (!/^\d{1,20}$/.test(id)) {
    throw new SwitchboardError(
      "input_invalid",
      `${field} must be a Discord message id (a snowflake), got "${id}".`,
    );
  }
  return id;
}
