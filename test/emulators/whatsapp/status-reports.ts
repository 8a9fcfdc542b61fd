/**
 * The statuses Meta reports about the business's messages, as webhooks: after each accepted send
 * as the plan says, or by hand. Each status echoes the send's `biz_opaque_callback_data`.
 */
import { ERRORS, type StatusError, statusError } from "./graph-errors.ts";
import {
  type BusinessNumber,
  billingOf,
  changeValue,
  type OutboundStatus,
  secondsString,
  type WebhookStatus,
  webhookBody,
} from "./payloads.ts";
import type { Transcripts } from "./transcript.ts";
import type { WebhookDelivery, WebhookSender } from "./webhook.ts";

/**
 * What Meta reports after each accepted send: "on" sends `sent`, then `delivered` (and `read`
 * with `upTo: "read"`), each in its own POST unless `batch`, `delayMs` after the send; "held"
 * keeps them until released (a status that comes late); "never" sends none (a lost status);
 * "failed" reports every send failed with `code`.
 */
export type StatusPlan =
  | { kind: "on"; upTo?: "sent" | "delivered" | "read"; delayMs?: number; batch?: boolean }
  | { kind: "held" }
  | { kind: "never" }
  | { kind: "failed"; code: number; title: string; details?: string };

const STEPS: OutboundStatus[] = ["sent", "delivered", "read"];

export class StatusReports {
  plan: StatusPlan;
  private held: WebhookStatus[] = [];
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(
    private readonly deps: {
      business: BusinessNumber;
      transcripts: Transcripts;
      webhook: WebhookSender;
      now: () => number;
    },
    plan: StatusPlan,
  ) {
    this.plan = plan;
  }

  /** A status item for an outbound message. */
  statusFor(wamid: string, status: OutboundStatus, failure?: StatusError): WebhookStatus {
    const found = this.deps.transcripts.find(wamid);
    if (found?.entry.direction !== "out")
      throw new Error(`statusFor: ${wamid} is not a message the business sent`);
    const { entry, waId } = found;
    const nowMs = this.deps.now();
    const billing =
      status === "sent" || status === "delivered"
        ? billingOf(
            `conv-${waId}`,
            entry.type === "template" ? "utility" : "service",
            nowMs + 24 * 3600_000,
            status === "sent",
          )
        : {};
    return {
      id: wamid,
      status,
      timestamp: secondsString(nowMs),
      recipient_id: waId,
      ...(entry.callbackData === undefined ? {} : { biz_opaque_callback_data: entry.callbackData }),
      ...billing,
      ...(status === "failed"
        ? { errors: [failure ?? statusError(ERRORS.unknown, "Message failed to send.")] }
        : {}),
    };
  }

  /** Statuses in one webhook POST. */
  post(statuses: WebhookStatus[]): WebhookDelivery {
    const { business, webhook } = this.deps;
    return webhook.send(webhookBody(business, [changeValue(business, { statuses })]));
  }

  /**
   * What follows an accepted send, by the plan; `failure` (131047 outside the window) is reported
   * whatever the plan, unless it is "never".
   */
  afterSend(wamid: string, failure: StatusError | undefined): void {
    const plan = this.plan;
    if (plan.kind === "never") return;
    const planned =
      failure ??
      (plan.kind === "failed"
        ? statusError({ code: plan.code, title: plan.title }, plan.details ?? plan.title)
        : undefined);
    let statuses: WebhookStatus[];
    if (planned) {
      this.markFailed(wamid, planned);
      statuses = [this.statusFor(wamid, "failed", planned)];
    } else {
      const upTo = plan.kind === "on" ? (plan.upTo ?? "delivered") : "delivered";
      statuses = STEPS.slice(0, STEPS.indexOf(upTo) + 1).map((step) => {
        this.deps.transcripts.setStatus(wamid, step, this.deps.now());
        return this.statusFor(wamid, step);
      });
    }
    if (plan.kind === "held") {
      this.held.push(...statuses);
      return;
    }
    const delayMs = plan.kind === "on" ? (plan.delayMs ?? 0) : 0;
    const batch = plan.kind === "on" && plan.batch === true;
    // After the send's answer has gone out, as Meta's statuses always are.
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (batch) this.post(statuses);
      else for (const status of statuses) this.post([status]);
    }, delayMs);
    this.timers.add(timer);
  }

  /** Sends every held status, in order, one POST each. */
  release(): void {
    const held = this.held;
    this.held = [];
    for (const status of held) this.post([status]);
  }

  heldCount(): number {
    return this.held.length;
  }

  /** Forgets held statuses and cancels scheduled ones. */
  clear(): void {
    this.held = [];
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private markFailed(wamid: string, failure: StatusError): void {
    this.deps.transcripts.setStatus(wamid, "failed", this.deps.now());
    const entry = this.deps.transcripts.find(wamid)?.entry;
    if (entry) entry.failure = { code: failure.code, title: failure.title };
  }
}
