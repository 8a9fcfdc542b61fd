/**
 * Bindings end to end: a real gateway process against the Telegram emulator and the fake model.
 * One binding gives Alice's chat its own agent directory, model and tool sets; Bob's chat, which
 * no binding matches, keeps the gateway's. The console API explains both conversations.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SCHEDULE_TOOL_NAMES } from "../../schedules/tools.ts";
import { STATE_TOOL_NAMES } from "../../src/state/tools.ts";
import { startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { messageText } from "../support/llm/fake-llm-rules.ts";
import { telegramDmSay, telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const TOKEN = "operator-token-for-bindings-0123456789";
const fixture = useE2eFixture("switchboard-e2e-bindings-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const alice = user(3001, "Alice");
const bob = user(3002, "Bob");

const supportDir = join(dir.path, "agents", "support");
mkdirSync(supportDir, { recursive: true });
writeFileSync(join(supportDir, "INSTRUCTIONS.md"), "You are Sage, the support agent of ACME.\n");
const configFile = join(dir.path, "bindings.json");
writeFileSync(
  configFile,
  JSON.stringify({
    version: 1,
    surfaces: { "telegram:dm": { delivery: "terminal" } },
    bindings: [
      {
        // A Telegram DM's chat id is the user's id.
        match: { channel: "telegram", account: "default", chat: String(alice.id) },
        agentDir: "agents/support",
        model: "openai-compatible:support-model",
        tools: ["state"],
      },
    ],
  }),
);

const say = telegramDmSay(telegram);

async function requestFor(text: string) {
  return eventually(() => llm.requestsContaining(text)[0], 15_000, `a model call for "${text}"`);
}

const systemOf = (request: Awaited<ReturnType<typeof requestFor>>) =>
  messageText(request.messages.find((m) => m.role === "system")!);

describe("a binding on one Telegram chat", () => {
  const gateway = fixture.gatewayAroundTests(() => ({
    ...telegramGatewayEnv(fixture, {
      allowed: [alice.id, bob.id],
      extra: { SWITCHBOARD_CONFIG: configFile },
    }),
    SWITCHBOARD_OPERATOR_TOKEN: TOKEN,
  }));

  test("the bound chat gets the binding's agent directory, model and tool sets; another chat does not", async () => {
    await say(alice, "alice asks support", "echo: alice asks support");
    const bound = await requestFor("alice asks support");
    expect(bound.model).toBe("support-model");
    expect(systemOf(bound)).toContain("You are Sage, the support agent of ACME.");
    for (const name of STATE_TOOL_NAMES) expect(bound.toolNames).toContain(name);
    for (const name of SCHEDULE_TOOL_NAMES) expect(bound.toolNames).not.toContain(name);

    await say(bob, "bob asks anyone", "echo: bob asks anyone");
    const other = await requestFor("bob asks anyone");
    expect(other.model).toBe("test-model");
    expect(systemOf(other)).not.toContain("Sage");
    for (const name of STATE_TOOL_NAMES) expect(other.toolNames).toContain(name);
    for (const name of SCHEDULE_TOOL_NAMES) expect(other.toolNames).toContain(name);
  }, 40_000);

  test("the console API explains each conversation: the binding that matched, and what set each setting", async () => {
    const api = async <T>(path: string) => {
      const response = await fetch(`${gateway.process.url}${path}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(response.status).toBe(200);
      return (await response.json()) as T;
    };
    const { items } = await api<{ items: Array<{ id: string; title: string | null }> }>("/api/conversations");
    const idOf = (name: string) => items.find((c) => c.title === name)!.id;
    type Explained = {
      binding: number | null;
      conversation: string;
      sources: Record<string, string>;
      settings: Record<string, unknown>;
    };
    const aliceSettings = await api<Explained>(`/api/conversations/${idOf("Alice")}/settings`);
    expect(aliceSettings.binding).toBe(0);
    expect(aliceSettings.conversation).toBe(
      `telegram, account default, dm, chat ${alice.id}, user ${alice.id}`,
    );
    expect(aliceSettings.settings.model).toBe("openai-compatible:support-model");
    expect(aliceSettings.settings.agentDir).toBe(supportDir);
    expect(aliceSettings.sources).toMatchObject({
      model: "bindings.0",
      agentDir: "bindings.0",
      tools: "bindings.0",
      delivery: "surfaces.telegram:dm",
      inputPolicy: "default",
    });
    const bobSettings = await api<Explained>(`/api/conversations/${idOf("Bob")}/settings`);
    expect(bobSettings.binding).toBeNull();
    expect(bobSettings.sources.model).toBe("default");
    expect(bobSettings.settings.tools).toBeUndefined();
  }, 20_000);
});
