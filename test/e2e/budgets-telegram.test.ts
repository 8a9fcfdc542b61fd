/**
 * Budgets end to end on Telegram: grammY against the Telegram emulator, a real gateway process
 * on an injected clock, the fake model server reporting exact token counts.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { runBudgetScenario, writeBudgetConfig } from "./support/budget-scenario.ts";
import { runCli } from "./support/cli.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";

const fixture = useE2eFixture("switchboard-e2e-budgets-tg-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const alice = user(4001, "Alice");
const configFile = writeBudgetConfig(dir.path, {
  "telegram:dm": { inputPolicy: "queue", delivery: "terminal" },
});

test("a budget exhausted mid-day refuses without a model call, resets at midnight in its zone, and an operator's reset, then a raise, let the user write again", async () => {
  await runBudgetScenario({
    dir: dir.path,
    llm,
    env: (extra) =>
      telegramGatewayEnv(fixture, {
        allowed: [alice.id],
        extra: { SWITCHBOARD_CONFIG: configFile, ...extra },
      }),
    startGateway: (env) => fixture.startGateway(env),
    chat: {
      principal: `telegram:${alice.id}`,
      async say(text, replyContains) {
        telegram.incoming({ chat: privateChat(alice), from: alice, text });
        const reply = await telegram.waitForMessage(
          alice.id,
          (m) => m.visibleText.includes(replyContains),
          20_000,
        );
        return reply.visibleText;
      },
    },
  });
}, 180_000);

test("a budget that limits only cost, with a model that reports none, stops the start with a configuration error", async () => {
  const costOnly = join(dir.path, "cost-only.json");
  writeFileSync(costOnly, JSON.stringify({ version: 1, budgets: { perUser: { costPerMonthUsd: 5 } } }));
  const result = await runCli(
    ["start"],
    telegramGatewayEnv(fixture, {
      allowed: [alice.id],
      dbFile: "cost-only.sqlite",
      extra: { SWITCHBOARD_CONFIG: costOnly },
    }),
  );
  expect(result.exitCode).not.toBe(0);
  expect(result.stdout + result.stderr).toContain(
    "budgets.perUser limits only cost, but openai-compatible:test-model reports no cost",
  );
}, 60_000);
