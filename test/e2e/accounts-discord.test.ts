/**
 * Two Discord bots in one gateway: the `default` bot of DISCORD_BOT_TOKEN and an account `support`
 * from SWITCHBOARD_CONFIG's `accounts`, each on its own Discord emulator (a bot sees only its own
 * DMs and servers, as on Discord), both with tokens shaped as Discord's (the bot's id in base64
 * first), which is how the gateway knows each account's id before it logs in. Every reply leaves
 * through the bot that received its message, and a reply queued for a removed account fails.
 * Composed in this process on the real clock.
 */

import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock } from "../../src/util/clock.ts";
import { type DiscordEmulator, discordBotToken, startDiscordEmulator } from "../emulators/discord/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { useE2eFixture } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { eventually } from "./support/gateway-process.ts";

const PERSONAL_ID = "111111111111111111";
const SUPPORT_ID = "222222222222222222";
const fixture = useE2eFixture("switchboard-e2e-accounts-dc-", () =>
  startDiscordEmulator({ botId: PERSONAL_ID, token: discordBotToken(PERSONAL_ID) }),
);
const { dir, llm, platform: personal } = fixture;
const support = startDiscordEmulator({ botId: SUPPORT_ID, token: discordBotToken(SUPPORT_ID) });
afterAll(() => support.close());

/** Alice writes to both bots; Bob only to the support bot, which admits everyone. */
const aliceOfPersonal = personal.createUser("alice");
const aliceOfSupport = support.createUser("alice");
const bobOfPersonal = personal.createUser("bob");

function env(withSupport: boolean): Record<string, string> {
  const configFile = join(dir.path, withSupport ? "with-support.json" : "without-support.json");
  writeFileSync(
    configFile,
    JSON.stringify({
      version: 1,
      surfaces: { "discord:dm": { inputPolicy: "queue", delivery: "terminal" } },
      ...(withSupport
        ? {
            accounts: {
              discord: {
                support: { token: "${DC_SUPPORT}", apiUrl: support.apiUrl, allowedUsers: "*" },
              },
            },
            bindings: [
              { match: { channel: "discord", account: "support" }, instructions: "You are ACME support." },
            ],
          }
        : {}),
    }),
  );
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    extra: {
      SWITCHBOARD_CONFIG: configFile,
      DISCORD_BOT_TOKEN: personal.token,
      DISCORD_API_URL: personal.apiUrl,
      DISCORD_ALLOWED_USERS: aliceOfPersonal.id,
      DC_SUPPORT: support.token,
    },
  });
}

const botTexts = (bot: DiscordEmulator, userId: string) =>
  bot
    .visibleMessages(bot.dmChannelId(userId))
    .filter((m) => m.author.id === bot.bot.id)
    .map((m) => m.content);

async function say(bot: DiscordEmulator, userId: string, text: string): Promise<void> {
  bot.sendDm(userId, text);
  await bot.waitFor(
    () => botTexts(bot, userId).some((t) => t.includes(`echo: ${text}`)),
    20_000,
    `the reply to "${text}"`,
  );
}

let running: InProcessGateway | null = null;
async function start(withSupport: boolean): Promise<InProcessGateway> {
  await running?.stop({ graceMs: 1000 });
  running = await startInProcessGateway(env(withSupport), { clock: systemClock, limits: FAST_PACING });
  return running;
}
afterAll(() => running?.stop({ graceMs: 1000 }));

describe("two Discord bots in one gateway", () => {
  test("each bot answers only through itself, by its own allow list, with its own readiness line and binding", async () => {
    const gateway = await start(true);
    await say(personal, aliceOfPersonal.id, "hello personal bot");
    await say(support, aliceOfSupport.id, "hello support bot");
    expect(botTexts(personal, aliceOfPersonal.id)).toEqual(["echo: hello personal bot"]);
    expect(botTexts(support, aliceOfSupport.id)).toEqual(["echo: hello support bot"]);
    // Neither bot sent anything through the other's API.
    expect(personal.restCalls.some((c) => c.body && JSON.stringify(c.body).includes("support bot"))).toBe(
      false,
    );
    expect(support.restCalls.some((c) => c.body && JSON.stringify(c.body).includes("personal bot"))).toBe(
      false,
    );

    // Bob is not on the personal bot's list.
    personal.sendDm(bobOfPersonal.id, "bob asks the personal bot");
    await eventually(
      () => gateway.logs.find((r) => r.event === "ingress.denied" || r.event === "ingress.ignored"),
      10_000,
      "the personal bot to refuse bob",
    );
    expect(botTexts(personal, bobOfPersonal.id)).toEqual([]);

    const { checks } = await gateway.gateway.readiness();
    expect(checks["channel:discord"]?.ok).toBe(true);
    expect(checks["channel:discord:support"]?.ok).toBe(true);
    const metrics = await gateway.gateway.renderMetrics();
    expect(metrics).toContain('switchboard_inbound_accepted_total{channel="discord",account="support"}');
    expect(metrics).toContain('switchboard_inbound_accepted_total{channel="discord",account="default"}');
    const supportRequest = llm.requestsContaining("hello support bot")[0]!;
    const personalRequest = llm.requestsContaining("hello personal bot")[0]!;
    expect(JSON.stringify(supportRequest.messages)).toContain("You are ACME support.");
    expect(JSON.stringify(personalRequest.messages)).not.toContain("You are ACME support.");
  }, 60_000);

  test("after a restart each bot goes on with its own conversation, and a schedule made through each fires through it", async () => {
    await start(true);
    await say(personal, aliceOfPersonal.id, "personal after restart");
    await say(support, aliceOfSupport.id, "support after restart");
    const history = (text: string) => JSON.stringify(llm.requestsContaining(text)[0]!.messages);
    expect(history("support after restart")).toContain("hello support bot");
    expect(history("support after restart")).not.toContain("hello personal bot");
    expect(history("personal after restart")).toContain("hello personal bot");
    expect(history("personal after restart")).not.toContain("hello support bot");

    personal.sendDm(aliceOfPersonal.id, "/in 1s remind via personal");
    support.sendDm(aliceOfSupport.id, "/in 1s remind via support");
    const scheduled = (bot: DiscordEmulator, userId: string, text: string) =>
      bot.waitFor(
        () =>
          // Discord markdown escapes the brackets.
          botTexts(bot, userId).some((t) => t.startsWith("echo: \\[Scheduled prompt") && t.includes(text)),
        20_000,
        `the scheduled "${text}"`,
      );
    await scheduled(personal, aliceOfPersonal.id, "remind via personal");
    await scheduled(support, aliceOfSupport.id, "remind via support");
    expect(botTexts(personal, aliceOfPersonal.id).join("\n")).not.toContain("via support");
    expect(botTexts(support, aliceOfSupport.id).join("\n")).not.toContain("via personal");
  }, 60_000);

  test("a reply queued for a removed account fails naming it; the other bot never sends it", async () => {
    const withSupport = await start(true);
    support.failNext("POST /channels/:id/messages", { kind: "server_error", status: 502 }, 1000);
    support.sendDm(aliceOfSupport.id, "stranded reply");
    const stranded = await eventually(
      async () =>
        (await withSupport.gateway.stores.outbox.list({ state: "pending" })).find((r) =>
          r.markdown.includes("stranded reply"),
        ),
      20_000,
      "the support reply to wait for a retry",
    );
    expect(stranded.account).toBe(SUPPORT_ID);

    const without = await start(false);
    const failed = await eventually(
      async () => {
        const record = await without.gateway.stores.outbox.show(stranded.id);
        return record?.state === "failed" ? record : null;
      },
      20_000,
      "the stranded reply to fail",
    );
    expect(failed.lastError).toContain(`discord account ${SUPPORT_ID}`);
    expect(failed.lastError).toContain("not configured any more");
    expect(botTexts(personal, aliceOfPersonal.id).join("\n")).not.toContain("stranded reply");
    support.clearFaults();
    await say(personal, aliceOfPersonal.id, "personal without support");
  }, 60_000);
});
