/**
 * A user deleting their message on Discord, end to end in this process: discord.js against the
 * Discord emulator (MESSAGE_DELETE as Discord sends it, ids only), the fake model server, SQLite on
 * a temp file. A queued answer is cancelled before its model call, a running one stops, and a
 * delete delivered again (a gateway replay) changes nothing.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { systemClock } from "../../src/util/clock.ts";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";
import { withdrawalChecks } from "./support/withdrawal.ts";

const fixture = useE2eFixture("switchboard-e2e-withdraw-dc-", startDiscordEmulator);
const { llm, platform: discord } = fixture;
const alice = discord.createUser("alice");

const env = () =>
  discordGatewayEnv(fixture, {
    surfaces: { "discord:dm": { inputPolicy: "queue", delivery: "terminal" } },
    allowed: [alice.id],
  });

describe("deleting a message on Discord", () => {
  let running: InProcessGateway | undefined;
  beforeAll(async () => {
    running = await startInProcessGateway(env(), { clock: systemClock, limits: FAST_PACING });
  }, GATEWAY_START_TIMEOUT_MS);
  afterAll(() => running?.stop({ graceMs: 0 }), GATEWAY_STOP_TIMEOUT_MS);

  const gateway = () => running!.gateway;
  const checks = withdrawalChecks(() => running!, "discord");
  const { withdrawals, runOf } = checks;

  test("cancels the queued answer without a model call, stops the running one, once per delete", async () => {
    llm.setRules([{ match: { lastUserContains: "write an essay" }, reply: { kind: "hang" } }]);
    const essay = discord.sendDm(alice.id, "write an essay");
    await eventually(
      async () => llm.requestsContaining("write an essay").length === 1,
      10_000,
      "the essay's model call",
    );
    const poem = discord.sendDm(alice.id, "and a poem");
    await eventually(
      async () =>
        (await gateway().stores.runtime.loadIngressReceipt(`discord:${discord.bot.id}`, poem.id)) !== null,
      10_000,
      "the poem to be admitted",
    );

    discord.deleteUserMessage(poem.id);
    await eventually(async () => withdrawals().length === 1, 10_000, "the poem's delete");
    const cancelled = withdrawals()[0]!;
    expect(cancelled).toMatchObject({ channel: "discord", withdrawn: poem.id, effect: "cancelled" });
    expect(await runOf(String(cancelled.runId))).toMatchObject({
      state: "cancelled",
      stopReason: "withdrawn",
    });

    discord.deleteUserMessage(essay.id);
    await checks.expectStopped(1, essay.id, "the essay's delete");

    // The same MESSAGE_DELETE again (discord.js no longer has the message: ids only): a
    // duplicate, nothing more is withdrawn.
    await checks.expectDuplicate(() => discord.deleteUserMessage(poem.id), "the redelivered delete");
    discord.sendDm(alice.id, "are you there");
    await eventually(
      async () => llm.requestsContaining("are you there").length === 1,
      10_000,
      "the next message to be answered",
    );
    expect(withdrawals()).toHaveLength(2);
    expect(llm.requestsContaining("and a poem")).toHaveLength(0);
  }, 30_000);
});
