import { describe, expect, test } from "bun:test";
import { verifySlackSignature } from "../../../channels/slack/verify.ts";
import { signSlackRequest } from "../../emulators/slack/post-event.ts";

const secret = "8f742231b10e8888abcd99yyyzzz85a5";
const rawBody = JSON.stringify({
  type: "event_callback",
  event_id: "Ev1",
  event: { type: "message", text: "hi" },
});
const signedAtSeconds = 1_700_000_000;
const signedAtMs = signedAtSeconds * 1000;

function signed(body = rawBody, at = signedAtSeconds, key = secret) {
  const headers = signSlackRequest(key, body, at);
  return {
    timestampHeader: headers["x-slack-request-timestamp"],
    signatureHeader: headers["x-slack-signature"],
    rawBody: body,
  };
}

describe("verifySlackSignature", () => {
  test("accepts a request signed with the secret within the window", () => {
    expect(verifySlackSignature(signed(), secret, signedAtMs + 2_000)).toEqual({ ok: true });
  });

  test("matches Slack's documented example signature", () => {
    // From Slack's "Verifying requests from Slack" guide.
    const body =
      "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const request = {
      timestampHeader: "1531420618",
      signatureHeader: "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
      rawBody: body,
    };
    expect(verifySlackSignature(request, secret, 1531420618 * 1000)).toEqual({ ok: true });
  });

  test("rejects a signature made with another secret", () => {
    expect(
      verifySlackSignature(signed(rawBody, signedAtSeconds, "other-secret"), secret, signedAtMs),
    ).toEqual({
      ok: false,
      reason: "bad_signature",
    });
  });

  test("rejects a body changed after signing", () => {
    const request = { ...signed(), rawBody: rawBody.replace("hi", "hello") };
    expect(verifySlackSignature(request, secret, signedAtMs)).toEqual({ ok: false, reason: "bad_signature" });
  });

  test("rejects a truncated signature without throwing", () => {
    const request = { ...signed(), signatureHeader: "v0=abc" };
    expect(verifySlackSignature(request, secret, signedAtMs)).toEqual({ ok: false, reason: "bad_signature" });
  });

  test("rejects a timestamp older than five minutes (stale)", () => {
    expect(verifySlackSignature(signed(), secret, signedAtMs + 5 * 60_000 + 1_000)).toEqual({
      ok: false,
      reason: "stale_timestamp",
    });
  });

  test("rejects a timestamp more than five minutes in the future", () => {
    expect(verifySlackSignature(signed(), secret, signedAtMs - 6 * 60_000)).toEqual({
      ok: false,
      reason: "stale_timestamp",
    });
  });

  test("replay: the same captured request passes inside the window and fails after it", () => {
    const captured = signed();
    expect(verifySlackSignature(captured, secret, signedAtMs + 60_000).ok).toBe(true);
    expect(verifySlackSignature(captured, secret, signedAtMs + 60_000).ok).toBe(true);
    expect(verifySlackSignature(captured, secret, signedAtMs + 10 * 60_000)).toEqual({
      ok: false,
      reason: "stale_timestamp",
    });
  });

  test("replay with a fresh timestamp but the old signature fails", () => {
    const captured = signed();
    const replayed = { ...captured, timestampHeader: String(signedAtSeconds + 600) };
    expect(verifySlackSignature(replayed, secret, (signedAtSeconds + 600) * 1000)).toEqual({
      ok: false,
      reason: "bad_signature",
    });
  });

  test("rejects missing headers and non-numeric timestamps", () => {
    expect(verifySlackSignature({ ...signed(), signatureHeader: null }, secret, signedAtMs)).toEqual({
      ok: false,
      reason: "missing_headers",
    });
    expect(verifySlackSignature({ ...signed(), timestampHeader: null }, secret, signedAtMs)).toEqual({
      ok: false,
      reason: "missing_headers",
    });
    expect(
      verifySlackSignature({ ...signed(), timestampHeader: "1700000000.5" }, secret, signedAtMs),
    ).toEqual({
      ok: false,
      reason: "stale_timestamp",
    });
  });
});
