import { expect, test } from "bun:test";
import {
  conversationMark,
  isForgetButton,
  signForgetButton,
  verifyForgetButton,
} from "../../src/gateway/forget-buttons.ts";

const SECRET = "a-test-secret-of-enough-length";

test("a /forget button carries its conversation and choice, fits Telegram's 64 bytes, and verifies only for its asker", () => {
  const data = signForgetButton(SECRET, "conv_0123456789abcdef", "42", "confirm");
  expect(isForgetButton(data)).toBe(true);
  expect(isForgetButton("ap:ap_0123456789ab:a:xxxxxxxxxxxxxxxx")).toBe(false);
  expect(Buffer.byteLength(data)).toBeLessThanOrEqual(64);
  expect(verifyForgetButton(SECRET, data, "42")).toEqual({
    ok: true,
    mark: conversationMark("conv_0123456789abcdef"),
    choice: "confirm",
  });
  expect(verifyForgetButton(SECRET, signForgetButton(SECRET, "c", "42", "keep"), "42")).toMatchObject({
    ok: true,
    choice: "keep",
  });
  // Someone else's press, another key, a flipped choice, garbage: all refused.
  expect(verifyForgetButton(SECRET, data, "43")).toEqual({ ok: false, reason: "bad signature" });
  expect(verifyForgetButton("another-secret-of-enough-length", data, "42")).toEqual({
    ok: false,
    reason: "bad signature",
  });
  expect(verifyForgetButton(SECRET, data.replace(":y:", ":n:"), "42")).toEqual({
    ok: false,
    reason: "bad signature",
  });
  expect(verifyForgetButton(SECRET, "fg:nope", "42")).toEqual({ ok: false, reason: "malformed" });
  expect(conversationMark("conv_a")).not.toBe(conversationMark("conv_b"));
});
