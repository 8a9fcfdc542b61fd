/**
 * Webhook delivery as Meta does it: each body is POSTed to the subscribed URL with
 * `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body under the app secret>`, and any
 * answer other than 200 (or no answer in time) is redelivered later. Meta keeps trying for days
 * with growing gaps; here the gaps are `redeliveryDelaysMs` (one redelivery per entry), and
 * `redeliverNow()` skips the wait, so a test never sleeps through a schedule. Deliveries are
 * independent: one that is being retried does not hold back the next (Meta does not order them).
 */
import { createHmac } from "node:crypto";
import type { WebhookBody } from "./payloads.ts";

export interface WebhookDeliveryOptions {
  /**
   * Wait before each redelivery; the length is how many redeliveries follow a failed first
   * attempt. `Infinity` waits for `redeliverNow()`. Default [50, 100, 200, 400, 800].
   */
  redeliveryDelaysMs: number[];
  /** How long an attempt may take before it counts as failed. Default 10 000. */
  attemptTimeoutMs: number;
}

export interface WebhookAttempt {
  deliveryId: number;
  /** 1 for the first delivery. */
  attempt: number;
  atMs: number;
  /** HTTP status, or null when no answer came. */
  status: number | null;
  error?: string;
}

export interface WebhookDelivery {
  id: number;
  body: WebhookBody;
  /** Exactly the bytes that were signed and sent. */
  rawBody: string;
  state: "waiting_for_url" | "pending" | "delivered" | "gave_up";
  attempts: WebhookAttempt[];
  /** Sign with another secret (a forgery), or send no signature header at all; either is sent once. */
  signature: "valid" | "forged" | "missing";
}

/** The header Meta puts on every webhook POST. */
export function signWebhookBody(appSecret: string, rawBody: string): string {
  return `sha256=${createHmac("sha256", appSecret).update(rawBody).digest("hex")}`;
}

export class WebhookSender {
  readonly deliveries: WebhookDelivery[] = [];
  private url: string | null = null;
  private closed = false;
  private readonly wakers = new Set<() => void>();
  private readonly inFlight = new Set<AbortController>();
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly appSecret: string,
    private readonly options: WebhookDeliveryOptions,
    private readonly now: () => number,
  ) {}

  /** Subscribes `url` (the app's callback URL); deliveries waiting for one start now. */
  setUrl(url: string | null): void {
    this.url = url;
    if (url === null) return;
    for (const delivery of this.deliveries) {
      if (delivery.state === "waiting_for_url") this.start(delivery);
    }
  }

  currentUrl(): string | null {
    return this.url;
  }

  /** Queues `body` for delivery (at once when a URL is set). */
  send(body: WebhookBody, signature: WebhookDelivery["signature"] = "valid"): WebhookDelivery {
    const delivery: WebhookDelivery = {
      id: this.deliveries.length + 1,
      body,
      rawBody: JSON.stringify(body),
      state: "waiting_for_url",
      attempts: [],
      signature,
    };
    this.deliveries.push(delivery);
    if (this.url !== null && !this.closed) this.start(delivery);
    return delivery;
  }

  /** Ends every wait between attempts now: pending deliveries are retried at once. */
  redeliverNow(): void {
    for (const wake of [...this.wakers]) wake();
  }

  /** Resolves when no delivery is running (each delivered or given up). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const controller of this.inFlight) controller.abort();
    this.redeliverNow();
    await this.settled();
  }

  private start(delivery: WebhookDelivery): void {
    delivery.state = "pending";
    const run = this.deliver(delivery).finally(() => this.running.delete(run));
    this.running.add(run);
  }

  private async deliver(delivery: WebhookDelivery): Promise<void> {
    // A forger gets one try: only Meta redelivers.
    const delays = delivery.signature === "valid" ? this.options.redeliveryDelaysMs : [];
    for (let attempt = 1; attempt <= delays.length + 1; attempt += 1) {
      if (attempt > 1) await this.wait(delays[attempt - 2] ?? 0);
      const url = this.url;
      if (this.closed || url === null) break;
      if (await this.post(url, delivery, attempt)) {
        delivery.state = "delivered";
        return;
      }
    }
    delivery.state = "gave_up";
  }

  private wait(delayMs: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const wake = () => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        resolve();
      };
      this.wakers.add(wake);
      if (this.closed) wake();
      else if (Number.isFinite(delayMs)) timer = setTimeout(wake, delayMs);
    });
  }

  private async post(url: string, delivery: WebhookDelivery, attempt: number): Promise<boolean> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(), this.options.attemptTimeoutMs);
    const record: WebhookAttempt = { deliveryId: delivery.id, attempt, atMs: this.now(), status: null };
    delivery.attempts.push(record);
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "facebookexternalua",
    };
    if (delivery.signature !== "missing") {
      const secret = delivery.signature === "forged" ? `${this.appSecret}-forged` : this.appSecret;
      headers["x-hub-signature-256"] = signWebhookBody(secret, delivery.rawBody);
    }
    try {
      const response = await fetch(url, {
        method: "POST",
        headers,
        body: delivery.rawBody,
        signal: controller.signal,
      });
      await response.arrayBuffer();
      record.status = response.status;
      return response.status === 200;
    } catch (error) {
      record.error = error instanceof Error ? error.message : String(error);
      return false;
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
  }
}
