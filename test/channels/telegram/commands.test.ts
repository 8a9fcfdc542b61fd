/**
 * The command menu on Telegram: setMyCommands per scope and language at start, against the
 * emulator (which validates like the Bot API), skipped when the stored hash is unchanged, with a
 * warning naming what did not fit, and a start that goes on when Telegram refuses the menu.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { CommandMenu, CommandSpec } from "../../../channels/commands.ts";
import { TelegramAdapter } from "../../../channels/telegram/adapter.ts";
import { telegramMenu } from "../../../channels/telegram/commands.ts";
import { commandMenu, MENU_COMMANDS } from "../../../src/gateway/command-list.ts";
import { startTelegramEmulator, type TelegramEmulator } from "../../emulators/telegram/index.ts";
import { FakeClock } from "../../support/fake-clock.ts";
import { memoryStateStore } from "../matrix/helpers.ts";
import { eventLog, recordingIngress } from "./helpers.ts";

let emulator: TelegramEmulator;
const adapters: TelegramAdapter[] = [];

beforeEach(() => {
  emulator = startTelegramEmulator();
});

afterEach(async () => {
  for (const adapter of adapters.splice(0)) await adapter.stop();
  await emulator.close();
});

function adapterWith(menu: CommandMenu, state: ReturnType<typeof memoryStateStore>) {
  const log = eventLog();
  const adapter = new TelegramAdapter(
    {
      mode: "polling",
      token: emulator.token,
      apiRoot: emulator.url,
      pollTimeoutSeconds: 1,
      requestTimeoutMs: 2_000,
    },
    {
      clock: new FakeClock(Date.now(), { instantSleeps: true }),
      onEvent: log.onEvent,
      commands: menu,
      state,
    },
  );
  adapters.push(adapter);
  return { adapter, events: log.events };
}

/** The menu is set in the background after start: waits for its outcome event. */
async function menuSettled(events: Array<{ kind: string }>): Promise<void> {
  const outcomes = ["commands_registered", "commands_unchanged", "commands_failed"];
  const deadline = Date.now() + 5_000;
  while (!events.some((e) => outcomes.includes(e.kind))) {
    if (Date.now() > deadline) throw new Error("the command menu was neither set, left nor refused in 5 s");
    await Bun.sleep(5);
  }
}

const menu = commandMenu(() => ["fast", "smart"]);
const names = (list: Array<{ command: string }> | undefined) => list?.map((c) => c.command);

describe("Telegram command menu", () => {
  test("is set per scope and language at start, and not again after a restart with the same list", async () => {
    const state = memoryStateStore();
    const first = adapterWith(menu, state);
    await first.adapter.start(recordingIngress());
    await menuSettled(first.events);

    const everywhere = MENU_COMMANDS.map((c) => c.name);
    expect(names(emulator.menus.get("all_private_chats"))).toEqual(everywhere);
    expect(names(emulator.menus.get("all_group_chats"))).toEqual(everywhere);
    expect(emulator.menus.get("all_private_chats")).toContainEqual({
      command: "model",
      description: "List the models or pick one for this conversation",
    });
    expect(emulator.menus.get("all_private_chats", "de")).toContainEqual({
      command: "model",
      description: "Modelle zeigen oder eines für dieses Gespräch wählen",
    });
    // /start is Telegram's own button, not a menu entry.
    expect(everywhere).not.toContain("start");
    expect(emulator.callsOf("setMyCommands")).toHaveLength(4);
    expect(first.events).toContainEqual({ kind: "commands_registered", calls: 4 });
    expect(state.values.get(`telegram:${emulator.bot.id}:commands`)).toBeDefined();
    await first.adapter.stop();

    const again = adapterWith(menu, state);
    await again.adapter.start(recordingIngress());
    await menuSettled(again.events);
    expect(emulator.callsOf("setMyCommands")).toHaveLength(4);
    expect(again.events).toContainEqual({ kind: "commands_unchanged" });
    await again.adapter.stop();

    // A changed list (one command fewer, no translations) is set again; the German lists go.
    const shorter: CommandMenu = {
      commands: MENU_COMMANDS.filter((c) => c.name !== "export").map(({ descriptions: _d, ...c }) => c),
      choices: () => [],
    };
    const changed = adapterWith(shorter, state);
    await changed.adapter.start(recordingIngress());
    await menuSettled(changed.events);
    expect(emulator.callsOf("setMyCommands")).toHaveLength(6);
    expect(emulator.callsOf("deleteMyCommands")).toHaveLength(2);
    expect(names(emulator.menus.get("all_private_chats"))).not.toContain("export");
    expect(emulator.menus.get("all_private_chats", "de")).toBeUndefined();
  });

  test("over Telegram's limits: the menu keeps what fits and the warning names what was dropped", async () => {
    const many: CommandSpec[] = Array.from({ length: 103 }, (_, i) => ({
      name: `c${i}`,
      description: `command ${i}`,
      arguments: [],
      places: ["dm"],
    }));
    const commands: CommandSpec[] = [
      { name: "Bad-Name", description: "refused by Telegram", arguments: [], places: ["dm"] },
      { name: "wordy", description: "x".repeat(257), arguments: [], places: ["dm", "group"] },
      ...many,
    ];
    const { adapter, events } = adapterWith({ commands, choices: () => [] }, memoryStateStore());
    await adapter.start(recordingIngress());
    await menuSettled(events);

    expect(emulator.menus.get("all_private_chats")).toHaveLength(100);
    expect(names(emulator.menus.get("all_private_chats"))?.at(-1)).toBe("c99");
    expect(emulator.menus.get("all_group_chats")).toBeUndefined();
    const warning = events.find((e) => e.kind === "commands_dropped");
    expect(warning).toEqual({
      kind: "commands_dropped",
      dropped: [
        { name: "Bad-Name", reason: "its name is not 1–32 of a-z, 0-9 and _" },
        { name: "wordy", reason: "its description has 257 characters; Telegram takes 1–256" },
        { name: "c100", reason: "past Telegram's 100 commands per menu" },
        { name: "c101", reason: "past Telegram's 100 commands per menu" },
        { name: "c102", reason: "past Telegram's 100 commands per menu" },
      ],
      hint: "these commands still work typed, but are not in Telegram's menu",
    });
  });

  test("a translation out of bounds falls back to the default description", () => {
    const { calls } = telegramMenu([
      { name: "new", description: "Start over", descriptions: { de: "" }, arguments: [], places: ["group"] },
    ]);
    expect(calls).toEqual([
      {
        scope: "all_group_chats",
        languageCode: "",
        commands: [{ command: "new", description: "Start over" }],
      },
      {
        scope: "all_group_chats",
        languageCode: "de",
        commands: [{ command: "new", description: "Start over" }],
      },
    ]);
  });

  test("a refused menu is reported and the adapter starts anyway; the next start tries again", async () => {
    const state = memoryStateStore();
    emulator.injectFault("setMyCommands", { kind: "server_error", status: 500 });
    const { adapter, events } = adapterWith(menu, state);
    const ingress = recordingIngress();
    await adapter.start(ingress);
    expect(adapter.isConnected()).toBe(true);
    await menuSettled(events);
    expect(events.find((e) => e.kind === "commands_failed")).toMatchObject({ kind: "commands_failed" });
    expect(state.values.size).toBe(0);
    await adapter.stop();

    const retry = adapterWith(menu, state);
    await retry.adapter.start(ingress);
    await menuSettled(retry.events);
    expect(retry.events).toContainEqual({ kind: "commands_registered", calls: 4 });
  });

  test("a hanging setMyCommands does not delay the start: the menu is set in the background", async () => {
    emulator.injectFault("setMyCommands", { kind: "hang" });
    const { adapter, events } = adapterWith(menu, memoryStateStore());
    await adapter.start(recordingIngress());
    expect(adapter.isConnected()).toBe(true);
    expect(events.some((e) => e.kind.startsWith("commands_"))).toBe(false);
    emulator.releaseHung();
    await menuSettled(events);
  });
});
