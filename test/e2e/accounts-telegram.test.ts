/**
 * Two Telegram bots in one gateway: the `default` bot of TELEGRAM_BOT_TOKEN and an account
 * `support` from SWITCHBOARD_CONFIG's `accounts`, both on one emulator (each bot sees only its own
 * chats, as on Telegram). Every reply leaves through the bot that received its message: in
 * conversation, under a flood on one bot, after a restart, for schedules made through each, and
 * not at all once its account is removed. Composed in this process on the real clock.
 */

import { describe, expect, test } from "bun:test";
import {
  privateChat,
  startTelegramEmulator,
  type TelegramEmulator,
  user,
} from "../emulators/telegram/index.ts";
import type { InProcessGateway } from "../support/gateway.ts";
import * as accounts from "./support/accounts.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-accounts-", startTelegramEmulator);
const { dir, platform: personal } = fixture;
const support = accounts.addTelegramSupportBot(personal);
const botTexts = accounts.telegramBotTexts;
const alice = user(5001, "Alice");
/** Not on the default bot's allow list; the support account admits everyone. */
const bob = user(5002, "Bob");

function env(options: { withSupport: boolean; dbFile?: string; allowed?: number[] }): Record<string, string> {
  const configFile = accounts.writeSupportConfig(dir.path, "telegram", options.withSupport, {
    token: "${TG_SUPPORT}",
    apiRoot: personal.url,
    allowedUsers: "*",
  });
  return telegramGatewayEnv(fixture, {
    allowed: options.allowed ?? [alice.id],
    ...(options.dbFile ? { dbFile: options.dbFile } : {}),
    extra: { SWITCHBOARD_CONFIG: configFile, TG_SUPPORT: accounts.TELEGRAM_SUPPORT_TOKEN },
  });
}

async function say(bot: TelegramEmulator, from: typeof alice, text: string): Promise<void> {
  bot.incoming({ chat: privateChat(from), from, text });
  await bot.waitForMessage(from.id, (m) => m.visibleText.includes(`echo: ${text}`), 20_000);
}

const gateways = accounts.oneGatewayAtATime();
const start = (options: Parameters<typeof env>[0]) => gateways.start(env(options));

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
    await accounts.refusedSender(gateway, "the personal bot to refuse bob");
    expect(botTexts(personal, bob.id)).toEqual([]);

    await accounts.expectServing(gateway, "telegram", ["support"]);
    // The support binding applies to the support bot's conversations only.
    accounts.expectBoundOnly(
      fixture.llm,
      accounts.SUPPORT_INSTRUCTIONS,
      "hello support bot",
      "hello personal bot",
    );
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
    accounts.expectOwnHistories(
      fixture.llm,
      ["support after restart", "hello support bot"],
      ["personal after restart", "hello personal bot"],
    );
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
        accounts
          .telegramBotTexts(support, alice.id)
          .slice(earlier)
          .find((text) => text.startsWith("Scheduled sch_")),
      20_000,
      "the schedule's confirmation",
    );
    const scheduleId = /sch_[0-9a-z]+/.exec(confirmation)![0];
    // The support bot's sends fail for now, so the reply waits in the outbox for a retry.
    support.injectFault("sendMessage", { kind: "server_error", status: 502 }, 1000);
    support.incoming({ chat: privateChat(alice), from: alice, text: "stranded reply" });
    const { stranded, without, failed } = await accounts.strandedReply(
      withSupport,
      "stranded reply",
      "222222222",
      () => start({ withSupport: false }),
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
      const configFile = accounts.writeConfig(dir.path, "webhook-account.json", "telegram", {
        surfaces: { "telegram:dm": { delivery: "terminal" } },
        accounts: {
          support: {
            token: "${TG_SUPPORT}",
            apiRoot: personal.url,
            mode: "webhook",
            webhookUrl: `http://127.0.0.1:${server.port}/telegram/webhook/support`,
            webhookSecret: "${TG_SUPPORT_WEBHOOK_SECRET}",
            allowedUsers: [String(dana.id)],
          },
        },
      });
      served = await gateways.start(
        telegramGatewayEnv(fixture, {
          allowed: [dana.id],
          dbFile: "webhook-account.sqlite",
          extra: {
            SWITCHBOARD_CONFIG: configFile,
            TG_SUPPORT: accounts.TELEGRAM_SUPPORT_TOKEN,
            TG_SUPPORT_WEBHOOK_SECRET: "webhook-secret-for-the-support-bot",
          },
        }),
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
      await gateways.stop();
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
    await accounts.pendingReply(single, "queued before accounts", "the reply to wait for a retry");
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
