import { expect, test } from "bun:test";
import {
  approvalIdFor,
  bindApproval,
  canonicalJson,
  signAction,
  verifyAction,
  verifyApprovalBinding,
} from "../../src/util/approval-signing.ts";

const SECRET = "a-secret-of-enough-length";
const ID = approvalIdFor("run_1", "call_1");

test("approval ids are stable per run and call, and short enough for Telegram's 64-byte button data", () => {
  expect(ID).toMatch(/^ap_[0-9a-f]{12}$/);
  expect(approvalIdFor("run_1", "call_1")).toBe(ID);
  expect(approvalIdFor("run_1", "call_2")).not.toBe(ID);
  for (const action of ["approve", "deny", "always"] as const) {
    expect(Buffer.byteLength(signAction(SECRET, ID, action))).toBeLessThanOrEqual(64);
  }
});

test("button data verifies only unaltered and under the same key", () => {
  const data = signAction(SECRET, ID, "approve");
  expect(verifyAction(SECRET, data)).toEqual({ ok: true, approvalId: ID, action: "approve" });
  expect(verifyAction(SECRET, signAction(SECRET, ID, "always"))).toMatchObject({ action: "always" });
  // Another action with the approve tag, another id, another key, junk.
  expect(verifyAction(SECRET, data.replace(":a:", ":d:"))).toEqual({ ok: false, reason: "bad signature" });
  expect(verifyAction(SECRET, data.replace(ID, "ap_000000000000"))).toEqual({
    ok: false,
    reason: "bad signature",
  });
  expect(verifyAction("another-secret-key-here", data)).toEqual({ ok: false, reason: "bad signature" });
  expect(verifyAction(SECRET, "ap:nonsense")).toEqual({ ok: false, reason: "malformed" });
  expect(verifyAction(SECRET, `${data}x`)).toEqual({ ok: false, reason: "malformed" });
});

test("a binding ties the id to the exact call: key order does not matter, any change does", () => {
  const call = { approvalId: ID, toolCallId: "call_1", toolName: "notes_append", input: { a: 1, b: [1, 2] } };
  const binding = bindApproval(SECRET, call);
  expect(verifyApprovalBinding(SECRET, { ...call, input: { b: [1, 2], a: 1 } }, binding)).toBe(true);
  expect(verifyApprovalBinding(SECRET, { ...call, input: { a: 2, b: [1, 2] } }, binding)).toBe(false);
  expect(verifyApprovalBinding(SECRET, { ...call, toolName: "notes_delete" }, binding)).toBe(false);
  expect(verifyApprovalBinding(SECRET, { ...call, toolCallId: "call_2" }, binding)).toBe(false);
  expect(verifyApprovalBinding("another-secret-key-here", call, binding)).toBe(false);
  expect(canonicalJson({ b: 1, a: { d: null, c: undefined } })).toBe('{"a":{"d":null},"b":1}');
});
