// Kept per platform: the press travels as a Discord interaction (components, custom_id, ack).
/**
 * Tool approvals on Discord end to end: a real gateway process, discord.js against the Discord
 * emulator with message components and button interactions, a real stdio MCP server whose
 * `append_note` appends to a file (approval "ask"), the model behind the fake LLM server.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import {
  CALLBACK_TYPE,
  customIds,
  type EmulatedInteraction,
  type GatewayMessage,
  startDiscordEmulator,
} from "../emulators/discord/index.ts";
import {
  appendRule as appendNoteRule,
  approvalStates,
  notesIn,
  runApproveOnceScenario,
  writeApprovalConfig,
} from "./support/approval-scenario.ts";
import { discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-approvals-dc-", startDiscordEmulator);
const { dir, llm, platform: discord } = fixture;
const notes = notesIn(dir.path);
const alice = discord.createUser("alice");
const bob = discord.createUser("bob");
const TIMEOUT = 20_000;

fixture.stopGatewaysAfterEach();

async function start(): Promise<GatewayProcess> {
  const config = writeApprovalConfig(dir.path, notes, {
    "discord:dm": { delivery: "terminal", inputPolicy: "queue" },
    "discord:group": { requireMention: false },
  });
  const gateway = await fixture.startGateway(
    discordGatewayEnv(fixture, {
      allowed: [alice.id, bob.id],
      dbFile: "approvals-discord.sqlite",
      extra: { SWITCHBOARD_CONFIG: config },
    }),
    GATEWAY_START_TIMEOUT_MS,
  );
  return gateway;
}

const count = notes.count;
const appendRule = (prompt: string, text: string) => appendNoteRule(llm, prompt, text);

type Button = { label: string; custom_id: string };
const buttonsOf = (message: GatewayMessage): Button[] =>
  ((message.components ?? []) as Array<{ components: Button[] }>).flatMap((row) => row.components);

async function promptFor(channelId: string, text: string): Promise<GatewayMessage> {
  return await discord.waitFor(
    () =>
      discord
        .visibleMessages(channelId)
        .find(
          (m) => m.content.includes("Approval needed") && m.content.includes(text) && customIds(m).length > 0,
        ),
    TIMEOUT,
    `the approval prompt for "${text}" with buttons`,
  );
}

function dataOf(prompt: GatewayMessage, label: string): string {
  const button = buttonsOf(prompt).find((b) => b.label === label);
  if (!button) throw new Error(`no button "${label}" on the prompt`);
  return button.custom_id;
}

/** The ephemeral notice the presser got, once the press was acknowledged. */
async function noticeFor(press: EmulatedInteraction): Promise<string> {
  return await discord.waitFor(
    () => press.followUps[0]?.content,
    TIMEOUT,
    `the follow-up notice of interaction ${press.id}`,
  );
}

const current = (id: string) => discord.message(id)?.message;

test("approve on Discord: buttons, a press, the effect exactly once, the notice; the buttons go; a redelivered or repeated press decides nothing more", async () => {
  await start();
  const dm = discord.dmChannelId(alice.id);
  await runApproveOnceScenario<GatewayMessage, EmulatedInteraction>({
    llm,
    notes,
    asker: "alice",
    ask: (text) => discord.sendDm(alice.id, text),
    // A copy: the emulator edits its message in place, and a stale press needs the first buttons.
    promptFor: async (text) => structuredClone(await promptFor(dm, text)),
    labels: (prompt) => buttonsOf(prompt).map((b) => b.label),
    press: (prompt, label, options) =>
      discord.pressButton(prompt.id, alice.id, dataOf(prompt, label), { forged: options?.stale ?? false }),
    noticeOf: noticeFor,
    redeliver: (press) => discord.redispatchInteraction(press.id),
    current: (prompt) => {
      const m = current(prompt.id);
      return m && { text: m.content, buttons: customIds(m).length > 0 };
    },
    chatTexts: () => discord.visibleMessages(dm).map((m) => m.content),
    checkPrompt: (prompt) => {
      // Discord markdown escapes the underscore; the reader sees /approve ap_….
      expect(prompt.content).toMatch(/\/approve ap\\_[0-9a-f]{12}/);
    },
    checkPress: async (press) => {
      // Answered with a deferred update (within Discord's 3 s), the notice only for the presser.
      expect(press.callbacks).toEqual([CALLBACK_TYPE.deferredUpdate]);
      expect(press.followUps[0]?.flags).toBe(64);
    },
  });
}, 60_000);

test("a forged custom_id is refused and logged, the buttons stay; Deny then decides without running the call", async () => {
  const gw = await start();
  appendRule("remember sugar", "sugar");
  discord.sendDm(alice.id, "please remember sugar");
  const dm = discord.dmChannelId(alice.id);
  const prompt = await promptFor(dm, "sugar");
  const data = dataOf(prompt, "Approve");
  const altered = data.replace(/^ap:ap_[0-9a-f]{12}/, "ap:ap_000000000000");
  const forged = `${data.slice(0, -4)}AAAA`;
  for (const customId of [altered, forged, "ap:nonsense"]) {
    const press = discord.pressButton(prompt.id, alice.id, customId, { forged: true });
    expect(await noticeFor(press)).toBe("This button is not valid.");
  }
  await eventually(
    () => gw.logs.filter((l) => l.includes("approval.forged_press")).length >= 3,
    TIMEOUT,
    "three approval.forged_press log lines",
  );
  expect(count("sugar")).toBe(0);
  expect(customIds(current(prompt.id)!)).toHaveLength(3);

  const deny = discord.pressButton(prompt.id, alice.id, dataOf(prompt, "Deny"));
  expect(await noticeFor(deny)).toBe("Denied. The call will not run.");
  await discord.waitFor(
    () => discord.visibleMessages(dm).find((m) => m.content.includes("alice denied this call")),
    TIMEOUT,
    "the answer telling of the denial",
  );
  await discord.waitFor(
    () =>
      current(prompt.id)?.content.includes("Denied by alice") && customIds(current(prompt.id)!).length === 0,
    TIMEOUT,
    "the prompt to show the denial without buttons",
  );
  expect(count("sugar")).toBe(0);
}, 60_000);

test("in a guild channel, another user's press is refused; the asker's press decides", async () => {
  await start();
  appendRule("remember milk", "milk");
  discord.sendChannelMessage(discord.generalChannelId, alice.id, "please remember milk", {
    mentionBot: true,
  });
  const prompt = await promptFor(discord.generalChannelId, "milk");
  const approve = dataOf(prompt, "Approve");
  const byBob = discord.pressButton(prompt.id, bob.id, approve);
  expect(await noticeFor(byBob)).toBe("Only alice or an approver can decide this.");
  expect(approvalStates(join(dir.path, "approvals-discord.sqlite"), "milk")).toEqual(["pending"]);
  expect(count("milk")).toBe(0);

  const byAlice = discord.pressButton(prompt.id, alice.id, approve);
  expect(await noticeFor(byAlice)).toBe("Approved.");
  await discord.waitFor(
    () =>
      discord.visibleMessages(discord.generalChannelId).find((m) => m.content.includes('appended "milk"')),
    TIMEOUT,
    "the answer in the channel",
  );
  expect(count("milk")).toBe(1);
}, 60_000);
