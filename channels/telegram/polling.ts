/**
 * Long polling with grammY's `bot.start()`, made at-least-once.
 *
 * Telegram confirms every update below the offset of the next getUpdates call, and grammY sends
 * "last tried update + 1" even when handling that update failed (its error handler continues, and
 * `bot.stop()` confirms the update in flight). So every getUpdates goes through a transformer that
 * caps the offset at "last update ingress accepted + 1": an update is confirmed only after ingress
 * resolved for it and for every update before it. A failed update is fetched again after a
 * backoff; later updates of its batch are not handed to ingress until it succeeds.
 */
import { Bot, type BotError, GrammyError, type Transformer } from "grammy";
import type { Update, UserFromGetMe } from "grammy/types";
import type { Clock } from "../../src/util/clock.ts";
import { toSwitchboardError } from "./errors.ts";
import type { TelegramEventSink } from "./events.ts";

export interface PollerOptions {
  token: string;
  apiRoot: string;
  botInfo: UserFromGetMe;
  pollTimeoutSeconds: number;
  requestTimeoutMs: number;
  allowedUpdates: ("message" | "edited_message" | "callback_query")[];
  /**
   * Resolves once the update is durable or deliberately skipped; rejects to have it fetched again.
   * `arrivedAtMs`: `performance.now()` when the getUpdates answer carrying it arrived.
   */
  receive(update: Update, arrivedAtMs: number): Promise<void>;
  clock: Clock;
  onEvent: TelegramEventSink;
}

/** Delay before fetching an update again after ingress failed `consecutiveFailures` times in a row. */
export function ingressRetryDelayMs(consecutiveFailures: number): number {
  return Math.min(500 * 2 ** Math.max(0, consecutiveFailures - 1), 30_000);
}

/** Thrown by the middleware so grammY moves on without the update counting as accepted. */
class UpdateNotAccepted extends Error {
  constructor(
    readonly updateId: number,
    readonly ingressError: unknown,
  ) {
    super(`update ${updateId} not accepted`);
  }
}

export class TelegramPoller {
  private readonly bot: Bot;
  private acceptedThroughUpdateId = 0;
  private highestOffsetSent = 0;
  /** When the batch being handled arrived (grammY handles a batch before it fetches the next). */
  private batchArrivedAtMs = 0;
  /** An earlier update of the batch being handled failed: hold back the rest. */
  private holdBatch = false;
  private stopping = false;
  private consecutiveFailures = 0;
  private connected = false;
  private loop: Promise<void> | null = null;
  private readonly stopSignal = new AbortController();

  constructor(private readonly options: PollerOptions) {
    const extraSeconds = Math.ceil(options.requestTimeoutMs / 1000);
    this.bot = new Bot(options.token, {
      botInfo: options.botInfo,
      client: { apiRoot: options.apiRoot, timeoutSeconds: options.pollTimeoutSeconds + extraSeconds },
    });
    this.bot.api.config.use(this.capOffset);
    this.bot.use(async (ctx) => await this.handle(ctx.update));
    this.bot.catch(async (error) => await this.onHandlerError(error));
  }

  isConnected(): boolean {
    return this.connected && !this.stopping;
  }

  /** Resolves once polling runs (deleteWebhook done); rejects if it cannot begin. */
  start(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let began = false;
      this.loop = this.bot
        .start({
          timeout: this.options.pollTimeoutSeconds,
          allowed_updates: this.options.allowedUpdates,
          onStart: () => {
            began = true;
            this.connected = true;
            resolve();
          },
        })
        .catch((error: unknown) => {
          this.connected = false;
          const mapped = toSwitchboardError(error, { method: "getUpdates" });
          if (began) this.options.onEvent({ kind: "polling_stopped", error: mapped });
          else reject(mapped);
        });
    });
  }

  /** Stops fetching, lets the update in flight finish, then confirms what ingress accepted. */
  async stop(): Promise<void> {
    if (!this.loop || this.stopping) return;
    this.stopping = true;
    this.stopSignal.abort();
    if (this.bot.isRunning()) {
      await this.bot.stop().catch(() => {
        // The confirming call failed: those updates will be delivered again; ingress dedupes.
      });
    }
    await this.loop;
    if (this.acceptedThroughUpdateId + 1 > this.highestOffsetSent) {
      await this.bot.api
        .getUpdates({ offset: this.acceptedThroughUpdateId + 1, limit: 1, timeout: 0 })
        .catch(() => {});
    }
    this.connected = false;
  }

  private async handle(update: Update): Promise<void> {
    if (this.stopping || this.holdBatch) throw new UpdateNotAccepted(update.update_id, null);
    try {
      await this.options.receive(update, this.batchArrivedAtMs);
    } catch (error) {
      this.holdBatch = true;
      throw new UpdateNotAccepted(update.update_id, error);
    }
    this.acceptedThroughUpdateId = Math.max(this.acceptedThroughUpdateId, update.update_id);
    this.consecutiveFailures = 0;
  }

  private async onHandlerError(error: BotError): Promise<void> {
    const cause = error.error;
    if (!(cause instanceof UpdateNotAccepted) || cause.ingressError === null) return;
    this.consecutiveFailures += 1;
    const retryInMs = ingressRetryDelayMs(this.consecutiveFailures);
    this.options.onEvent({
      kind: "ingress_failed",
      updateId: cause.updateId,
      error: cause.ingressError,
      retryInMs,
    });
    await this.options.clock.sleep(retryInMs, this.stopSignal.signal).catch(() => {});
  }

  private readonly capOffset: Transformer = async (prev, method, payload, signal) => {
    if (method !== "getUpdates") return await prev(method, payload, signal);
    const requested = (payload as { offset?: number }).offset;
    const safeOffset = this.acceptedThroughUpdateId + 1;
    const offset = requested === undefined ? safeOffset : Math.min(requested, safeOffset);
    this.holdBatch = false;
    try {
      const response = await prev(method, { ...payload, offset }, signal);
      this.batchArrivedAtMs = performance.now();
      if (response.ok) {
        this.highestOffsetSent = Math.max(this.highestOffsetSent, offset);
        this.connected = true;
      } else if (!this.stopping) {
        this.connected = false;
        const error = new GrammyError(`Call to '${method}' failed!`, response, method, payload);
        this.options.onEvent({ kind: "polling_error", error: toSwitchboardError(error, { method }) });
      }
      return response;
    } catch (error) {
      if (!this.stopping) {
        this.connected = false;
        this.options.onEvent({ kind: "polling_error", error: toSwitchboardError(error, { method }) });
      }
      throw error;
    }
  };
}
