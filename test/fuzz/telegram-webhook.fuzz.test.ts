/**
 * Hostile bodies on the Telegram webhook of a real gateway process (grammY against the emulator,
 * the model behind the fake LLM server). Whatever arrives with the right secret, the gateway
 * answers 4xx or skips it with a log line; nothing is stored, nothing reaches the model, the
 * process stays up and a valid message afterwards is answered.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import fc from "fast-check";
import { parseUpdate } from "../../channels/telegram/parse.ts";
import { SECRET_HEADER } from "../../channels/telegram/webhook.ts";
import { MAX_INPUT_CHARS } from "../../src/gateway/ingress.ts";
import { telegramGatewayEnv, useE2eFixture } from "../e2e/support/fixture.ts";
import { eventually, freePort, type GatewayProcess } from "../e2e/support/gateway-process.ts";
import {
  groupChat,
  message,
  messageUpdate,
  privateChat,
  startTelegramEmulator,
  user,
} from "../emulators/telegram/index.ts";
import { isHealthy, storedCounts } from "./support/gateway-db.ts";
import { hostilePayload } from "./support/mutate.ts";

const SECRET = "fuzz-webhook-secret-0123456789abcdef";
const alice = user(1001, "Alice");
const mallory = user(6666, "Mallory");
const fixture = useE2eFixture("switchboard-fuzz-tg-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const dbPath = join(dir.path, "gateway.sqlite");
let gateway: GatewayProcess;
let webhookUrl: string;

beforeAll(async () => {
  // Updates posted straight to the webhook bypass the emulator, which must still know the chat.
  telegram.addChat(privateChat(alice));
  const port = freePort();
  gateway = await fixture.startGateway(
    telegramGatewayEnv(fixture, {
      surfaces: { "telegram:dm": { delivery: "terminal" } },
      allowed: [alice.id],
      extra: {
        SWITCHBOARD_HTTP_PORT: String(port),
        SWITCHBOARD_LOG_LEVEL: "debug",
        TELEGRAM_MODE: "webhook",
        TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/webhook`,
        TELEGRAM_WEBHOOK_SECRET: SECRET,
      },
    }),
  );
  webhookUrl = `${gateway.url}/telegram/webhook`;
}, 20_000);

function post(body: string | Uint8Array, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(webhookUrl, {
    method: "POST",
    headers: { "content-type": "application/json", [SECRET_HEADER]: SECRET, ...headers },
    // Raw bytes go as an ArrayBuffer, so bytes that are not UTF-8 arrive as they are.
    body: typeof body === "string" ? body : new Uint8Array(body).buffer,
  });
}

/** A log line says the update was skipped or ignored (the "logged skip" of a 200). */
function skipLogged(updateId: number): boolean {
  return gateway
    .events()
    .some(
      (e) =>
        (e.event === "telegram.update_skipped" && e.updateId === updateId) ||
        (e.event === "ingress.ignored" && e.updateKey === String(updateId)),
    );
}

function expectNothingReachedTheAgent(): void {
  expect(storedCounts(dbPath)).toMatchObject({ runs: 0, messages: 0 });
  expect(llm.requests()).toEqual([]);
}

const privateFromAlice = (updateId: number, fields: Record<string, unknown>) =>
  JSON.stringify({
    update_id: updateId,
    message: {
      message_id: 1,
      date: 1_767_225_600,
      chat: { id: alice.id, type: "private" },
      from: alice,
      ...fields,
    },
  });

describe("telegram webhook under hostile input", () => {
  test("malformed, mistyped and unknown bodies are refused with 400 or skipped with a log line", async () => {
    const refused: Array<[string, string | Uint8Array]> = [
      ["malformed JSON", '{"update_id": 1, "message": {'],
      ["not JSON at all", "update please"],
      ["empty body", ""],
      ["a JSON array", "[1,2,3]"],
      ["JSON null", "null"],
      ["update_id as a string", '{"update_id":"7","message":{}}'],
      ["update_id as a float", '{"update_id":7.5}'],
      ["no update_id", JSON.stringify({ message: { text: "hi" } })],
      [
        "invalid UTF-8",
        new Uint8Array([...new TextEncoder().encode('{"update_id":8,"x":"'), 0xff, 0xfe, 0x22, 0x7d]),
      ],
    ];
    for (const [what, body] of refused) {
      const response = await post(body);
      expect({ what, status: response.status }).toEqual({ what, status: 400 });
    }

    const skipped: Array<[string, number, string]> = [
      ["message is a string", 101, '{"update_id":101,"message":"hello"}'],
      ["message without chat", 102, privateFromAlice(102, { chat: undefined, text: "no chat" })],
      [
        "chat id is a string",
        103,
        privateFromAlice(103, { chat: { id: "1001", type: "private" }, text: "x" }),
      ],
      ["text is a number", 104, privateFromAlice(104, { text: 42 })],
      ["date is a string", 105, privateFromAlice(105, { date: "yesterday", text: "dated" })],
      ["from is an array", 106, privateFromAlice(106, { from: [alice], text: "from what" })],
      ["entities out of shape", 107, privateFromAlice(107, { text: "hey", entities: [{ type: "mention" }] })],
      [
        "an unknown update kind",
        108,
        JSON.stringify({ update_id: 108, message_reaction: { chat: { id: 1 } } }),
      ],
      ["a poll", 109, JSON.stringify({ update_id: 109, poll: { id: "p", question: "?", options: [] } })],
      ["an empty update", 110, JSON.stringify({ update_id: 110 })],
      [
        "a lone surrogate from a stranger",
        111,
        JSON.stringify({
          update_id: 111,
          message: {
            message_id: 1,
            date: 1,
            chat: { id: mallory.id, type: "private" },
            from: mallory,
            text: "bad \ud800 text",
          },
        }),
      ],
    ];
    for (const [what, updateId, body] of skipped) {
      const response = await post(body);
      expect({ what, status: response.status }).toEqual({ what, status: 200 });
      await eventually(() => skipLogged(updateId), 2_000, `a logged skip of ${what}`);
    }
    expectNothingReachedTheAgent();
    expect(await isHealthy(gateway.url)).toBe(true);
  }, 20_000);

  test("randomly mangled updates never get a 5xx, and nothing reaches the agent", async () => {
    // Sent from someone not on the allowlist, so even a mangled update that is still a valid
    // message must stop at ingress; samples that mangle the sender into Alice are left out.
    const bases = [
      messageUpdate(
        message({ chat: privateChat(mallory), from: mallory, messageId: 5, text: "hi there" }),
        1,
      ),
      messageUpdate(
        message({
          chat: groupChat(-5001, "Team"),
          from: mallory,
          messageId: 6,
          text: "@switchboard_test_bot yo",
        }),
        1,
      ),
    ];
    const context = {
      account: "1",
      botId: 1,
      botUsername: "switchboard_test_bot",
      groupSessions: "shared" as const,
    };
    const samples = fc.sample(hostilePayload(bases), { numRuns: 150, seed: 7 }).filter((payload) => {
      const parsed = parseUpdate(payload as never, context);
      return parsed.kind === "skip" || parsed.message.principal.id !== String(alice.id);
    });
    let updateId = 10_000;
    for (const payload of samples) {
      updateId += 1;
      const body =
        typeof payload === "object" && payload !== null && !Array.isArray(payload)
          ? { ...payload, update_id: updateId }
          : payload;
      const response = await post(JSON.stringify(body) ?? "undefined");
      expect(response.status).toBeLessThan(500);
      if (response.status === 200)
        await eventually(() => skipLogged(updateId), 2_000, `a logged skip of ${updateId}`);
    }
    expectNothingReachedTheAgent();
    expect(gateway.events().some((e) => e.event === "ingress.malformed")).toBe(false);
  }, 40_000);

  test("a body over the size limit is refused with 413", async () => {
    const huge = privateFromAlice(200, { text: "y".repeat(2 * 1024 * 1024) });
    const response = await post(huge);
    expect(response.status).toBe(413);
    expectNothingReachedTheAgent();
  }, 10_000);

  test(`a text over ${MAX_INPUT_CHARS} characters is answered "too long" without the model`, async () => {
    const response = await post(
      privateFromAlice(300, { message_id: 30, text: "z".repeat(MAX_INPUT_CHARS + 1) }),
    );
    expect(response.status).toBe(200);
    const reply = await telegram.waitForMessage(
      alice.id,
      (m) => m.fromBot && m.visibleText.includes("too long"),
      10_000,
    );
    expect(reply.visibleText).toContain(MAX_INPUT_CHARS.toLocaleString("en"));
    expectNothingReachedTheAgent();
  }, 15_000);

  test("afterwards the gateway is healthy and answers a valid message", async () => {
    expect(await isHealthy(gateway.url)).toBe(true);
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "still there?" });
    await telegram.waitForMessage(
      alice.id,
      (m) => m.fromBot && m.visibleText.includes("echo: still there?"),
      10_000,
    );
    expect(llm.requests().map((r) => r.lastUserText)).toEqual(["still there?"]);
    expect(storedCounts(dbPath).runs).toBe(1);
  }, 15_000);
});
