import { createHash } from "node:crypto";
import {
  AllowedMentionsTypes,
  type APIAllowedMentions,
  type APIMessage,
  type REST,
  RESTJSONErrorCodes,
  type RESTPatchAPIChannelMessageJSONBody,
  type RESTPostAPIChannelMessageJSONBody,
  Routes,
} from "discord.js";
import { isSwitchboardError, SwitchboardError } from "../../src/errors.ts";
import type { OutgoingMessage, SendReceipt } from "../types.ts";
import { type DiscordAction, toSwitchboardError } from "./errors.ts";
import { decodeTarget } from "./keys.ts";

export const MAX_MESSAGE_CHARS = 2000;
/** Discord accepts nonces of at most 25 characters. */
export const MAX_NONCE_CHARS = 25;

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

  async edit(target: string, messageId: string, message: OutgoingMessage): Promise<void> {
    const channelId = decodeTarget(target);
    checkText(message.text);
    const body: RESTPatchAPIChannelMessageJSONBody = {
      content: message.text,
      allowed_mentions: ALLOWED_MENTIONS,
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
