/**
 * Budgets end to end on Discord: discord.js against the Discord emulator, a real gateway process
 * on an injected clock; here the operator resets the user's usage instead of raising the limit.
 */
import { test } from "bun:test";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { runBudgetScenario, writeBudgetConfig } from "./support/budget-scenario.ts";
import { discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";

const fixture = useE2eFixture("switchboard-e2e-budgets-dc-", startDiscordEmulator);
const { dir, llm, platform: discord } = fixture;
const alice = discord.createUser("alice");
const configFile = writeBudgetConfig(dir.path, {
  "discord:dm": { inputPolicy: "queue", delivery: "terminal" },
});

test("a budget exhausted mid-day refuses without a model call, resets at midnight in its zone, and an operator's reset lets the user write again", async () => {
  await runBudgetScenario({
    dir: dir.path,
    llm,
    operator: "reset",
    env: (extra) =>
      discordGatewayEnv(fixture, {
        allowed: [alice.id],
        extra: { SWITCHBOARD_CONFIG: configFile, ...extra },
      }),
    startGateway: (env) => fixture.startGateway(env),
    chat: {
      principal: `discord:${alice.id}`,
      async say(text, replyContains) {
        discord.sendDm(alice.id, text);
        const channel = discord.dmChannelId(alice.id);
        const reply = await discord.waitFor(
          () =>
            discord
              .visibleMessages(channel)
              .find((m) => m.author.id === discord.bot.id && m.content.includes(replyContains)),
          20_000,
          `a bot reply containing "${replyContains}"`,
        );
        return reply.content;
      },
    },
  });
}, 180_000);
