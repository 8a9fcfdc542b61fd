import { createHmac, timingSafeEqual } from "node:crypto";

/** Slack's replay window: a request signed longer ago (or further ahead) than this is refused. */
export const SIGNATURE_TOLERANCE_SECONDS = 5 * 60;

export interface SignedRequest {
  /** X-Slack-Request-Timestamp, in seconds since the epoch. */
  timestampHeader: string | null;
  /** X-Slack-Signature: "v0=" + hex HMAC-SHA256. */
  signatureHeader: string | null;
  /** The body exactly as received; re-serialised JSON would not match. */
  rawBody: string;
}

export type SignatureVerdict =
  | { ok: true }
  | { ok: false; reason: "missing_headers" | "stale_timestamp" | "bad_signature" };

/**
 * Checks a Slack request signature: HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the signing
 * secret, compared in constant time, and a timestamp within ±5 minutes of `nowMs` so a captured
 * request cannot be replayed later. Imports no Slack SDK.
 */
export function verifySlackSignature(
  request: SignedRequest,
  signingSecret: string,
  nowMs: number,
  toleranceSeconds: number = SIGNATURE_TOLERANCE_SECONDS,
): SignatureVerdict {
  const { timestampHeader, signatureHeader, rawBody } = request;
  if (timestampHeader === null || signatureHeader === null) return { ok: false, reason: "missing_headers" };
  if (!/^\d+$/.test(timestampHeader)) return { ok: false, reason: "stale_timestamp" };
  const timestampSeconds = Number(timestampHeader);
  if (Math.abs(nowMs / 1000 - timestampSeconds) > toleranceSeconds)
    return { ok: false, reason: "stale_timestamp" };

  const expected = `v0=${createHmac("sha256", signingSecret).update(`v0:${timestampHeader}:${rawBody}`).digest("hex")}`;
  const expectedBytes = Buffer.from(expected, "utf8");
  const actualBytes = Buffer.from(signatureHeader, "utf8");
  // timingSafeEqual throws on a length mismatch; the length of a hex digest is not secret.
  if (expectedBytes.length !== actualBytes.length || !timingSafeEqual(expectedBytes, actualBytes)) {
    return { ok: false, reason: "bad_signature" };
  }
  return { ok: true };
}
