/**
 * /model end to end on Telegram: a real gateway process (grammY against the Telegram emulator),
 * the fake OpenAI-compatible server recording which model each request names, SQLite on a temp
 * file. The choice is per conversation, used from the next run on, kept by a run in flight,
 * survives a SIGKILL, and operators see and set it with the CLI. Nothing here depends on the
 * platform: this is the one end-to-end test of /model.
 */

import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { groupChat, privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { slowAnswerRule, telegramDmSay, telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-model-tg-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const alice = user(2001, "Alice");
const bob = user(2002, "Bob");
const team = groupChat(-6001, "Team");

const configFile = join(dir.path, "models.json");
writeFileSync(
  configFile,
  JSON.stringify({
    version: 1,
    surfaces: {
      "telegram:dm": { inputPolicy: "queue", delivery: "terminal" },
      "telegram:group": { inputPolicy: "queue", delivery: "terminal", requireMention: false },
    },
    // Groups have no default: until /model picks one, the gateway's SWITCHBOARD_MODEL answers.
    models: {
      fast: "openai-compatible:fast-model",
      smart: "openai-compatible:smart-model",
      default: { "telegram:dm": "fast" },
    },
  }),
);
const env = () =>
  telegramGatewayEnv(fixture, {
    allowed: [alice.id, bob.id],
    extra: { SWITCHBOARD_CONFIG: configFile },
  });
const cliEnv = () => ({ SWITCHBOARD_DB: env().SWITCHBOARD_DB!, SWITCHBOARD_CONFIG: configFile });

/** The model named by the one request whose last user message contains `text`. */
async function modelFor(text: string): Promise<string> {
  const request = await eventually(
    () => llm.requestsContaining(text)[0],
    15_000,
    `a model call for "${text}"`,
  );
  return request.model;
}

const say = telegramDmSay(telegram);

describe("/model on Telegram", () => {
  const gateway = fixture.gatewayAroundTests(env);

  test("the surface default is used until /model picks another; /model lists and marks the current one", async () => {
    await say(alice, "first question", "echo: first question");
    expect(await modelFor("first question")).toBe("fast-model");

    const list = await say(alice, "/model", "Models you can pick");
    expect(list).toContain("fast — openai-compatible:fast-model (current)");
    expect(list).toContain("smart — openai-compatible:smart-model");
    expect(list).not.toContain("smart-model (current)");

    const unknown = await say(alice, "/model genius", 'There is no model "genius"');
    expect(unknown).toContain("smart — openai-compatible:smart-model");

    const sayInTeam = async (text: string, replyContains: string) => {
      telegram.incoming({ chat: team, from: bob, text });
      const reply = await telegram.waitForMessage(
        team.id,
        (m) => m.fromBot && m.visibleText.includes(replyContains),
        15_000,
      );
      return reply.visibleText;
    };
    await sayInTeam("team question", "echo: team question");
    expect(await modelFor("team question")).toBe("test-model");
    const teamList = await sayInTeam("/model", "Models you can pick");
    expect(teamList).toContain("Now: the gateway's default");
    expect(teamList).not.toContain("(current)");
  }, 40_000);

  test("a run in flight keeps its model; the next one uses the new choice; /status shows it", async () => {
    llm.addRules([slowAnswerRule("long story please", "once upon a time there was a gateway", 6, 400)]);
    telegram.incoming({ chat: privateChat(alice), from: alice, text: "long story please" });
    expect(await modelFor("long story please")).toBe("fast-model");

    await say(alice, "/model smart", "Model set to smart");
    await telegram.waitForMessage(
      alice.id,
      (m) => m.fromBot && m.visibleText.includes("once upon a time"),
      15_000,
    );
    expect(llm.requestsContaining("long story please").map((r) => r.model)).toEqual(["fast-model"]);

    await say(alice, "second question", "echo: second question");
    expect(await modelFor("second question")).toBe("smart-model");

    const status = await say(alice, "/status", "Model:");
    expect(status).toContain("Model: smart: openai-compatible:smart-model");

    // Another conversation is not affected.
    await say(bob, "bob asks", "echo: bob asks");
    expect(await modelFor("bob asks")).toBe("fast-model");
  }, 60_000);

  test("the choice survives a SIGKILL; operators see it, set it back and are refused unknown names", async () => {
    await gateway.crashAndRestart();
    await say(alice, "after the restart", "echo: after the restart");
    expect(await modelFor("after the restart")).toBe("smart-model");

    const conversations = await runCliJson<Array<{ id: string; key: string | null }>>(
      ["conversations", "list"],
      cliEnv(),
    );
    const aliceConversation = conversations.find((c) => c.key?.includes(String(alice.id)))!;
    expect(aliceConversation).toBeDefined();
    const shown = await runCliJson<{ model: string | null }>(
      ["conversations", "show", aliceConversation.id],
      cliEnv(),
    );
    expect(shown.model).toBe("smart");

    const refused = await runCli(["conversations", "set-model", aliceConversation.id, "genius"], cliEnv());
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain('Model "genius" is not one of fast, smart');

    const set = await runCli(["conversations", "set-model", aliceConversation.id, "default"], cliEnv());
    expect(set.exitCode).toBe(0);
    await say(alice, "back to default", "echo: back to default");
    expect(await modelFor("back to default")).toBe("fast-model");
  }, 60_000);
});
