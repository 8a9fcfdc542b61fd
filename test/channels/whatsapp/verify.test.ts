import { describe, expect, test } from "bun:test";
import { verifySubscription, verifyWhatsAppSignature } from "../../../channels/whatsapp/verify.ts";
import { signWebhookBody, startWhatsAppEmulator } from "../../emulators/whatsapp/index.ts";

const secret = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
// Meta escapes non-ASCII in the body it signs; the check must run on the bytes as received.
const rawBody =
  '{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[]}],"note":"caf\\u00e9 ☕"}';

describe("verifyWhatsAppSignature", () => {
  test("accepts the signature Meta computes over the raw body, as a string or as bytes", () => {
    const header = signWebhookBody(secret, rawBody);
    expect(header).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifyWhatsAppSignature(rawBody, header, secret)).toEqual({ ok: true });
    expect(verifyWhatsAppSignature(new TextEncoder().encode(rawBody), header, secret)).toEqual({ ok: true });
  });

  test("refuses another secret, a changed body, a re-serialised body and a bare hex digest", () => {
    const header = signWebhookBody(secret, rawBody);
    expect(verifyWhatsAppSignature(rawBody, signWebhookBody("other", rawBody), secret)).toEqual({
      ok: false,
      reason: "bad_signature",
    });
    expect(verifyWhatsAppSignature(rawBody.replace("1", "2"), header, secret).ok).toBe(false);
    expect(verifyWhatsAppSignature(JSON.stringify(JSON.parse(rawBody)), header, secret).ok).toBe(false);
    expect(verifyWhatsAppSignature(rawBody, header.slice("sha256=".length), secret).ok).toBe(false);
    expect(verifyWhatsAppSignature(rawBody, "sha256=zz", secret).ok).toBe(false);
  });

  test("a missing header is its own reason", () => {
    expect(verifyWhatsAppSignature(rawBody, null, secret)).toEqual({
      ok: false,
      reason: "missing_signature",
    });
    expect(verifyWhatsAppSignature(rawBody, "", secret)).toEqual({ ok: false, reason: "missing_signature" });
  });
});

describe("verifySubscription", () => {
  test("Meta's GET handshake: the challenge with the right token, 403 otherwise", async () => {
    const wa = startWhatsAppEmulator();
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        const verdict = verifySubscription(new URL(request.url).searchParams, "s3cret-verify");
        return verdict.ok
          ? new Response(verdict.challenge, { headers: { "content-type": "text/plain" } })
          : new Response(verdict.reason, { status: 403 });
      },
    });
    try {
      const url = `http://127.0.0.1:${server.port}/whatsapp/webhook`;
      const ok = await wa.verifyWebhook(url, { verifyToken: "s3cret-verify" });
      expect(ok).toEqual({ status: 200, body: ok.challenge, challenge: ok.challenge });
      expect(await wa.verifyWebhook(url, { verifyToken: "s3cret-verifx" })).toMatchObject({
        status: 403,
        body: "bad_verify_token",
      });
      expect(
        await wa.verifyWebhook(url, { verifyToken: "s3cret-verify", mode: "unsubscribe" }),
      ).toMatchObject({
        status: 403,
        body: "not_subscribe",
      });
      expect(await wa.verifyWebhook(url, { verifyToken: "s3cret-verify", challenge: "" })).toMatchObject({
        status: 403,
        body: "missing_challenge",
      });
    } finally {
      await server.stop(true);
      await wa.close();
    }
  });
});
