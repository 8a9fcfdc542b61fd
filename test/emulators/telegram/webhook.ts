/**
 * Webhook delivery as Telegram does it: pending updates are POSTed in order to the registered URL
 * with X-Telegram-Bot-Api-Secret-Token; a non-2xx answer (or no answer) is retried with growing
 * delays, and an update is confirmed only by a 2xx. Bounded: after maxAttempts it is dropped.
 */
import type { WebhookRegistration } from "./bot-api.ts";
import type { UpdateQueue } from "./update-queue.ts";

export interface WebhookDeliveryOptions {
  maxAttempts: number;
  firstRetryDelayMs: number;
  /** How long Telegram waits for the bot's answer before counting the attempt as failed. */
  attemptTimeoutMs: number;
}

export interface WebhookAttempt {
  updateId: number;
  attempt: number;
  atMs: number;
  /** HTTP status, or null when the request failed without an answer. */
  status: number | null;
  error?: string;
}

export class WebhookDelivery {
  private registration: WebhookRegistration | null = null;
  private pumping = false;
  private closed = false;
  private readonly inFlight = new Set<AbortController>();
  readonly attempts: WebhookAttempt[] = [];

  constructor(
    private readonly queue: UpdateQueue,
    private readonly options: WebhookDeliveryOptions,
    private readonly now: () => number,
  ) {
    queue.onPending(() => this.pump());
  }

  current(): WebhookRegistration | null {
    return this.registration;
  }

  set(registration: WebhookRegistration): void {
    this.registration = registration;
    this.queue.conflictWaiter();
    this.pump();
  }

  clear(): void {
    this.registration = null;
  }

  close(): void {
    this.closed = true;
    this.registration = null;
    for (const controller of this.inFlight) controller.abort();
  }

  private pump(): void {
    if (this.pumping || this.closed || !this.registration) return;
    this.pumping = true;
    void this.drain().finally(() => {
      this.pumping = false;
      if (this.registration && this.queue.peek() && !this.closed) this.pump();
    });
  }

  private async drain(): Promise<void> {
    for (;;) {
      const registration = this.registration;
      const update = this.queue.peek();
      if (!registration || !update || this.closed) return;
      let delivered = false;
      for (let attempt = 1; attempt <= this.options.maxAttempts && !this.closed; attempt += 1) {
        if (attempt > 1) await Bun.sleep(this.options.firstRetryDelayMs * 2 ** (attempt - 2));
        if (this.registration !== registration) break;
        delivered = await this.post(registration, update, attempt);
        if (delivered) break;
      }
      if (this.registration !== registration && !delivered) continue;
      this.queue.settle(update.update_id, delivered ? "confirmed" : "dropped");
    }
  }

  private async post(
    registration: WebhookRegistration,
    update: { update_id: number },
    attempt: number,
  ): Promise<boolean> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(), this.options.attemptTimeoutMs);
    const record: WebhookAttempt = { updateId: update.update_id, attempt, atMs: this.now(), status: null };
    this.attempts.push(record);
    try {
      const response = await fetch(registration.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(registration.secretToken
            ? { "x-telegram-bot-api-secret-token": registration.secretToken }
            : {}),
        },
        body: JSON.stringify(update),
        signal: controller.signal,
      });
      await response.arrayBuffer();
      record.status = response.status;
      return response.status >= 200 && response.status < 300;
    } catch (error) {
      record.error = error instanceof Error ? error.message : String(error);
      return false;
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
  }
}
