/**
 * The three places a caller proves it holds a secret: the Telegram webhook secret header, the
 * Slack request signature (with its replay window) and the operator bearer token. Each refuses a
 * wrong value of the same length and of a different length alike, and compares in constant time.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Update } from "grammy/types";
import { createEventsRoute } from "../../channels/slack/http-route.ts";
import { SIGNATURE_TOLERANCE_SECONDS } from "../../channels/slack/verify.ts";
import { SECRET_HEADER, webhookRoute } from "../../channels/telegram/webhook.ts";
import { authenticateOperator, type OperatorCredentials } from "../../src/gateway/http/auth.ts";
import { signSlackRequest } from "../emulators/slack/index.ts";
import { FakeClock } from "../support/fake-clock.ts";

const ROOT = join(import.meta.dir, "..", "..");

/** Same length as `secret`, differing only in the last character. */
function sameLengthWrong(secret: string): string {
  return `${secret.slice(0, -1)}${secret.endsWith("x") ? "y" : "x"}`;
}

describe("telegram webhook secret", () => {
  const secret = "tg-webhook-secret-0123456789abcdef";
  const received: Update[] = [];
  const route = webhookRoute({
    path: "/telegram/webhook",
    secret,
    receive: async (update) => void received.push(update),
    isAccepting: () => true,
    onEvent: () => {},
  });
  const call = (headerValue: string | null) =>
    route.handle(
      new Request("http://127.0.0.1/telegram/webhook", {
        method: "POST",
        headers: headerValue === null ? {} : { [SECRET_HEADER]: headerValue },
        body: JSON.stringify({ update_id: 1, poll: { id: "p" } }),
      }),
    );

  test("a wrong secret of the same length, of another length, or none at all is refused with 401", async () => {
    for (const wrong of [sameLengthWrong(secret), secret.slice(0, 8), `${secret}-and-more`, "", null]) {
      expect((await call(wrong)).status).toBe(401);
    }
    expect(received).toEqual([]);
    expect((await call(secret)).status).toBe(200);
    expect(received).toHaveLength(1);
  });
});

describe("slack request signature", () => {
  const signingSecret = "slack-signing-secret-0123456789abcdef";
  const nowMs = 1_800_000_000_000;
  const clock = new FakeClock(nowMs, { instantSleeps: true });
  const dispatched: unknown[] = [];
  const route = createEventsRoute({
    path: "/slack/events",
    signingSecret,
    clock,
    isAccepting: () => true,
    onDispatchError: () => {},
    dispatch: async (body) => void dispatched.push(body),
  });
  const body = JSON.stringify({ type: "event_callback", event_id: "Ev1", event: { type: "reaction_added" } });
  const post = (headers: Record<string, string>) =>
    route.handle(new Request("http://127.0.0.1/slack/events", { method: "POST", headers, body }));
  const nowSeconds = nowMs / 1000;

  test("a signature under a wrong secret of the same length or of another length is refused with 401", async () => {
    for (const secret of [sameLengthWrong(signingSecret), "short", `${signingSecret}-longer`]) {
      const response = await post(signSlackRequest(secret, body, nowSeconds));
      expect(response.status).toBe(401);
      expect(await response.text()).toContain("bad_signature");
    }
    const good = signSlackRequest(signingSecret, body, nowSeconds);
    for (const signature of [
      good["x-slack-signature"].slice(0, -4),
      `${good["x-slack-signature"]}00`,
      "v0=",
    ]) {
      expect((await post({ ...good, "x-slack-signature": signature })).status).toBe(401);
    }
    expect((await post({})).status).toBe(401);
    expect(dispatched).toEqual([]);
    expect((await post(good)).status).toBe(200);
    expect(dispatched).toHaveLength(1);
  });

  test("the replay window: a timestamp more than 5 minutes away is refused, even correctly signed", async () => {
    expect(SIGNATURE_TOLERANCE_SECONDS).toBe(300);
    const before = dispatched.length;
    for (const skewSeconds of [-301, -3600, 301]) {
      const response = await post(signSlackRequest(signingSecret, body, nowSeconds + skewSeconds));
      expect(response.status).toBe(401);
      expect(await response.text()).toContain("stale_timestamp");
    }
    expect(dispatched).toHaveLength(before);
    expect((await post(signSlackRequest(signingSecret, body, nowSeconds - 299))).status).toBe(200);
  });
});

describe("operator token", () => {
  const token = "operator-token-0123456789abcdef";
  const alice = "alice-token-0123456789abcdefgh";
  const credentials: OperatorCredentials = { shared: token, named: [{ name: "alice", token: alice }] };
  const withAuthorization = (value: string | null) =>
    new Request("http://127.0.0.1/api/runs", { headers: value === null ? {} : { authorization: value } });
  const status = (value: string | null, given = credentials) => {
    const result = authenticateOperator(withAuthorization(value), given);
    return "refused" in result ? result.refused.status : 200;
  };

  test("a wrong token of the same length, of another length, or none is refused with 401", () => {
    for (const value of [
      `Bearer ${sameLengthWrong(token)}`,
      `Bearer ${sameLengthWrong(alice)}`,
      `Bearer ${token.slice(0, 10)}`,
      `Bearer ${token}x`,
      `Basic ${token}`,
      "Bearer",
      null,
    ]) {
      expect(status(value)).toBe(401);
    }
    expect(authenticateOperator(withAuthorization(`Bearer ${token}`), credentials)).toEqual({ name: null });
  });

  test("a named operator's own token authenticates as that operator, also without a shared token", () => {
    expect(authenticateOperator(withAuthorization(`Bearer ${alice}`), credentials)).toEqual({
      name: "alice",
    });
    const namedOnly = { shared: null, named: credentials.named };
    expect(authenticateOperator(withAuthorization(`Bearer ${alice}`), namedOnly)).toEqual({ name: "alice" });
    expect(status(`Bearer ${token}`, namedOnly)).toBe(401);
  });

  test("with no operator token configured the API is closed (403), whatever is sent", () => {
    expect(status(`Bearer ${token}`, { shared: null, named: [] })).toBe(403);
  });
});

describe("constant-time comparison", () => {
  // Read from the source: a `===` on a secret would pass every test above and still leak timing.
  test.each([
    ["channels/telegram/webhook.ts", "presented"],
    ["channels/slack/verify.ts", "actualBytes"],
    ["src/gateway/http/auth.ts", "match[1]"],
  ])("%s compares the presented secret with timingSafeEqual only", (file, presented) => {
    const source = readFileSync(join(ROOT, file), "utf8");
    expect(source).toContain("timingSafeEqual(");
    const comparisons = source.split("\n").filter((line) => line.includes(presented) && /[!=]==/.test(line));
    for (const line of comparisons)
      expect(line).not.toMatch(/(===|!==)\s*(expected|secret|operatorToken|signingSecret)\b/);
  });
});
