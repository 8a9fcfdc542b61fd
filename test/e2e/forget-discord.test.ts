/**
 * Forgetting on Discord: /forget confirm in a DM, and an operator's `conversations purge` through
 * the running gateway's API while an answer is being written. A real gateway process, discord.js
 * against the Discord emulator, SQLite on a temp file read table by table.
 */

import { describe, expect, test } from "bun:test";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { conversationRows } from "./support/conversation-rows.ts";
import { discordDmSay, discordGatewayEnv, slowAnswerRule, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-forget-dc-", startDiscordEmulator);
const { llm, platform: discord } = fixture;
const alice = discord.createUser("alice");
const bob = discord.createUser("bob");
const TOKEN = "operator-token-for-forget-tests";

const env = () =>
  discordGatewayEnv(fixture, {
    surfaces: { "discord:dm": { inputPolicy: "queue", delivery: "terminal" } },
    allowed: [alice.id, bob.id],
    extra: { SWITCHBOARD_OPERATOR_TOKEN: TOKEN },
  });
const dbPath = () => env().SWITCHBOARD_DB!;

const botReplies = (channelId: string) =>
  discord.visibleMessages(channelId).filter((m) => m.author.id === discord.bot.id);

const say = discordDmSay(discord);

const rowsOf = (conversationId: string) => conversationRows(dbPath(), conversationId);

async function conversationOf(userId: string): Promise<string> {
  const list = await runCliJson<Array<{ id: string; key: string | null }>>(["conversations", "list"], {
    SWITCHBOARD_DB: dbPath(),
  });
  return list.find((c) => c.key?.includes(userId))!.id;
}

describe("forgetting on Discord", () => {
  const gateway = fixture.gatewayAroundTests(env);

  test("/forget confirm in a DM deletes every row but the tombstone; the next message starts fresh", async () => {
    await say(alice.id, "remember the word quince", "echo: remember the word quince");
    const old = await conversationOf(alice.id);
    await say(alice.id, "/forget confirm", "Done: I deleted this conversation");
    for (const [table, rows] of Object.entries(rowsOf(old))) {
      if (table === "outbox") continue;
      expect({ table, rows }).toEqual({ table, rows: table === "conversation_tombstones" ? 1 : 0 });
    }
    await say(alice.id, "anything else", "echo: anything else");
    expect(JSON.stringify(llm.requestsContaining("anything else")[0]!.messages)).not.toContain("quince");
  }, 60_000);

  test("an operator purges through the API while an answer is written: interrupted, purged, audited", async () => {
    llm.addRules([slowAnswerRule("a slow saga", "the saga goes on and on and on", 12, 400)]);
    discord.sendDm(bob.id, "a slow saga");
    await eventually(() => llm.requestsContaining("a slow saga").length === 1, 15_000, "the slow call");
    const old = await conversationOf(bob.id);
    const cliEnv = { SWITCHBOARD_URL: gateway.process.url, SWITCHBOARD_OPERATOR_TOKEN: TOKEN };

    const purged = await runCliJson<{ outcome: string; purgedBy: string; conversationId: string }>(
      ["conversations", "purge", old, "--actor", "carol"],
      cliEnv,
    );
    expect(purged).toMatchObject({ outcome: "purged", purgedBy: "operator:carol", conversationId: old });
    expect(rowsOf(old).runs).toBe(0);
    expect(rowsOf(old).messages).toBe(0);

    const again = await runCliJson<{ outcome: string; purgedBy: string }>(
      ["conversations", "purge", old],
      cliEnv,
    );
    expect(again).toMatchObject({ outcome: "already_purged", purgedBy: "operator:carol" });
    const unknown = await runCli(["conversations", "purge", "conv_nope"], cliEnv);
    expect(unknown.exitCode).toBe(3);

    await say(bob.id, "hello again", "echo: hello again");
    expect(JSON.stringify(llm.requestsContaining("hello again")[0]!.messages)).not.toContain("slow saga");
    const channel = discord.dmChannelId(bob.id);
    expect(botReplies(channel).some((m) => m.content.includes("the saga goes on"))).toBe(false);
  }, 90_000);
});
