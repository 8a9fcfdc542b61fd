/**
 * What a platform's own report about a sent message (WhatsApp's status webhooks) does to its
 * outbox record. Pure: both repositories apply this decision in one compare-and-set write.
 *
 * A report names its send by the idempotency key the send carried, `<record key>#<chunk>`. It
 * settles a record whose outcome the gateway does not know yet (`sending`: the call is in flight,
 * its answer was lost, or the process died mid-send; `ambiguous`: nobody has decided):
 * - `delivered` for the record's last chunk → delivered, the platform's message id in the receipt;
 * - `failed` for any chunk not yet confirmed → failed, with the platform's reason.
 * and a `failed` report also fails a `delivered` record: the platform accepted the message and
 * then could not deliver it (WhatsApp reports 131047, outside the 24-hour window, this way).
 * Anything else changes nothing: a record already settled, a report for an earlier chunk (the
 * chunks after it are still to come), a stream (finished by editing, never by a status).
 */
import type { SendReceipt } from "../channels/types.ts";
import type { OutboxRecord, OutboxState, PlatformStatusReport } from "./types.ts";

/** The history action of a record settled by the platform's report. */
export const RESOLVED_BY_PLATFORM_STATUS = "resolved by platform status";

/**
 * `last_error` of a `sending` record whose send's outcome is unknown and that waits for the
 * platform's report (until its `nextAttemptAtMs`) before it becomes ambiguous.
 */
export const AWAITING_STATUS_PREFIX = "awaiting the platform's delivery status";

export type PlatformStatusDecision =
  | {
      apply: true;
      from: Extract<OutboxState, "sending" | "ambiguous">;
      to: "delivered";
      receipt: SendReceipt;
      /** For the history entry. */
      note: string;
    }
  | {
      apply: true;
      from: Extract<OutboxState, "sending" | "ambiguous" | "delivered">;
      to: "failed";
      reason: string;
      note: string;
    }
  | { apply: false; why: string };

/** The record key and chunk a send's idempotency key names; null for a key the outbox did not make. */
export function parseSendKey(idempotencyKey: string): { recordKey: string; chunk: number } | null {
  const at = idempotencyKey.lastIndexOf("#");
  if (at <= 0) return null;
  const chunk = Number(idempotencyKey.slice(at + 1));
  if (!Number.isInteger(chunk) || chunk < 0) return null;
  return { recordKey: idempotencyKey.slice(0, at), chunk };
}

/** What `report` (about chunk `chunk` of `record`) does to the record. */
export function decidePlatformStatus(
  record: OutboxRecord | null,
  chunk: number,
  report: PlatformStatusReport,
): PlatformStatusDecision {
  if (record === null) return { apply: false, why: "no outbox record has this key" };
  if (record.kind !== "message")
    return { apply: false, why: "a stream is settled by editing, not by a status" };
  const note = `${report.status} (platform message ${report.messageId}, chunk ${chunk + 1})`;
  if (report.outcome === "failed" && record.state === "delivered") {
    return {
      apply: true,
      from: "delivered",
      to: "failed",
      reason: `accepted, then reported undeliverable by the platform: ${report.reason ?? report.status}`,
      note,
    };
  }
  if (record.state !== "sending" && record.state !== "ambiguous")
    return { apply: false, why: `the record is already ${record.state}` };
  if (report.outcome === "failed") {
    return {
      apply: true,
      from: record.state,
      to: "failed",
      reason: `the platform reported the send failed: ${report.reason ?? report.status}`,
      note,
    };
  }
  const lastChunk = (record.rendered?.chunks.length ?? 1) - 1;
  if (chunk !== lastChunk)
    return {
      apply: false,
      why: `chunk ${chunk + 1} is not the last (${lastChunk + 1}); the rest is still to be sent`,
    };
  const known = record.receipt?.messageIds ?? [];
  return {
    apply: true,
    from: record.state,
    to: "delivered",
    receipt: { messageIds: known.includes(report.messageId) ? known : [...known, report.messageId] },
    note,
  };
}
