/** What the Matrix adapter's tests share: the adapter on the emulator, a readable state store, and the side. */

import type { MatrixConfigInput } from "../../../channels/matrix/config.ts";
import {
  BUTTONS_FIELD,
  createMatrixAdapter,
  decodeTarget,
  type MatrixAdapter,
} from "../../../channels/matrix/index.ts";
import type { ChannelStateStore } from "../../../channels/module.ts";
import type { MatrixEmulator } from "../../emulators/matrix/index.ts";
import { recordingLogger } from "../../support/logger.ts";
import type { ShownMessage } from "../adapter-contract.ts";

/** A state store the test can read: what the adapter saved, by name. */
export function memoryStateStore(): ChannelStateStore & { values: Map<string, string> } {
  const values = new Map<string, string>();
  return {
    values,
    loadChannelState: async (name) => values.get(name) ?? null,
    saveChannelState: async (name, value) => {
      values.set(name, value);
    },
  };
}

export function matrixAdapter(
  emulator: MatrixEmulator,
  options: { state?: ChannelStateStore; config?: Partial<MatrixConfigInput> } = {},
) {
  const logger = recordingLogger();
  const adapter: MatrixAdapter = createMatrixAdapter(
    {
      homeserverUrl: emulator.url,
      accessToken: emulator.bot.token,
      requestTimeoutMs: 300,
      syncTimeoutMs: 1_000,
      syncStallMarginMs: 500,
      syncRetryDelaysMs: [10],
      invites: { kind: "everyone" },
      ...options.config,
    },
    { logger, ...(options.state ? { state: options.state } : {}) },
  );
  return { adapter, logger };
}

/** Whether the saved sync token is past the event (the adapter's acknowledgement). */
export function sinceCovers(
  emulator: MatrixEmulator,
  state: { values: Map<string, string> },
  roomId: string,
  eventId: string,
): boolean {
  const since = state.values.get(`matrix:${emulator.bot.userId}:since`);
  const position = Number(/^s(\d+)$/.exec(since ?? "")?.[1] ?? -1);
  const stored = emulator.world.find(roomId, eventId);
  if (!stored) throw new Error(`no event ${eventId} in ${roomId}`);
  return position >= stored.pos;
}

/** The bot's messages in a target as a member sees them (notices aside), in the contract's terms. */
export function shownMessages(emulator: MatrixEmulator, target: string): ShownMessage[] {
  const { roomId, threadRoot } = decodeTarget(target);
  return emulator
    .shown(roomId, emulator.bot.userId, threadRoot === undefined ? {} : { thread: threadRoot })
    .filter((message) => message.msgtype !== "m.notice")
    .map((message) => {
      const inReplyTo = (message.relatesTo?.["m.in_reply_to"] as { event_id?: string } | undefined)?.event_id;
      const replyTo = message.relatesTo?.is_falling_back === true ? undefined : inReplyTo;
      const declared = (message.content[BUTTONS_FIELD] ?? []) as Array<{
        label: string;
        data: string;
        key: string;
      }>;
      const reacted = new Set(
        emulator
          .reactions(roomId, message.eventId)
          .filter((r) => r.sender === emulator.bot.userId)
          .map((r) => r.key),
      );
      // A button shows when the prompt declares it and the bot's reaction for it is under it.
      const buttons = declared
        .filter((b) => reacted.has(b.key))
        .map((b) => ({ label: b.label, data: b.data }));
      const url = typeof message.content.url === "string" ? message.content.url : undefined;
      const media = url === undefined ? undefined : emulator.mediaOf(url);
      return {
        receiptIds: [message.eventId],
        // Matrix 1.10 captions: a file's body is its caption when it differs from the filename.
        text: url === undefined || message.body !== message.content.filename ? message.body : "",
        ...(replyTo === undefined ? {} : { replyTo }),
        ...(buttons.length > 0 ? { buttons: [buttons] } : {}),
        ...(media
          ? {
              files: [{ name: String(message.content.filename ?? media.filename ?? ""), bytes: media.bytes }],
            }
          : {}),
      };
    });
}
