/**
 * /model end to end on Discord: discord.js against the Discord emulator, a real gateway process,
 * the fake model server recording the model each request names. The choice is per conversation
 * and survives a SIGKILL of the gateway.
 */

import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { discordDmSay, discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-model-dc-", startDiscordEmulator);
const { dir, llm, platform: discord } = fixture;
const alice = discord.createUser("alice");
const bob = discord.createUser("bob");

const configFile = join(dir.path, "models.json");
writeFileSync(
  configFile,
  JSON.stringify({
    version: 1,
    surfaces: { "discord:dm": { inputPolicy: "queue", delivery: "terminal" } },
    // No default: until /model picks one, the gateway's SWITCHBOARD_MODEL (test-model) answers.
    models: { fast: "openai-compatible:fast-model", smart: "openai-compatible:smart-model" },
  }),
);
const env = () =>
  discordGatewayEnv(fixture, { allowed: [alice.id, bob.id], extra: { SWITCHBOARD_CONFIG: configFile } });

const _botReplies = (channelId: string) =>
  discord.visibleMessages(channelId).filter((m) => m.author.id === discord.bot.id);

const say = discordDmSay(discord);

async function modelFor(text: string): Promise<string> {
  const request = await eventually(
    () => llm.requestsContaining(text)[0],
    15_000,
    `a model call for "${text}"`,
  );
  return request.model;
}

describe("/model on Discord", () => {
  const gateway = fixture.gatewayAroundTests(env);

  test("/model smart switches the model the server sees, for this conversation only, across a SIGKILL", async () => {
    await say(alice.id, "before picking", "echo: before picking");
    expect(await modelFor("before picking")).toBe("test-model");

    const list = await say(alice.id, "/model", "Models you can pick");
    expect(list).toContain("Now: the gateway's default");

    await say(alice.id, "/model smart", "Model set to smart");
    await say(alice.id, "after picking", "echo: after picking");
    expect(await modelFor("after picking")).toBe("smart-model");

    await say(bob.id, "bob is untouched", "echo: bob is untouched");
    expect(await modelFor("bob is untouched")).toBe("test-model");

    await gateway.crashAndRestart();
    await say(alice.id, "after the crash", "echo: after the crash");
    expect(await modelFor("after the crash")).toBe("smart-model");
  }, 90_000);
});
