import { createHmac, timingSafeEqual } from "node:crypto";

export type SignatureVerdict = { ok: true } | { ok: false; reason: "missing_signature" | "bad_signature" };

/**
 * Checks Meta's `X-Hub-Signature-256` header on a webhook POST: `sha256=` + the hex HMAC-SHA256
 * of the raw body under the app secret, compared in constant time. The body must be the bytes as
 * received (re-serialised JSON would not match: Meta escapes non-ASCII as \uXXXX). Meta signs no
 * timestamp, so replays are stopped by deduplicating on the message id, not here.
 */
export function verifyWhatsAppSignature(
  rawBody: string | Uint8Array,
  signatureHeader: string | null,
  appSecret: string,
): SignatureVerdict {
  if (signatureHeader === null || signatureHeader === "") return { ok: false, reason: "missing_signature" };
  const expected = Buffer.from(
    `sha256=${createHmac("sha256", appSecret).update(rawBody).digest("hex")}`,
    "utf8",
  );
  const actual = Buffer.from(signatureHeader.trim().toLowerCase(), "utf8");
  // timingSafeEqual throws on a length mismatch; the length of a hex digest is not secret.
  if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) {
    return { ok: false, reason: "bad_signature" };
  }
  return { ok: true };
}

export type SubscriptionVerdict =
  | { ok: true; challenge: string }
  | { ok: false; reason: "not_subscribe" | "bad_verify_token" | "missing_challenge" };

/**
 * Answers Meta's check of the callback URL (`GET ?hub.mode=subscribe&hub.verify_token=…&
 * hub.challenge=…`): the endpoint must echo the challenge, with status 200, only when the verify
 * token is ours (compared in constant time). Anything else is answered 403.
 */
export function verifySubscription(query: URLSearchParams, verifyToken: string): SubscriptionVerdict {
  if (query.get("hub.mode") !== "subscribe") return { ok: false, reason: "not_subscribe" };
  const expected = createHmac("sha256", "switchboard-verify-token").update(verifyToken).digest();
  const actual = createHmac("sha256", "switchboard-verify-token")
    .update(query.get("hub.verify_token") ?? "")
    .digest();
  // Digests of equal length, so the comparison reveals nothing about the token's length either.
  if (!timingSafeEqual(expected, actual)) return { ok: false, reason: "bad_verify_token" };
  const challenge = query.get("hub.challenge");
  if (challenge === null || challenge === "" || challenge.length > 200)
    return { ok: false, reason: "missing_challenge" };
  return { ok: true, challenge };
}
