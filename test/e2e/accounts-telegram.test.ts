/**
 * Two Telegram bots in one gateway: the `default` bot of TELEGRAM_BOT_TOKEN and an account
 * `support` from SWITCHBOARD_CONFIG's `accounts`, both on one emulator (each bot sees only its own
 * chats, as on Telegram). Every reply leaves through the bot that received its message: in
 * conversation, under a flood on one bot, after a restart, for schedules made through each, and
 * not at all once its account is removed. Composed in this process on the real clock.
 */

import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock } from "../../src/util/clock.ts";
import {
  botUser,
  privateChat,
  startTelegramEmulator,
  type TelegramEmulator,
  user,
} from "../emulators/telegram/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-accounts-", startTelegramEmulator);
const { dir, platform: personal } = fixture;
const SUPPORT_TOKEN = "222222222:AASupportBotTokenForTests_abcdefghij";
const support = personal.addBot({
  token: SUPPORT_TOKEN,
  bot: botUser(222222222, "acme_support_bot", "Support"),
});
const alice = user(5001, "Alice");
/** Not on the default bot's allow list; the support account admits everyone. */
const bob = user(5002, "Bob");

function env(options: { withSupport: boolean; dbFile?: string; allowed?: number[] }): Record<string, string> {
  const configFile = join(dir.path, options.withSupport ? "with-support.json" : "without-support.json");
  writeFileSync(
    configFile,
    JSON.stringify({
      version: 1,
      surfaces: { "telegram:dm": { inputPolicy: "queue", delivery: "terminal" } },
      ...(options.withSupport
        ? {
            accounts: {
              telegram: {
                support: { token: "${TG_SUPPORT}", apiRoot: personal.url, allowedUsers: "*" },
              },
            },
            bindings: [
              { match: { channel: "telegram", account: "support" }, instructions: "You are ACME support." },
            ],
          }
        : {}),
    }),
  );
  return telegramGatewayEnv(fixture, {
    allowed: options.allowed ?? [alice.id],
    ...(options.dbFile ? { dbFile: options.dbFile } : {}),
    extra: { SWITCHBOARD_CONFIG: configFile, TG_SUPPORT: SUPPORT_TOKEN },
  });
}

const botTexts = (bot: TelegramEmulator, chatId: number) =>
  bot
    .messages(chatId)
    .filter((m) => m.fromBot)
    .map((m) => m.visibleText);

async function say(bot: TelegramEmulator, from: typeof alice, text: string): Promise<void> {
  bot.incoming({ chat: privateChat(from), from, text });
  await bot.waitForMessage(from.id, (m) => m.visibleText.includes(`echo: ${text}`), 20_000);
}

let running: InProcessGateway | null = null;
async function start(options: Parameters<typeof env>[0]): Promise<InProcessGateway> {
  await running?.stop({ graceMs: 1000 });
  running = await startInProcessGateway(env(options), { clock: systemClock, limits: FAST_PACING });
  return running;
}
afterAll(() => running?.stop({ graceMs: 1000 }));

describe("two Telegram bots in one gateway", () => {
  test("each bot answers only through itself, by its own allow list, with its own readiness line", async () => {
    const gateway = await start({ withSupport: true });
    await say(personal, alice, "hello personal bot");
    await say(support, alice, "hello support bot");
    expect(botTexts(personal, alice.id)).toEqual(["echo: hello personal bot"]);
    expect(botTexts(support, alice.id)).toEqual(["echo: hello support bot"]);

    // Bob is on the support account's list ("*") only.
    await say(support, bob, "bob asks support");
    personal.incoming({ chat: privateChat(bob), from: bob, text: "bob asks the personal bot" });
    await eventually(
      () => gateway.logs.find((r) => r.event === "ingress.denied" || r.event === "ingress.ignored"),
      10_000,
      "the personal bot to refuse bob",
    );
    expect(botTexts(personal, bob.id)).toEqual([]);

    const { checks } = await gateway.gateway.readiness();
    expect(checks["channel:telegram"]?.ok).toBe(true);
    expect(checks["channel:telegram:support"]?.ok).toBe(true);
    const metrics = await gateway.gateway.renderMetrics();
    expect(metrics).toContain('switchboard_inbound_accepted_total{channel="telegram",account="support"}');
    expect(metrics).toContain('switchboard_inbound_accepted_total{channel="telegram",account="default"}');
    // The support binding applies to the support bot's conversations only.
    const supportRequest = fixture.llm.requestsContaining("hello support bot")[0]!;
    const personalRequest = fixture.llm.requestsContaining("hello personal bot")[0]!;
    expect(JSON.stringify(supportRequest.messages)).toContain("You are ACME support.");
    expect(JSON.stringify(personalRequest.messages)).not.toContain("You are ACME support.");
  }, 60_000);

  test("a flood of replies on the support bot (its own 30/s) while the personal bot stays responsive", async () => {
    await start({ withSupport: true });
    personal.setRateLimits(true);
    support.setRateLimits(true);
    const crowd = Array.from({ length: 90 }, (_, i) => user(6000 + i, `Caller${i}`));
    for (const caller of crowd)
      support.incoming({ chat: privateChat(caller), from: caller, text: `flood from ${caller.id}` });
    const answered = () =>
      crowd.filter((caller) => botTexts(support, caller.id).some((t) => t.startsWith("echo: flood"))).length;
    // The flood is being sent: the support bot's window is full for a while yet.
    await eventually(() => answered() >= 20, 30_000, "the support bot to start answering the flood");
    await say(personal, alice, "personal bot during the flood");
    // Answered while the support bot still had the flood to send.
    expect(answered()).toBeLessThan(crowd.length);
    await eventually(() => answered() === crowd.length, 60_000, "every flood message answered");
    // Each bot kept to its own limits: Telegram refused nothing.
    expect(support.rateLimitStats()?.rejected).toBe(0);
    expect(personal.rateLimitStats()?.rejected).toBe(0);
    expect(personal.callsOf("sendMessage").every((call) => Number(call.params.chat_id) === alice.id)).toBe(
      true,
    );
    personal.setRateLimits(false);
    support.setRateLimits(false);
  }, 120_000);

  test("after a restart each bot still answers its own conversations, and a schedule made through each fires through it", async () => {
    await start({ withSupport: true });
    await say(personal, alice, "personal after restart");
    await say(support, alice, "support after restart");
    // Each bot's conversation went on after the restart (the earlier tests ran other gateways on
    // this database): its history is its own.
    const history = (text: string) => JSON.stringify(fixture.llm.requestsContaining(text)[0]!.messages);
    expect(history("support after restart")).toContain("hello support bot");
    expect(history("support after restart")).not.toContain("hello personal bot");
    expect(history("personal after restart")).toContain("hello personal bot");
    expect(history("personal after restart")).not.toContain("hello support bot");
    personal.incoming({ chat: privateChat(alice), from: alice, text: "/in 1s remind via personal" });
    support.incoming({ chat: privateChat(alice), from: alice, text: "/in 1s remind via support" });
    const scheduled = (text: string) => (m: { visibleText: string }) =>
      m.visibleText.startsWith("echo: [Scheduled prompt") && m.visibleText.includes(text);
    await personal.waitForMessage(alice.id, scheduled("remind via personal"), 20_000);
    await support.waitForMessage(alice.id, scheduled("remind via support"), 20_000);
    expect(botTexts(personal, alice.id).join("\n")).not.toContain("via support");
    expect(botTexts(support, alice.id).join("\n")).not.toContain("via personal");
  }, 60_000);

  test("a reply whose account was removed fails naming the account; no other bot sends it", async () => {
    const withSupport = await start({ withSupport: true });
    const earlier = botTexts(support, alice.id).length;
    support.incoming({ chat: privateChat(alice), from: alice, text: "/in 2s stranded schedule" });
    const confirmation = await support.waitFor(
      () =>
        botTexts(support, alice.id)
          .slice(earlier)
          .find((text) => text.startsWith("Scheduled sch_")),
      20_000,
      "the schedule's confirmation",
    );
    const scheduleId = /sch_[0-9a-z]+/.exec(confirmation)![0];
    // The support bot's sends fail for now, so the reply waits in the outbox for a retry.
    support.injectFault("sendMessage", { kind: "server_error", status: 502 }, 1000);
    support.incoming({ chat: privateChat(alice), from: alice, text: "stranded reply" });
    const stranded = await eventually(
      async () =>
        (await withSupport.gateway.stores.outbox.list({ state: "pending" })).find((r) =>
          r.markdown.includes("stranded reply"),
        ),
      20_000,
      "the support reply to wait for a retry",
    );
    expect(stranded.account).toBe("222222222");

    const without = await start({ withSupport: false });
    const failed = await eventually(
      async () => {
        const record = await without.gateway.stores.outbox.show(stranded.id);
        return record?.state === "failed" ? record : null;
      },
      20_000,
      "the stranded reply to fail",
    );
    expect(failed.lastError).toContain("telegram account 222222222");
    expect(failed.lastError).toContain("not configured any more");
    expect(without.logs.some((r) => r.event === "outbox.account_gone" && r.recordId === stranded.id)).toBe(
      true,
    );
    expect(botTexts(personal, alice.id).join("\n")).not.toContain("stranded reply");
    // The schedule made through the support bot fails when due, rather than run through another bot.
    const schedule = await eventually(
      async () => {
        const found = await without.gateway.schedules.get(scheduleId);
        return found?.state === "failed" ? found : null;
      },
      20_000,
      "the stranded schedule to fail",
    );
    expect(JSON.stringify(schedule)).toContain("telegram account 222222222");
    expect(botTexts(personal, alice.id).join("\n")).not.toContain("stranded schedule");
    // The personal bot is unaffected.
    await say(personal, alice, "personal without support");
    support.faults.clear();
  }, 60_000);

  test("a webhook account receives its bot's updates at /telegram/webhook/<account>, beside a polling bot", async () => {
    const dana = user(5004, "Dana");
    // The gateway's routes, served from before it starts (Telegram needs the URL at setWebhook).
    let served: InProcessGateway | null = null;
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        const path = new URL(request.url).pathname;
        const route = [...(served?.gateway.adapters.values() ?? [])]
          .flatMap((adapter) => adapter.routes?.() ?? [])
          .find((r) => r.method === request.method && r.path === path);
        return route ? route.handle(request) : new Response("no route", { status: 404 });
      },
    });
    try {
      const configFile = join(dir.path, "webhook-account.json");
      writeFileSync(
        configFile,
        JSON.stringify({
          version: 1,
          surfaces: { "telegram:dm": { delivery: "terminal" } },
          accounts: {
            telegram: {
              support: {
                token: "${TG_SUPPORT}",
                apiRoot: personal.url,
                mode: "webhook",
                webhookUrl: `http://127.0.0.1:${server.port}/telegram/webhook/support`,
                webhookSecret: "${TG_SUPPORT_WEBHOOK_SECRET}",
                allowedUsers: [String(dana.id)],
              },
            },
          },
        }),
      );
      await running?.stop({ graceMs: 1000 });
      running = served = await startInProcessGateway(
        telegramGatewayEnv(fixture, {
          allowed: [dana.id],
          dbFile: "webhook-account.sqlite",
          extra: {
            SWITCHBOARD_CONFIG: configFile,
            TG_SUPPORT: SUPPORT_TOKEN,
            TG_SUPPORT_WEBHOOK_SECRET: "webhook-secret-for-the-support-bot",
          },
        }),
        { clock: systemClock, limits: FAST_PACING },
      );
      expect(support.webhookRegistration()?.url).toBe(
        `http://127.0.0.1:${server.port}/telegram/webhook/support`,
      );
      await say(support, dana, "through the webhook");
      await say(personal, dana, "through the poller");
      expect(botTexts(support, dana.id)).toEqual(["echo: through the webhook"]);
      expect(botTexts(personal, dana.id)).toEqual(["echo: through the poller"]);
      // A request without the account's secret is refused.
      const forged = await fetch(`http://127.0.0.1:${server.port}/telegram/webhook/support`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ update_id: 1 }),
      });
      expect(forged.status).toBe(401);
    } finally {
      await running?.stop({ graceMs: 1000 });
      running = null;
      support.faults.clear();
      await server.stop(true);
    }
  }, 60_000);

  test("a single-bot database (TELEGRAM_BOT_TOKEN alone) keeps its conversation, schedule and queued reply as account default", async () => {
    const carol = user(5005, "Erin");
    const dbFile = "single-bot.sqlite";
    const single = await start({ withSupport: false, dbFile, allowed: [carol.id] });
    await say(personal, carol, "before accounts existed");
    personal.incoming({ chat: privateChat(carol), from: carol, text: "/in 3s scheduled before accounts" });
    await personal.waitForMessage(carol.id, (m) => m.visibleText.startsWith("Scheduled sch_"), 20_000);
    // A reply still queued when the gateway stops (the Bot API is failing for now).
    personal.injectFault("sendMessage", { kind: "server_error", status: 502 }, 1000);
    personal.incoming({ chat: privateChat(carol), from: carol, text: "queued before accounts" });
    await eventually(
      async () =>
        (await single.gateway.stores.outbox.list({ state: "pending" })).some((r) =>
          r.markdown.includes("queued before accounts"),
        ),
      20_000,
      "the reply to wait for a retry",
    );
    await single.stop({ graceMs: 500 });
    personal.faults.clear();

    await start({ withSupport: true, dbFile, allowed: [carol.id] });
    await personal.waitForMessage(
      carol.id,
      (m) => m.visibleText.includes("echo: queued before accounts"),
      20_000,
    );
    await personal.waitForMessage(
      carol.id,
      (m) =>
        m.visibleText.startsWith("echo: [Scheduled prompt") &&
        m.visibleText.includes("scheduled before accounts"),
      20_000,
    );
    await say(personal, carol, "after accounts exist");
    const history = JSON.stringify(fixture.llm.requestsContaining("after accounts exist")[0]!.messages);
    expect(history).toContain("before accounts existed");
    expect(botTexts(support, carol.id)).toEqual([]);
  }, 60_000);
});
