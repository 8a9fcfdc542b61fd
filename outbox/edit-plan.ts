import type { OutboxPresentation, OutboxRecord } from "./types.ts";

/** How a record that edits an earlier one (`presentation.editOf`) is delivered. */
export type EditPlan =
  | { kind: "edit"; messageId: string }
  /** The earlier message is unknown: its text is sent as a new message instead. */
  | { kind: "send"; markdown: string; approvalId: string }
  | { kind: "fail"; reason: string };

/**
 * Edits the earlier record's (last) message when it is known. An earlier record an operator
 * resolved `--delivered` has no platform message id: it is shown, but cannot be edited, so the
 * record's `orSend` text goes out as a new message when it has one; so it does on a channel that
 * cannot edit messages at all.
 */
export function planEdit(
  record: { channel: string; presentation: Pick<OutboxPresentation, "orSend"> & { editOf: string } },
  original: Pick<OutboxRecord, "state" | "receipt"> | null,
  canEdit: boolean,
): EditPlan {
  const { editOf, orSend } = record.presentation;
  const messageId = original?.receipt?.messageIds.at(-1);
  if (original?.state === "delivered" && messageId === undefined && orSend !== undefined) {
    return { kind: "send", ...orSend };
  }
  // A channel that cannot edit (WhatsApp) shows the outcome as a message of its own instead.
  if (!canEdit)
    return orSend !== undefined
      ? { kind: "send", ...orSend }
      : { kind: "fail", reason: `${record.channel} cannot edit messages` };
  if (original === null || messageId === undefined) {
    return {
      kind: "fail",
      reason: `record ${editOf} has no message to edit (${original?.state ?? "missing"})`,
    };
  }
  return { kind: "edit", messageId };
}
