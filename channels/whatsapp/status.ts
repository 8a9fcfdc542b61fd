/**
 * A status webhook (`statuses[]`) → what it says about one of our sends. Every send carries
 * `biz_opaque_callback_data` = the outbox record's id, which Meta echoes here, so a status can
 * settle a record whose send was interrupted: `sent`, `delivered` and `read` mean the message
 * reached WhatsApp (delivered, with the wamid as receipt); `failed` means it never will.
 */
import type { ReceivedStatus } from "./webhook-schema.ts";

/** Meta's code for a free-form message outside the 24-hour customer service window. */
export const OUTSIDE_WINDOW_CODE = 131047;

export interface StatusUpdate {
  /** `status:<wamid>:<status>`: Meta redelivers statuses too. */
  updateKey: string;
  /** The wamid of our message. */
  messageId: string;
  /** The user's wa_id. */
  recipient: string;
  /** biz_opaque_callback_data: the outbox record id the send carried; absent for sends without one. */
  outboxRecordId?: string;
  /** `delivered` for sent/delivered/read, `failed`, or `other` for statuses that settle nothing. */
  outcome: "delivered" | "failed" | "other";
  /** Meta's status word, as sent. */
  status: string;
  atMs: number;
  failure?: {
    code: number;
    title: string;
    details?: string;
    /** 131047: send the re-engagement template instead; retrying the same message cannot work. */
    outsideServiceWindow: boolean;
  };
}

/** Null when the status is for another number of the same app. */
export function toStatusUpdate(received: ReceivedStatus, account: string): StatusUpdate | null {
  if (received.phoneNumberId !== account) return null;
  const { status } = received;
  const outcome =
    status.status === "failed"
      ? "failed"
      : ["sent", "delivered", "read"].includes(status.status)
        ? "delivered"
        : "other";
  const update: StatusUpdate = {
    updateKey: `status:${status.id}:${status.status}`,
    messageId: status.id,
    recipient: status.recipient_id,
    outcome,
    status: status.status,
    atMs: Number(status.timestamp) * 1000,
  };
  if (status.biz_opaque_callback_data) update.outboxRecordId = status.biz_opaque_callback_data;
  if (outcome === "failed") {
    const error = status.errors?.[0];
    const code = error?.code ?? 0;
    const details = error?.error_data?.details;
    update.failure = {
      code,
      title: error?.title ?? error?.message ?? "failed without an error",
      ...(details === undefined ? {} : { details }),
      outsideServiceWindow: code === OUTSIDE_WINDOW_CODE,
    };
  }
  return update;
}
