import { describe, expect, test } from "bun:test";
import { planEdit } from "../../outbox/edit-plan.ts";
import type { OutboxState } from "../../outbox/types.ts";

const orSend = {
  markdown: "✅ Approved by Alice: notes_append_note (ap_0123456789ab)",
  approvalId: "ap_0123456789ab",
};
const outcome = (withFallback = true) => ({
  channel: "telegram",
  presentation: { editOf: "approval:ap_0123456789ab:prompt", ...(withFallback ? { orSend } : {}) },
});
const prompt = (state: OutboxState, messageIds: string[] | null) => ({
  state,
  receipt: messageIds === null ? null : { messageIds },
});

describe("planEdit", () => {
  test("a prompt with a message is edited (its last message)", () => {
    expect(planEdit(outcome(), prompt("delivered", ["41", "42"]), true)).toEqual({
      kind: "edit",
      messageId: "42",
    });
  });

  test("a prompt resolved as delivered without a message id gets the outcome as a new message", () => {
    expect(planEdit(outcome(), prompt("delivered", null), true)).toEqual({ kind: "send", ...orSend });
    expect(planEdit(outcome(), prompt("delivered", []), false)).toEqual({ kind: "send", ...orSend });
  });

  test("without a fallback, or while the prompt is not known to be shown, the edit fails with the reason", () => {
    expect(planEdit(outcome(false), prompt("delivered", null), true)).toEqual({
      kind: "fail",
      reason: "record approval:ap_0123456789ab:prompt has no message to edit (delivered)",
    });
    for (const state of ["ambiguous", "failed", "cancelled"] as const) {
      expect(planEdit(outcome(), prompt(state, null), true)).toEqual({
        kind: "fail",
        reason: `record approval:ap_0123456789ab:prompt has no message to edit (${state})`,
      });
    }
    expect(planEdit(outcome(), null, true)).toEqual({
      kind: "fail",
      reason: "record approval:ap_0123456789ab:prompt has no message to edit (missing)",
    });
    expect(planEdit(outcome(false), prompt("delivered", ["42"]), false)).toEqual({
      kind: "fail",
      reason: "telegram cannot edit messages",
    });
  });

  test("on a channel that cannot edit, the outcome goes as its own message when it has one", () => {
    expect(planEdit(outcome(), prompt("delivered", ["42"]), false)).toEqual({ kind: "send", ...orSend });
  });
});
