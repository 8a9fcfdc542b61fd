/**
 * Hostile bodies on the Slack Events API endpoint of a real gateway process (Bolt in HTTP mode,
 * Web API calls to the Slack emulator). Correctly signed junk is answered 4xx or skipped with a
 * log line; nothing is stored, nothing reaches the model, and the gateway keeps answering.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import fc from "fast-check";
import { parseSlackEvent } from "../../channels/slack/parse.ts";
import { MAX_INPUT_CHARS } from "../../src/gateway/ingress.ts";
import { useE2eFixture } from "../e2e/support/fixture.ts";
import { e2eGatewayEnv } from "../e2e/support/gateway-env.ts";
import { eventually, type GatewayProcess } from "../e2e/support/gateway-process.ts";
import { postEvent, signSlackRequest, startSlackEmulator } from "../emulators/slack/index.ts";
import { isHealthy, storedCounts } from "./support/gateway-db.ts";
import { hostilePayload } from "./support/mutate.ts";

const SIGNING_SECRET = "fuzz-slack-signing-secret-0123456789";
const ALICE = "U0ALICE";
const MALLORY = "U0MALLORY";
const fixture = useE2eFixture("switchboard-fuzz-slack-", startSlackEmulator);
const { dir, llm, platform: slack } = fixture;
const dbPath = join(dir.path, "gateway.sqlite");
let gateway: GatewayProcess;
let eventsUrl: string;

beforeAll(async () => {
  gateway = await fixture.startGateway(
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      extra: {
        SWITCHBOARD_LOG_LEVEL: "debug",
        SLACK_BOT_TOKEN: slack.botToken,
        SLACK_API_URL: `${slack.url}/api`,
        SLACK_SIGNING_SECRET: SIGNING_SECRET,
        SLACK_ALLOWED_USERS: ALICE,
      },
    }),
  );
  eventsUrl = `${gateway.url}/slack/events`;
}, 20_000);

/** Signs `body` (the exact bytes sent) like Slack and posts it once, without Slack's retries. */
function postSigned(body: string | Uint8Array): Promise<Response> {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const signed = signSlackRequest(
    SIGNING_SECRET,
    Buffer.from(bytes).toString("latin1"),
    Math.floor(Date.now() / 1000),
  );
  // HMAC over latin1 text is HMAC over the bytes: each byte maps to one code unit.
  return fetch(eventsUrl, {
    method: "POST",
    headers: { "content-type": "application/json", ...signed },
    body: new Uint8Array(bytes).buffer,
  });
}

function skipLogged(eventId: string): boolean {
  return gateway.events().some((e) => e.event === "slack.event_skipped" && e.eventId === eventId);
}
/** Log lines that account for an acknowledged event that went nowhere. */
const skipLines = () =>
  gateway
    .events()
    .filter(
      (e) =>
        e.event === "slack.event_skipped" ||
        e.event === "ingress.ignored" ||
        (e.event === "slack.bolt" && String(e.message).includes("Could not determine")),
    ).length;

function expectNothingReachedTheAgent(): void {
  expect(storedCounts(dbPath)).toMatchObject({ runs: 0, messages: 0 });
  expect(llm.requests()).toEqual([]);
}

const callback = (eventId: string, event: unknown) =>
  JSON.stringify({ type: "event_callback", team_id: slack.identity.teamId, event_id: eventId, event });

describe("slack events endpoint under hostile input", () => {
  test("malformed bodies are refused with 4xx", async () => {
    const cases: Array<[string, string | Uint8Array, number]> = [
      ["malformed JSON", '{"type":"event_callback",', 400],
      ["a JSON array", "[]", 400],
      ["a JSON string", '"event_callback"', 400],
      ["form-encoded interactivity", "payload=%7B%7D", 400],
      ["a callback without an event", JSON.stringify({ type: "event_callback", event_id: "Ev1" }), 400],
      [
        "a callback whose event is a string",
        JSON.stringify({ type: "event_callback", event: "message" }),
        400,
      ],
      ["invalid UTF-8", new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), 401],
    ];
    for (const [what, body, status] of cases) {
      const response = await postSigned(body);
      expect({ what, status: response.status }).toEqual({ what, status });
    }
    const oversized = await postSigned(
      callback("EvHUGE", { type: "message", text: "x".repeat(2 * 1024 * 1024) }),
    );
    expect(oversized.status).toBe(413);
    expectNothingReachedTheAgent();
  }, 15_000);

  test("mistyped and unknown events are skipped with a log line", async () => {
    const base = JSON.parse(callback("Ev0", slack.events.dm({ user: ALICE, text: "hi" }).event)) as {
      event: Record<string, unknown>;
    };
    const dm = base.event;
    const cases: Array<[string, string]> = [
      ["EvUSERNUM", callback("EvUSERNUM", { ...dm, user: 42 })],
      ["EvTEXTOBJ", callback("EvTEXTOBJ", { ...dm, text: { rich: true } })],
      ["EvNOTS", callback("EvNOTS", { ...dm, ts: undefined })],
      ["EvCHANARR", callback("EvCHANARR", { ...dm, channel: ["D1"] })],
      ["EvNOUSER", callback("EvNOUSER", { ...dm, user: undefined })],
      ["EvJOIN", callback("EvJOIN", { ...dm, subtype: "channel_join" })],
      ["EvREACTION", callback("EvREACTION", { type: "reaction_added", user: ALICE, reaction: "+1" })],
      ["EvTEAMJOIN", callback("EvTEAMJOIN", { type: "team_join", user: { id: "U9" } })],
      ["EvLONGUSER", callback("EvLONGUSER", { ...dm, user: `U${"9".repeat(500)}` })],
    ];
    for (const [eventId, body] of cases) {
      const response = await postSigned(body);
      expect({ eventId, status: response.status }).toEqual({ eventId, status: 200 });
      await eventually(() => skipLogged(eventId), 2_000, `a logged skip of ${eventId}`);
    }
    expectNothingReachedTheAgent();
  }, 15_000);

  test("randomly mangled events never get a 5xx, and nothing reaches the agent", async () => {
    // From someone not on the allowlist: a mangled event that is still a message stops at ingress.
    const bases = [
      slack.events.dm({ user: MALLORY, text: "hi there" }),
      ...Object.values(slack.events.channelMention({ user: MALLORY, channel: "C0GENERAL", text: "help" })),
      slack.events.threadReply({
        user: MALLORY,
        channel: "C0GENERAL",
        threadTs: "1700000000.000100",
        text: "more",
      }),
    ];
    const context = {
      account: "x",
      botUserId: slack.identity.botUserId,
      botId: slack.identity.botId,
      allowOtherBots: false,
      receivedAtMs: 0,
    };
    const samples = fc.sample(hostilePayload(bases), { numRuns: 120, seed: 11 }).filter((payload) => {
      const parsed = parseSlackEvent(payload, context);
      return parsed.kind === "skip" || parsed.message.principal.id !== ALICE;
    });
    let n = 0;
    for (const payload of samples) {
      n += 1;
      const eventId = `EvFUZZ${n}`;
      const body =
        typeof payload === "object" && payload !== null && !Array.isArray(payload)
          ? { ...payload, event_id: eventId }
          : payload;
      const before = skipLines();
      const response = await postSigned(JSON.stringify(body) ?? "null");
      expect(response.status).toBeLessThan(500);
      if (response.status === 200)
        await eventually(() => skipLines() > before, 2_000, `a logged skip of ${eventId}`);
    }
    expectNothingReachedTheAgent();
    expect(gateway.events().some((e) => e.event === "ingress.malformed")).toBe(false);
  }, 40_000);

  test(`a text over ${MAX_INPUT_CHARS} characters is answered "too long" without the model`, async () => {
    const payload = slack.events.dm({ user: ALICE, text: "q".repeat(MAX_INPUT_CHARS + 1) });
    const result = await postEvent(eventsUrl, payload, { signingSecret: SIGNING_SECRET, maxRetries: 0 });
    expect(result.status).toBe(200);
    const reply = await slack.waitFor(
      () => slack.messages().find((m) => m.user === slack.identity.botUserId && m.text.includes("too long")),
      10_000,
      "the too-long notice",
    );
    expect(reply.text).toContain(MAX_INPUT_CHARS.toLocaleString("en"));
    expectNothingReachedTheAgent();
  }, 15_000);

  test("afterwards the gateway is healthy and answers a valid message", async () => {
    expect(await isHealthy(gateway.url)).toBe(true);
    const payload = slack.events.dm({ user: ALICE, text: "still there?" });
    const result = await postEvent(eventsUrl, payload, { signingSecret: SIGNING_SECRET, maxRetries: 0 });
    expect(result.status).toBe(200);
    await slack.waitFor(
      () =>
        slack
          .messages()
          .find((m) => m.user === slack.identity.botUserId && m.text.includes("echo: still there?")),
      10_000,
      "the answer",
    );
    expect(llm.requests().map((r) => r.lastUserText)).toEqual(["still there?"]);
    expect(storedCounts(dbPath).runs).toBe(1);
  }, 15_000);
});
