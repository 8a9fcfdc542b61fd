/**
 * End to end through a real gateway process: grammY against the Telegram emulator, the model
 * behind the fake OpenAI-compatible server, SQLite on a temp file.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { groupChat, privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, freePort, type GatewayProcess, startGatewayProcess } from "./support/gateway-process.ts";
import { waitUntilSettled } from "./support/settled.ts";

const fixture = useE2eFixture("switchboard-e2e-tg-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const alice = user(1001, "Alice");
const bob = user(1002, "Bob");
const mallory = user(6666, "Mallory");
const group = groupChat(-5001, "Team");

function env(extra: Record<string, string> = {}): Record<string, string> {
  return telegramGatewayEnv(fixture, {
    surfaces: {
      "telegram:dm": { inputPolicy: "supersede", delivery: "terminal" },
      "telegram:group": { inputPolicy: "queue", delivery: "terminal" },
    },
    allowed: [alice.id, bob.id, 1003, 1004],
    extra,
  });
}

const botReplies = (chatId: number) => telegram.messages(chatId).filter((m) => m.fromBot);

describe("telegram end to end (polling)", () => {
  let gateway: GatewayProcess;
  beforeAll(async () => {
    gateway = await startGatewayProcess(env());
  }, 30_000);
  afterAll(async () => {
    await gateway.kill("SIGTERM");
  }, 20_000);

  test("one message, one reply", async () => {
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "hello there" });
    const reply = await telegram.waitForMessage(
      alice.id,
      (m) => m.fromBot && m.visibleText.includes("echo: hello there"),
      10_000,
    );
    expect(reply.visibleText).toContain("echo: hello there");
    expect(llm.requestsContaining("hello there").length).toBe(1);
  }, 20_000);

  test("the same update twice, and again after a restart: one model call, one reply", async () => {
    const { update } = telegram.incoming({ chat: privateChat(bob), from: bob, text: "dedupe me please" });
    await telegram.waitForMessage(bob.id, (m) => m.fromBot && m.visibleText.includes("dedupe me"), 10_000);
    telegram.deliverAgain(update.update_id);
    await telegram.waitForConfirmed(update.update_id, 5_000);
    await Bun.sleep(300);

    await gateway.kill("SIGKILL");
    gateway = await startGatewayProcess(env());
    telegram.deliverAgain(update.update_id);
    await telegram.waitForConfirmed(update.update_id, 10_000);
    await waitUntilSettled(env().SWITCHBOARD_DB!);

    expect(llm.requestsContaining("dedupe me please").length).toBe(1);
    expect(botReplies(bob.id).filter((m) => m.visibleText.includes("dedupe me please")).length).toBe(1);
  }, 40_000);

  test("supersede in a DM: only the latest is answered and the first is absent from its prompt", async () => {
    llm.addRules([
      {
        match: { lastUserContains: "first slow thought" },
        reply: { kind: "text", text: "slow answer one two three four", chunks: 6, chunkDelayMs: 400 },
      },
    ]);
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "first slow thought" });
    await eventually(
      () => llm.requestsContaining("first slow thought").length === 1,
      10_000,
      "the first model call",
    );
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "second thought instead" });
    await telegram.waitForMessage(
      alice.id,
      (m) => m.fromBot && m.visibleText.includes("echo: second thought instead"),
      15_000,
    );
    // The superseded run has ended and nothing is left to send: its answer can no longer appear.
    await waitUntilSettled(env().SWITCHBOARD_DB!);
    const second = llm.requestsContaining("second thought instead")[0]!;
    expect(JSON.stringify(second.messages)).not.toContain("first slow thought");
    expect(botReplies(alice.id).some((m) => m.visibleText.includes("slow answer"))).toBe(false);
  }, 30_000);

  test("queue in a group: both answered, in order; without a mention nothing happens", async () => {
    llm.addRules([
      {
        match: { lastUserContains: "queued one" },
        reply: { kind: "text", text: "answer to queued one", chunks: 4, chunkDelayMs: 200 },
      },
    ]);
    telegram.incoming({ chat: group, from: alice, text: "just chatting without mention" });
    telegram.incoming({ chat: group, from: alice, text: "@switchboard_test_bot queued one" });
    telegram.incoming({ chat: group, from: bob, text: "@switchboard_test_bot queued two" });
    await telegram.waitForMessage(group.id, (m) => m.fromBot && m.visibleText.includes("queued two"), 15_000);
    const replies = botReplies(group.id).map((m) => m.visibleText);
    expect(replies.findIndex((t) => t.includes("answer to queued one"))).toBeLessThan(
      replies.findIndex((t) => t.includes("queued two")),
    );
    expect(llm.requestsContaining("without mention").length).toBe(0);
  }, 30_000);

  test("chat commands work without the model: /status, /stop, /new", async () => {
    const carol = user(1003, "Carol");
    const before = llm.requests().length;
    telegram.incoming({ chat: privateChat(carol), from: carol, text: "remember the word pineapple" });
    await telegram.waitForMessage(carol.id, (m) => m.fromBot && m.visibleText.includes("pineapple"), 10_000);
    telegram.incoming({ chat: privateChat(carol), from: carol, text: "/status" });
    const status = await telegram.waitForMessage(
      carol.id,
      (m) => m.fromBot && m.visibleText.includes("Model:"),
      10_000,
    );
    expect(status.visibleText).toContain("0 running, 0 queued");
    telegram.incoming({ chat: privateChat(carol), from: carol, text: "/stop" });
    await telegram.waitForMessage(
      carol.id,
      (m) => m.fromBot && m.visibleText.includes("Nothing is running"),
      10_000,
    );
    telegram.incoming({ chat: privateChat(carol), from: carol, text: "/new" });
    await telegram.waitForMessage(
      carol.id,
      (m) => m.fromBot && m.visibleText.includes("Started a new conversation"),
      10_000,
    );
    telegram.incoming({ chat: privateChat(carol), from: carol, text: "what word did I say" });
    await telegram.waitForMessage(
      carol.id,
      (m) => m.fromBot && m.visibleText.includes("what word did I say"),
      10_000,
    );
    // Only the two ordinary messages reached the model, and the fresh conversation forgot the first.
    expect(llm.requests().length - before).toBe(2);
    const last = llm.requestsContaining("what word did I say")[0]!;
    expect(JSON.stringify(last.messages)).not.toContain("pineapple");
  }, 40_000);

  test("/stop interrupts the answer in progress", async () => {
    const dave = user(1004, "Dave");
    llm.addRules([
      {
        match: { lastUserContains: "tell me a very long story" },
        reply: {
          kind: "text",
          text: "once upon a time there was a long long story",
          chunks: 10,
          chunkDelayMs: 500,
        },
      },
    ]);
    telegram.incoming({ chat: privateChat(dave), from: dave, text: "tell me a very long story" });
    await eventually(() => llm.requestsContaining("very long story").length === 1, 10_000, "the model call");
    telegram.incoming({ chat: privateChat(dave), from: dave, text: "/stop" });
    await telegram.waitForMessage(
      dave.id,
      (m) => m.fromBot && m.visibleText.includes("Stopped the answer"),
      10_000,
    );
    const stopped = await telegram.waitForMessage(
      dave.id,
      (m) => m.fromBot && m.visibleText.includes("(stopped)"),
      10_000,
    );
    expect(stopped.visibleText).not.toContain("long long story");
  }, 30_000);

  test("a denied user never reaches the model", async () => {
    const { update } = telegram.incoming({ chat: privateChat(mallory), from: mallory, text: "let me in" });
    await telegram.waitForConfirmed(update.update_id, 10_000);
    await Bun.sleep(300);
    expect(llm.requestsContaining("let me in").length).toBe(0);
    expect(botReplies(mallory.id).length).toBe(0);
    expect(gateway.events().some((e) => e.event === "ingress.denied" && e.user === String(mallory.id))).toBe(
      true,
    );
  }, 20_000);
});

describe("telegram webhook mode", () => {
  test("a wrong secret is refused with 401 and nothing is stored", async () => {
    const port = freePort();
    const dbPath = join(dir.path, "webhook.sqlite");
    const secret = "s3cret-webhook-token-abcdef";
    const gateway = await startGatewayProcess(
      env({
        SWITCHBOARD_DB: dbPath,
        SWITCHBOARD_HTTP_PORT: String(port),
        TELEGRAM_MODE: "webhook",
        TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/webhook`,
        TELEGRAM_WEBHOOK_SECRET: secret,
      }),
    );
    try {
      expect(telegram.webhookRegistration()?.url).toBe(`http://127.0.0.1:${port}/telegram/webhook`);
      const body = JSON.stringify({
        update_id: 990001,
        message: {
          message_id: 1,
          date: 1,
          chat: { id: alice.id, type: "private" },
          from: alice,
          text: "forged",
        },
      });
      const wrong = await fetch(`${gateway.url}/telegram/webhook`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-telegram-bot-api-secret-token": "wrong-secret-value",
        },
        body,
      });
      expect(wrong.status).toBe(401);
      const db = new Database(dbPath, { readonly: true });
      expect((db.query("SELECT count(*) AS n FROM ingress_receipts").get() as { n: number }).n).toBe(0);
      db.close();

      telegram.incoming({ chat: privateChat(alice), from: alice, text: "through the webhook" });
      await telegram.waitForMessage(
        alice.id,
        (m) => m.fromBot && m.visibleText.includes("echo: through the webhook"),
        10_000,
      );
      expect(llm.requestsContaining("forged").length).toBe(0);
    } finally {
      await gateway.kill("SIGTERM");
    }
  }, 30_000);
});
