/**
 * Forgetting on Discord: /forget confirm in a DM, and an operator's `conversations purge` through
 * the running gateway's API while an answer is being written. A real gateway process, discord.js
 * against the Discord emulator, SQLite on a temp file read table by table.
 */

import { describe, expect, test } from "bun:test";
import {
  type EmulatedInteraction,
  type GatewayMessage,
  startDiscordEmulator,
} from "../emulators/discord/index.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { conversationRows } from "./support/conversation-rows.ts";
import { discordDmSay, discordGatewayEnv, slowAnswerRule, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-forget-dc-", startDiscordEmulator);
const { llm, platform: discord } = fixture;
const alice = discord.createUser("alice");
const bob = discord.createUser("bob");
const carol = discord.createUser("carol");
const TOKEN = "operator-token-for-forget-tests";

const env = () =>
  discordGatewayEnv(fixture, {
    surfaces: { "discord:dm": { inputPolicy: "queue", delivery: "terminal" } },
    allowed: [alice.id, bob.id, carol.id],
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
    llm.addRules([slowAnswerRule("a slow saga", "the saga goes on and on and on", 40, 400)]);
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

  test("/forget with buttons on Discord: a forged press is refused, Delete it purges once, its redelivered interaction and the stale button change nothing", async () => {
    await say(carol.id, "the code word is damson", "echo: the code word is damson");
    const old = await conversationOf(carol.id);
    const channel = discord.dmChannelId(carol.id);
    discord.sendDm(carol.id, "/forget");
    type Button = { label: string; custom_id: string };
    const buttonsOf = (m: GatewayMessage) =>
      ((m.components ?? []) as Array<{ components: Button[] }>).flatMap((row) => row.components);
    const prompt = await discord.waitFor(
      () =>
        botReplies(channel).find(
          (m) => m.content.includes("Send /forget confirm") && buttonsOf(m).length > 0,
        ),
      20_000,
      "the /forget prompt with buttons",
    );
    expect(buttonsOf(prompt).map((b) => b.label)).toEqual(["Delete it", "Keep it"]);
    const deleteId = buttonsOf(prompt).find((b) => b.label === "Delete it")!.custom_id;
    const noticeFor = (press: EmulatedInteraction) =>
      discord.waitFor(() => press.followUps[0]?.content, 20_000, `the notice of interaction ${press.id}`);

    const altered = `${deleteId.slice(0, -1)}${deleteId.endsWith("A") ? "B" : "A"}`;
    const forged = discord.pressButton(prompt.id, carol.id, altered, { forged: true });
    expect(await noticeFor(forged)).toBe("This button is not valid.");
    expect(rowsOf(old).runs).toBeGreaterThan(0);

    const press = discord.pressButton(prompt.id, carol.id, deleteId);
    expect(await noticeFor(press)).toBe("Deleted.");
    await say(carol.id, "after the button", "echo: after the button");
    expect(rowsOf(old).runs).toBe(0);
    expect(rowsOf(old).conversation_tombstones).toBe(1);
    const fresh = await conversationOf(carol.id);
    const freshRuns = rowsOf(fresh).runs;

    discord.redispatchInteraction(press.id);
    const stale = discord.pressButton(prompt.id, carol.id, deleteId);
    expect(await noticeFor(stale)).toContain("This button is out of date");
    expect(rowsOf(fresh).runs).toBe(freshRuns);
    expect(await conversationOf(carol.id)).toBe(fresh);
    expect(botReplies(channel).filter((m) => m.content.includes("Done: I deleted"))).toHaveLength(1);
  }, 90_000);
});
