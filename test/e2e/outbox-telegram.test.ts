/**
 * Outbox delivery end to end on Telegram: a real gateway process (grammY against the Telegram
 * emulator, the fake LLM server, SQLite on a temp file), faults injected into sendMessage, the
 * operator CLI in database mode.
 */

import { beforeAll, describe, expect, test } from "bun:test";
import type { OutboxRecord } from "../../outbox/types.ts";
import { REPLY_STAGES } from "../../src/gateway/metrics.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";
import { metricValue } from "./support/metrics.ts";
import { outboxRecordOf, waitUntilSettled } from "./support/settled.ts";

const fixture = useE2eFixture("switchboard-e2e-outbox-tg-", startTelegramEmulator);
const { llm, platform: telegram } = fixture;
const alice = user(2001, "Alice");
const bob = user(2002, "Bob");
const carol = user(2003, "Carol");
const dave = user(2004, "Dave");
const erin = user(2005, "Erin");
const frank = user(2006, "Frank");

/** Gateway environment; `delivery` applies to Telegram DMs, whose messages queue (none is superseded). */
function env(dbName: string, delivery: "terminal" | "stream"): Record<string, string> {
  return telegramGatewayEnv(fixture, {
    dbFile: `${dbName}.sqlite`,
    configFile: `${dbName}.json`,
    surfaces: { "telegram:dm": { inputPolicy: "queue", delivery } },
    allowed: [alice.id, bob.id, carol.id, dave.id, erin.id, frank.id],
  });
}

const botTexts = (chatId: number) =>
  telegram
    .messages(chatId)
    .filter((m) => m.fromBot)
    .map((m) => m.visibleText);
const callsTo = (method: string, chatId: number) =>
  telegram.callsOf(method).filter((call) => Number(call.params.chat_id) === chatId);

describe("terminal replies", () => {
  const gatewayEnv = () => env("terminal", "terminal");
  const gateway = fixture.gatewayAroundTests(gatewayEnv);

  test("every reply stage gets an observation in /metrics", async () => {
    const stages = REPLY_STAGES;
    const counts = async () =>
      Promise.all(
        stages.map((stage) =>
          metricValue(gateway.process.url, "switchboard_reply_stage_ms_count", { stage }),
        ),
      );
    const before = await counts();
    telegram.incoming({ chat: privateChat(erin), from: erin, text: "time me" });
    await telegram.waitForMessage(erin.id, (m) => m.visibleText === "echo: time me", 20_000);
    const added = async () => (await counts()).map((n, i) => n - before[i]!);
    // The reply is visible before the gateway reads the platform's answer: give it a moment.
    await eventually(async () => (await added()).every((n) => n === 1), 5_000, "one observation per stage");
    expect(await added()).toEqual(stages.map(() => 1));
    const metrics = await (await fetch(`${gateway.process.url}/metrics`)).text();
    expect(metrics).toContain("# TYPE switchboard_reply_stage_ms histogram");
    expect(metrics).toMatch(/^switchboard_reply_stage_ms_bucket\{stage="send",le="\+Inf"\} \d+$/m);
  }, 30_000);

  test("429 with retry_after, then 500, then success: delivered exactly once, two replies in order", async () => {
    telegram.injectFault("sendMessage", { kind: "rate_limited", retryAfterSeconds: 1 });
    telegram.injectFault("sendMessage", { kind: "server_error", status: 500 });
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "first of two" });
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "second of two" });

    await telegram.waitForMessage(alice.id, (m) => m.visibleText === "echo: second of two", 20_000);
    await waitUntilSettled(gatewayEnv().SWITCHBOARD_DB!);

    expect(botTexts(alice.id)).toEqual(["echo: first of two", "echo: second of two"]);
    const sends = callsTo("sendMessage", alice.id);
    expect(sends.map((call) => call.fault ?? (call.response?.ok ? "ok" : "error"))).toEqual([
      "rate_limited",
      "server_error",
      "ok",
      "ok",
    ]);
    // retry_after was honoured (the emulator stamps whole milliseconds; allow a little jitter).
    expect(sends[1]!.atMs - sends[0]!.atMs).toBeGreaterThanOrEqual(990);
    expect(String(sends[2]!.params.text)).toBe("echo: first of two");
    // Counted, so an operator sees the platform pushing back (our own limiter should never draw one).
    expect(
      await metricValue(gateway.process.url, "switchboard_outbox_rate_limited_total", {
        channel: "telegram",
      }),
    ).toBe(1);
  }, 30_000);

  test("a hung send interrupted by SIGKILL becomes ambiguous; the operator resolves it and nothing is resent", async () => {
    const dbEnv = { SWITCHBOARD_DB: gatewayEnv().SWITCHBOARD_DB! };
    telegram.injectFault("sendMessage", { kind: "hang" });
    telegram.incoming({ chat: privateChat(bob), from: bob, text: "hang on this one" });
    await telegram.waitForCall(
      "sendMessage",
      (call) => Number(call.params.chat_id) === bob.id && call.fault === "hang",
      15_000,
    );
    const row = outboxRecordOf(dbEnv.SWITCHBOARD_DB, "echo: hang on this one");
    expect(row.state).toBe("sending");

    await gateway.crashAndRestart();

    const ambiguous = await eventually(
      async () => {
        const records = await runCliJson<OutboxRecord[]>(["outbox", "list", "--state", "ambiguous"], dbEnv);
        return records.find((record) => record.id === row.id);
      },
      10_000,
      "the interrupted record to be listed as ambiguous",
    );
    expect(ambiguous.markdown).toBe("echo: hang on this one");

    const resolved = await runCli(
      ["outbox", "resolve", row.id, "--delivered", "--note", "checked", "--actor", "e2e-operator"],
      dbEnv,
    );
    expect(resolved.exitCode).toBe(0);
    const shown = await runCliJson<OutboxRecord>(["outbox", "show", row.id], dbEnv);
    expect(shown.state).toBe("delivered");
    expect(shown.history.at(-1)).toMatchObject({ actor: "operator:e2e-operator", note: "checked" });

    // The chat is unblocked: the next answer goes out, and the resolved one is never sent again.
    telegram.incoming({ chat: privateChat(bob), from: bob, text: "are you there" });
    await telegram.waitForMessage(bob.id, (m) => m.visibleText === "echo: are you there", 15_000);
    await waitUntilSettled(dbEnv.SWITCHBOARD_DB);
    const sends = callsTo("sendMessage", bob.id).map((call) => String(call.params.text));
    expect(sends).toEqual(["echo: hang on this one", "echo: are you there"]);
    expect(botTexts(bob.id)).toEqual(["echo: are you there"]);
  }, 45_000);
});

describe("an ambiguous reply with a hold (SWITCHBOARD_AMBIGUOUS_HOLD_MS)", () => {
  const gatewayEnv = (): Record<string, string> => ({
    ...env("held", "terminal"),
    SWITCHBOARD_AMBIGUOUS_HOLD_MS: "3000",
  });
  const gateway = fixture.gatewayAroundTests(gatewayEnv);

  test("holds the chat's next answer until the hold ends, then lets it through; the record stays for the operator", async () => {
    const dbEnv = { SWITCHBOARD_DB: gatewayEnv().SWITCHBOARD_DB! };
    telegram.injectFault("sendMessage", { kind: "hang" });
    telegram.incoming({ chat: privateChat(dave), from: dave, text: "lost in the hang" });
    await telegram.waitForCall(
      "sendMessage",
      (call) => Number(call.params.chat_id) === dave.id && call.fault === "hang",
      15_000,
    );
    await gateway.crashAndRestart();

    telegram.incoming({ chat: privateChat(dave), from: dave, text: "are you still there" });
    const answer = await telegram.waitForMessage(
      dave.id,
      (m) => m.visibleText === "echo: are you still there",
      20_000,
    );
    expect(botTexts(dave.id)).toEqual(["echo: are you still there"]);
    const records = await runCliJson<OutboxRecord[]>(["outbox", "list", "--state", "ambiguous"], dbEnv);
    expect(records.map((record) => record.markdown)).toEqual(["echo: lost in the hang"]);
    // Recovery marked the hung send ambiguous with a 3 s hold; the next answer waited it out.
    const ambiguousAtMs = records[0]!.history.findLast((entry) => entry.action === "ambiguous")!.atMs;
    expect(answer.sentAtMs - ambiguousAtMs).toBeGreaterThanOrEqual(2_900);
    // What an operator alerts on: the record has waited about as long as the hold, and more.
    const metrics = await (await fetch(`${gateway.process.url}/metrics`)).text();
    const waited = Number(/^switchboard_outbox_oldest_ambiguous_seconds (\d+)$/m.exec(metrics)?.[1]);
    expect(waited).toBeGreaterThanOrEqual(Math.floor((Date.now() - ambiguousAtMs) / 1000) - 1);
    expect(waited).toBeGreaterThanOrEqual(2);
  }, 45_000);
});

describe("streamed replies", () => {
  const gatewayEnv = () => env("stream", "stream");
  const story = Array.from({ length: 60 }, (_, i) => `word${i + 1}`).join(" ");
  beforeAll(() => {
    llm.addRules([
      {
        match: { lastUserContains: "tell me a story" },
        reply: { kind: "text", text: story, chunks: 30, chunkDelayMs: 150 },
      },
    ]);
  });
  fixture.gatewayAroundTests(gatewayEnv);

  test("the final visible text is the run's answer; edits keep the per-chat interval", async () => {
    const dbEnv = { SWITCHBOARD_DB: gatewayEnv().SWITCHBOARD_DB! };
    telegram.incoming({ chat: privateChat(carol), from: carol, text: "tell me a story" });
    const record = await eventually(
      async () => {
        const records = await runCliJson<OutboxRecord[]>(["outbox", "list"], dbEnv);
        return records.find((r) => r.kind === "stream" && r.state === "delivered");
      },
      20_000,
      "the stream record to be delivered",
    );
    const run = await runCliJson<{ answerText: string }>(["runs", "show", record.runId], dbEnv);
    expect(run.answerText).toBe(story);
    expect(botTexts(carol.id)).toEqual([run.answerText]);

    const edits = callsTo("editMessageText", carol.id);
    // 30 deltas over ~4.5 s: several previews, coalesced rather than one edit per delta.
    expect(edits.length).toBeGreaterThanOrEqual(3);
    expect(edits.length).toBeLessThan(30);
    const calls = [...callsTo("sendMessage", carol.id), ...edits].map((call) => call.atMs);
    const gapsMs = calls.slice(1).map((atMs, i) => atMs - calls[i]!);
    expect(Math.min(...gapsMs)).toBeGreaterThanOrEqual(980);
  }, 40_000);

  test("an answer that ends within the first-preview wait is one message at once: no preview, no edit", async () => {
    const dbEnv = { SWITCHBOARD_DB: gatewayEnv().SWITCHBOARD_DB! };
    const sentAtMs = Date.now();
    telegram.incoming({ chat: privateChat(frank), from: frank, text: "a quick one please" });
    const record = await eventually(
      async () => {
        const records = await runCliJson<OutboxRecord[]>(["outbox", "list"], dbEnv);
        return records.find((r) => r.target === String(frank.id) && r.state === "delivered");
      },
      20_000,
      "the answer's record to be delivered",
    );
    // Sent as an ordinary message by the terminal commit's record, not previewed then edited.
    expect(record.kind).toBe("message");
    expect(botTexts(frank.id)).toHaveLength(1);
    // Well before the edit interval (1 s) a preview's final edit would have had to wait for.
    const send = callsTo("sendMessage", frank.id)[0]!;
    expect(send.atMs - sentAtMs).toBeLessThan(900);
    expect(callsTo("sendMessage", frank.id)).toHaveLength(1);
    expect(callsTo("editMessageText", frank.id)).toEqual([]);
  }, 30_000);
});
