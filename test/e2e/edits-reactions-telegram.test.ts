/**
 * Edits and status reactions on Telegram, end to end in this process: grammY against the Telegram
 * emulator (edited_message updates; setMessageReaction checked against the emoji Telegram allows,
 * one reaction per message), the fake model server, SQLite on a temp file.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { systemClock } from "../../src/util/clock.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { slowAnswerRule, telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-reactions-tg-", () => startTelegramEmulator());
const { llm, platform: telegram } = fixture;
const alice = user(4101, "Alice");
const WAIT_MS = 10_000;

// The DM defaults: supersede, streamed answers, status reactions on, edits after the answer ignored.
const env = () => telegramGatewayEnv(fixture, { allowed: [alice.id] });

let running: InProcessGateway | undefined;
beforeAll(async () => {
  running = await startInProcessGateway(env(), { clock: systemClock, limits: FAST_PACING });
}, GATEWAY_START_TIMEOUT_MS);
afterAll(() => running?.stop({ graceMs: 0 }), GATEWAY_STOP_TIMEOUT_MS);

const reactionCalls = (messageId: number) =>
  telegram
    .callsOf("setMessageReaction")
    .filter((c) => Number(c.params.message_id) === messageId)
    .map((c) => (c.params.reaction as Array<{ emoji: string }>).map((r) => r.emoji).join());

describe("status reactions on Telegram", () => {
  test("👀 while the answer is written, then 👌 (Telegram has no ✅) once it was delivered", async () => {
    await llm.setRules([slowAnswerRule("slow ladder", "one two three four", 4, 150)]);
    const { message } = telegram.incoming({ chat: privateChat(alice), from: alice, text: "a slow ladder" });
    await telegram.waitFor(
      () => telegram.reactionsOn(alice.id, message.message_id).join() === "👀",
      WAIT_MS,
      "👀 while the answer is written",
    );
    await telegram.waitForMessage(alice.id, (m) => m.fromBot && m.visibleText.includes("four"), WAIT_MS);
    await telegram.waitFor(
      () => telegram.reactionsOn(alice.id, message.message_id).join() === "👌",
      WAIT_MS,
      "👌 once delivered",
    );
    expect(reactionCalls(message.message_id)).toEqual(["👀", "👌"]);
    await llm.setRules([]);
  }, 20_000);

  test("a 429 on a reaction is dropped: the reply comes at once and the reaction is not retried", async () => {
    telegram.injectFault("setMessageReaction", { kind: "rate_limited", retryAfterSeconds: 30 });
    const { message } = telegram.incoming({ chat: privateChat(alice), from: alice, text: "hello anyway" });
    await telegram.waitForMessage(
      alice.id,
      (m) => m.fromBot && m.visibleText.includes("echo: hello anyway"),
      WAIT_MS,
    );
    await eventually(
      async () => running!.logs.some((r) => r.event === "reaction.dropped"),
      WAIT_MS,
      "the 👌 to be dropped while the 429's wait lasts",
    );
    // One call (the 429'd 👀); nothing retried, nothing shown.
    expect(reactionCalls(message.message_id)).toEqual(["👀"]);
    expect(telegram.reactionsOn(alice.id, message.message_id)).toEqual([]);
  }, 20_000);
});

describe("edits on Telegram", () => {
  const botTexts = () =>
    telegram
      .messages(alice.id)
      .filter((m) => m.fromBot)
      .map((m) => m.visibleText);

  test("an edit while the answer streams restarts it; the preview is retracted; an edit after the answer is ignored", async () => {
    await llm.setRules([
      slowAnswerRule("abuot cats", "Cats are small furry carnivores who rule the internet", 10, 300),
      { match: { lastUserContains: "about dogs" }, reply: { kind: "text", text: "Dogs are loyal." } },
    ]);
    const { message } = telegram.incoming({
      chat: privateChat(alice),
      from: alice,
      text: "an essay abuot cats",
    });
    await telegram.waitForMessage(alice.id, (m) => m.fromBot && m.visibleText.includes("Cats are"), WAIT_MS);
    telegram.incomingEdit(alice.id, message.message_id, "an essay about dogs");
    await telegram.waitForMessage(
      alice.id,
      (m) => m.fromBot && m.visibleText.includes("Dogs are loyal."),
      WAIT_MS,
    );
    await telegram.waitFor(
      () => !botTexts().some((text) => text.includes("Cats are")),
      WAIT_MS,
      "the cat preview to be deleted",
    );
    const corrected = running!.logs.find((r) => r.event === "ingress.corrected");
    expect(corrected).toMatchObject({ channel: "telegram" });

    telegram.incomingEdit(alice.id, message.message_id, "an essay about birds");
    await eventually(
      async () =>
        running!.logs.some((r) => r.event === "ingress.ignored" && r.reason === "edit after the answer"),
      WAIT_MS,
      "the late edit to be ignored",
    );
    expect(llm.requestsContaining("about birds")).toHaveLength(0);
    await llm.setRules([]);
  }, 30_000);
});
