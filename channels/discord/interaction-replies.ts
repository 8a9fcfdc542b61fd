/**
 * Answers to slash commands. Discord wants an interaction answered within 3 s and its token works
 * for 15 minutes. The answer itself comes from the outbox (a reply like any other, to the
 * interaction's reply target), so each open interaction goes through at most these steps:
 *
 *   waiting ──(the answer arrives first)──────────→ answered (callback type 4: the answer)
 *   waiting ──(deferAfterMs passes first)─→ deferred (type 5: "thinking…")
 *   deferred ──(the answer arrives)──────────────→ answered (edits the "thinking…" message)
 *   answered ──(a further chunk)─────────────────→ answered (a follow-up message)
 *
 * Past the token's life, or for an interaction this process never saw (it restarted), `send`
 * returns null and the adapter posts to the channel. Tokens stay in memory only: they are
 * credentials, kept out of the database and the logs.
 */
import {
  AllowedMentionsTypes,
  type APIMessage,
  InteractionResponseType,
  MessageFlags,
  type REST,
  RESTJSONErrorCodes,
  type RESTPostAPIInteractionCallbackWithResponseResult,
  Routes,
} from "discord.js";
import type { Clock, Timer } from "../../src/util/clock.ts";
import type { Logger } from "../../src/util/log.ts";
import type { OutgoingMessage, SendReceipt } from "../types.ts";
import { actionRows } from "./send.ts";

/** How long Discord accepts an interaction's token for follow-ups and edits. */
export const INTERACTION_TOKEN_MS = 15 * 60_000;
/** A call started this close to the token's end could race it: the channel is the safer way. */
const TOKEN_MARGIN_MS = 30_000;

const ALLOWED_MENTIONS = { parse: [AllowedMentionsTypes.User] };

export interface OpenInteraction {
  id: string;
  token: string;
  applicationId: string;
  /** When Discord created it (its snowflake's time), in milliseconds since the epoch. */
  createdAtMs: number;
}

interface Entry extends OpenInteraction {
  state: "waiting" | "deferred" | "answered" | "gone";
  /** Steps of one interaction run one after another (the defer timer and the outbox's sends). */
  tail: Promise<unknown>;
  timer: Timer | null;
}

/** Discord's answer to a token that no longer works, or to an interaction answered too late. */
const TOKEN_GONE = new Set<number>([
  RESTJSONErrorCodes.UnknownInteraction,
  RESTJSONErrorCodes.UnknownWebhook,
  RESTJSONErrorCodes.InvalidWebhookToken,
]);

function codeOf(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

function isTokenGone(error: unknown): boolean {
  const code = codeOf(error);
  const status = (error as { status?: unknown } | null)?.status;
  return (typeof code === "number" && TOKEN_GONE.has(code)) || status === 401;
}

export class InteractionReplies {
  private readonly open = new Map<string, Entry>();

  constructor(
    private readonly rest: REST,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Answer "thinking…" when the answer is not sent this long after the interaction was created. */
    private readonly deferAfterMs: number,
  ) {}

  /** Starts tracking `interaction`; false when it is already open (a redelivery in this process). */
  track(interaction: OpenInteraction): boolean {
    this.sweep();
    if (this.open.has(interaction.id)) return false;
    const entry: Entry = { ...interaction, state: "waiting", tail: Promise.resolve(), timer: null };
    const elapsedMs = this.clock.now() - interaction.createdAtMs;
    // Unref'd: a deferral still pending when the gateway exits does not hold the process (the
    // outbox, which drains after the adapter stopped, may still answer through it meanwhile).
    entry.timer = this.clock.setTimer(
      Math.max(0, this.deferAfterMs - elapsedMs),
      () => {
        entry.timer = null;
        void this.step(entry, () => this.defer(entry));
      },
      { unref: true },
    );
    this.open.set(interaction.id, entry);
    return true;
  }

  /** Stops tracking without answering (a redelivery whose first delivery was answered before). */
  forget(id: string): void {
    const entry = this.open.get(id);
    entry?.timer?.cancel();
    this.open.delete(id);
  }

  /**
   * Sends `message` as interaction `id`'s answer (or a follow-up to it). Null when it must go to
   * the channel instead: the interaction is unknown here or its token has (nearly) expired.
   * Throws what Discord answered otherwise, mapped by the caller.
   */
  send(id: string, message: OutgoingMessage): Promise<SendReceipt | null> {
    const entry = this.usable(id);
    if (entry === null) return Promise.resolve(null);
    return this.step(entry, () => this.deliver(entry, message));
  }

  /** Shows `text` to the user alone (a command that was not taken); failures are logged. */
  async notice(id: string, text: string): Promise<void> {
    const entry = this.usable(id);
    if (entry === null) return;
    await this.step(entry, async () => {
      const content = { content: text, flags: MessageFlags.Ephemeral, allowed_mentions: ALLOWED_MENTIONS };
      if (entry.state === "waiting")
        await this.callback(entry, InteractionResponseType.ChannelMessageWithSource, content);
      else if (entry.state === "deferred")
        await this.rest.patch(Routes.webhookMessage(entry.applicationId, entry.token, "@original"), {
          body: { content: text },
          auth: false,
        });
      else if (entry.state === "answered")
        await this.rest.post(Routes.webhook(entry.applicationId, entry.token), {
          body: content,
          auth: false,
        });
      entry.state = entry.state === "gone" ? "gone" : "answered";
    }).catch((error: unknown) =>
      this.logger.warn("discord.interaction_notice_failed", { interactionId: id, error: describe(error) }),
    );
  }

  private usable(id: string): Entry | null {
    const entry = this.open.get(id);
    if (entry === undefined || entry.state === "gone") return null;
    if (this.clock.now() - entry.createdAtMs >= INTERACTION_TOKEN_MS - TOKEN_MARGIN_MS) {
      this.forget(id);
      return null;
    }
    return entry;
  }

  private step<T>(entry: Entry, run: () => Promise<T>): Promise<T> {
    const next = entry.tail.then(run, run);
    entry.tail = next.catch(() => undefined);
    return next;
  }

  private async defer(entry: Entry): Promise<void> {
    if (entry.state !== "waiting") return;
    try {
      await this.callback(entry, InteractionResponseType.DeferredChannelMessageWithSource, undefined);
      entry.state = "deferred";
    } catch (error) {
      // Too late or refused: the answer goes to the channel when it comes.
      entry.state = "gone";
      this.logger.warn("discord.interaction_defer_failed", {
        interactionId: entry.id,
        error: describe(error),
        hint: "the answer will be posted in the channel",
      });
    }
  }

  private async deliver(entry: Entry, message: OutgoingMessage): Promise<SendReceipt | null> {
    const body = {
      content: message.text,
      allowed_mentions: ALLOWED_MENTIONS,
      ...(message.buttons ? { components: actionRows(message.buttons) } : {}),
    };
    try {
      switch (entry.state) {
        case "waiting": {
          // The defer timer stays armed until this worked: after a failed try it still defers, and
          // the outbox's retry then edits the "thinking…" response.
          const answered = (await this.callback(
            entry,
            InteractionResponseType.ChannelMessageWithSource,
            body,
          )) as RESTPostAPIInteractionCallbackWithResponseResult | undefined;
          entry.timer?.cancel();
          entry.state = "answered";
          const messageId = answered?.resource?.message?.id;
          return { messageIds: messageId === undefined ? [] : [messageId] };
        }
        case "deferred": {
          const edited = (await this.rest.patch(
            Routes.webhookMessage(entry.applicationId, entry.token, "@original"),
            { body, auth: false },
          )) as APIMessage;
          entry.state = "answered";
          return { messageIds: [edited.id] };
        }
        case "answered": {
          const created = (await this.rest.post(Routes.webhook(entry.applicationId, entry.token), {
            body,
            query: new URLSearchParams({ wait: "true" }),
            auth: false,
          })) as APIMessage;
          return { messageIds: [created.id] };
        }
        case "gone":
          return null;
      }
    } catch (error) {
      if (
        entry.state === "waiting" &&
        codeOf(error) === RESTJSONErrorCodes.InteractionHasAlreadyBeenAcknowledged
      ) {
        // An earlier try whose answer was lost did answer it: this text is already shown.
        entry.timer?.cancel();
        entry.state = "answered";
        return { messageIds: [] };
      }
      if (!isTokenGone(error)) throw error;
      entry.state = "gone";
      return null;
    }
  }

  private async callback(entry: Entry, type: InteractionResponseType, data: unknown): Promise<unknown> {
    return await this.rest.post(Routes.interactionCallback(entry.id, entry.token), {
      body: { type, ...(data === undefined ? {} : { data }) },
      query: new URLSearchParams({ with_response: "true" }),
      auth: false,
    });
  }

  /** Drops what can no longer be answered (tokens expire after 15 minutes). */
  private sweep(): void {
    const now = this.clock.now();
    for (const [id, entry] of this.open) {
      if (now - entry.createdAtMs >= INTERACTION_TOKEN_MS) this.forget(id);
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
