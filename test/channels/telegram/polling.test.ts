import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { TelegramAdapter } from "../../../channels/telegram/adapter.ts";
import type { TelegramAdapterEvent } from "../../../channels/telegram/events.ts";
import { ingressRetryDelayMs } from "../../../channels/telegram/polling.ts";
import {
  groupChat,
  privateChat,
  startTelegramEmulator,
  supergroupChat,
  type TelegramEmulator,
  user,
} from "../../emulators/telegram/index.ts";
import { FakeClock } from "../../support/fake-clock.ts";
import { admitted, eventLog, recordingIngress, waitUntil } from "./helpers.ts";

const alice = user(1001, "Alice", { last_name: "Liddell", username: "alice" });
const bob = user(1002, "Bob");

let emulator: TelegramEmulator;
const adapters: TelegramAdapter[] = [];

beforeEach(() => {
  emulator = startTelegramEmulator();
});

afterEach(async () => {
  for (const adapter of adapters.splice(0)) await adapter.stop();
  await emulator.close();
});

/** Backoff sleeps end at once (and are recorded): the long polls against the emulator are real. */
function backoffClock(): FakeClock {
  return new FakeClock(Date.now(), { instantSleeps: true });
}

function pollingAdapter(
  options: { onEvent?: (event: TelegramAdapterEvent) => void; clock?: FakeClock } = {},
) {
  const adapter = new TelegramAdapter(
    {
      mode: "polling",
      token: emulator.token,
      apiRoot: emulator.url,
      pollTimeoutSeconds: 1,
      requestTimeoutMs: 2_000,
    },
    { clock: options.clock ?? backoffClock(), ...(options.onEvent ? { onEvent: options.onEvent } : {}) },
  );
  adapters.push(adapter);
  return adapter;
}

describe("Telegram adapter, long polling", () => {
  test("a private message reaches ingress normalised, and is confirmed after ingress resolves", async () => {
    const ingress = recordingIngress();
    const adapter = pollingAdapter();
    await adapter.start(ingress);
    expect(adapter.isConnected()).toBe(true);
    expect(adapter.account).toBe(String(emulator.bot.id));

    const queuedAtMs = performance.now();
    const { update, message } = emulator.incoming({
      chat: privateChat(alice),
      from: alice,
      text: "hello there",
    });
    await waitUntil(() => ingress.received.length === 1, 3_000, "ingress call");
    // Stamped when the long poll's answer arrived (the reply's `receive` stage starts there).
    expect(ingress.timings[0]?.arrivedAtMs).toBeGreaterThan(queuedAtMs);
    expect(ingress.timings[0]?.arrivedAtMs).toBeLessThanOrEqual(performance.now());
    expect(ingress.received[0]).toEqual({
      channel: "telegram",
      account: String(emulator.bot.id),
      updateKey: String(update.update_id),
      principal: { id: "1001", name: "Alice Liddell", isBot: false },
      conversationKey: `tg:${emulator.bot.id}:dm:1001`,
      replyTarget: "1001",
      surface: "dm",
      text: "hello there",
      messageId: String(message.message_id),
      addressedToBot: true,
      attachments: [],
      receivedAtMs: message.date * 1000,
      where: { chat: "1001" },
    });
    await emulator.waitForConfirmed(update.update_id, 3_000);
    // grammY asked with allowed_updates on its first poll: messages, their edits and presses.
    expect(emulator.callsOf("getUpdates")[0]?.params.allowed_updates).toEqual([
      "message",
      "edited_message",
      "callback_query",
    ]);
  }, 10_000);

  test("an update whose ingress failed is not confirmed, is delivered again, and then admitted", async () => {
    const { events, onEvent } = eventLog();
    const clock = backoffClock();
    const ingress = recordingIngress((message, attempt) => {
      if (message.text === "first" && attempt === 1) throw new Error("database is locked");
      return admitted();
    });
    const adapter = pollingAdapter({ onEvent, clock });
    await adapter.start(ingress);

    const group = groupChat(-4001, "Friends");
    const first = emulator.incoming({ chat: group, from: alice, text: "first" }).update;
    const second = emulator.incoming({ chat: group, from: bob, text: "second" }).update;

    await waitUntil(() => ingress.received.length >= 3, 3_000, "redelivery");
    await emulator.waitForConfirmed(second.update_id, 3_000);
    // first fails, is fetched again and admitted; second is held back until then, handed over once.
    expect(ingress.received.map((m) => m.text)).toEqual(["first", "first", "second"]);
    expect(emulator.confirmedUpdateIds()).toContain(first.update_id);
    expect(events).toContainEqual(
      expect.objectContaining({
        kind: "ingress_failed",
        updateId: first.update_id,
        retryInMs: ingressRetryDelayMs(1),
      }),
    );
    expect(clock.requestedSleepsMs).toContain(500);
  }, 10_000);

  test("a failing ingress is retried with growing delays and nothing after it is handed over", async () => {
    let failures = 3;
    const clock = backoffClock();
    const ingress = recordingIngress((message) => {
      if (message.text === "poison" && failures > 0) {
        failures -= 1;
        throw new Error("store unavailable");
      }
      return admitted();
    });
    const adapter = pollingAdapter({ clock });
    await adapter.start(ingress);
    const chat = privateChat(alice);
    const poison = emulator.incoming({ chat, from: alice, text: "poison" }).update;
    const after = emulator.incoming({ chat, from: alice, text: "after" }).update;
    await emulator.waitForConfirmed(after.update_id, 3_000);
    expect(ingress.received.map((m) => m.text)).toEqual(["poison", "poison", "poison", "poison", "after"]);
    expect(clock.requestedSleepsMs.slice(0, 3)).toEqual([500, 1_000, 2_000]);
    expect(emulator.confirmedUpdateIds()).toContain(poison.update_id);
    expect(ingressRetryDelayMs(20)).toBe(30_000);
  }, 10_000);

  test("stop() while ingress is in flight waits for it, and confirms only what ingress accepted", async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const ingress = recordingIngress(async () => {
      await gate;
      return admitted();
    });
    const adapter = pollingAdapter();
    await adapter.start(ingress);
    const { update } = emulator.incoming({ chat: privateChat(alice), from: alice, text: "slow" });
    await waitUntil(() => ingress.received.length === 1, 3_000, "ingress call");

    const stopping = adapter.stop();
    await Bun.sleep(50);
    // bot.stop() already sent its confirming getUpdates, capped below the update in flight.
    expect(emulator.pendingUpdateIds()).toContain(update.update_id);
    release();
    await stopping;
    expect(emulator.confirmedUpdateIds()).toContain(update.update_id);
    expect(adapter.isConnected()).toBe(false);
  }, 10_000);

  test("an adapter stopped while ingress fails leaves the update for the next start", async () => {
    const failing = recordingIngress(() => {
      throw new Error("disk full");
    });
    const first = pollingAdapter();
    await first.start(failing);
    const { update } = emulator.incoming({ chat: privateChat(bob), from: bob, text: "keep me" });
    await waitUntil(() => failing.received.length >= 1, 3_000, "first attempt");
    await first.stop();
    expect(emulator.pendingUpdateIds()).toContain(update.update_id);

    const healthy = recordingIngress();
    const second = pollingAdapter();
    await second.start(healthy);
    await waitUntil(() => healthy.received.length === 1, 3_000, "redelivery after restart");
    expect(healthy.received[0]?.updateKey).toBe(String(update.update_id));
    await emulator.waitForConfirmed(update.update_id, 3_000);
  }, 10_000);

  test("a replayed update reaches ingress again with the same updateKey (ingress dedupes)", async () => {
    const ingress = recordingIngress();
    const adapter = pollingAdapter();
    await adapter.start(ingress);
    const { update } = emulator.incoming({ chat: privateChat(alice), from: alice, text: "once" });
    await emulator.waitForConfirmed(update.update_id, 3_000);
    emulator.deliverAgain(update.update_id);
    await waitUntil(() => ingress.received.length === 2, 3_000, "replayed delivery");
    expect(ingress.received[1]?.updateKey).toBe(ingress.received[0]?.updateKey);
  }, 10_000);

  test("unknown update kinds and service messages are skipped, confirmed, and reported", async () => {
    const { events, onEvent } = eventLog();
    const ingress = recordingIngress();
    const adapter = pollingAdapter({ onEvent });
    await adapter.start(ingress);
    const group = supergroupChat(-1009001, "Ops");
    emulator.addChat(group);
    const joined = emulator.pushUpdate({
      message: { message_id: 7, date: 1_700_000_000, chat: group, from: alice, new_chat_members: [bob] },
    } as never);
    const text = emulator.incoming({ chat: group, from: alice, text: "after the join" }).update;
    await emulator.waitForConfirmed(text.update_id, 3_000);
    expect(ingress.received.map((m) => m.text)).toEqual(["after the join"]);
    expect(emulator.confirmedUpdateIds()).toContain(joined.update_id);
    expect(events).toContainEqual({
      kind: "update_skipped",
      updateId: joined.update_id,
      reason: "message without text or media (new_chat_members)",
    });
  }, 10_000);

  test("start() fails fast with unauthorized when the token is wrong", async () => {
    const adapter = new TelegramAdapter({
      mode: "polling",
      token: "987654321:AAWrongTokenWrongTokenWrong_xyz",
      apiRoot: emulator.url,
      requestTimeoutMs: 2_000,
    });
    const error = await adapter.start(recordingIngress()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "unauthorized", retryable: false });
    expect(String((error as Error).message)).not.toContain("AAWrongToken");
    expect(adapter.isConnected()).toBe(false);
  }, 10_000);

  test("a 409 from a second poller stops polling and is reported", async () => {
    const { events, onEvent } = eventLog();
    const adapter = pollingAdapter({ onEvent });
    await adapter.start(recordingIngress());
    await emulator.waitForCall("getUpdates", () => true, 2_000);
    emulator.injectFault("getUpdates", {
      kind: "api_error",
      status: 409,
      description:
        "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
    });
    const stopped = await waitUntil(
      () => events.find((event) => event.kind === "polling_stopped"),
      5_000,
      "polling_stopped event",
    );
    expect(stopped).toMatchObject({ error: { code: "platform_rejected" } });
    expect(adapter.isConnected()).toBe(false);
  }, 10_000);
});

describe("Telegram adapter, process killed mid-update", () => {
  test("a killed poller's unconfirmed update is delivered to the next process", async () => {
    const child = Bun.spawn([process.execPath, `${import.meta.dir}/fixtures/polling-child.ts`], {
      env: { ...process.env, TG_API_ROOT: emulator.url, TG_TOKEN: emulator.token },
      stdout: "pipe",
      stderr: "inherit",
    });
    try {
      const lines = readLines(child.stdout);
      expect(await lines.next()).toBe("started");
      const { update } = emulator.incoming({ chat: privateChat(alice), from: alice, text: "in flight" });
      expect(JSON.parse(await lines.next())).toEqual({
        updateKey: String(update.update_id),
        text: "in flight",
      });
      child.kill("SIGKILL");
      await child.exited;
      expect(emulator.pendingUpdateIds()).toEqual([update.update_id]);

      const ingress = recordingIngress();
      const adapter = pollingAdapter();
      await adapter.start(ingress);
      await emulator.waitForConfirmed(update.update_id, 3_000);
      expect(ingress.received.map((m) => m.updateKey)).toEqual([String(update.update_id)]);
    } finally {
      child.kill("SIGKILL");
    }
  }, 15_000);
});

function readLines(stream: ReadableStream<Uint8Array>): { next(): Promise<string> } {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  return {
    async next() {
      for (;;) {
        const newline = buffered.indexOf("\n");
        if (newline !== -1) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          return line;
        }
        const chunk = await reader.read();
        if (chunk.done) throw new Error(`child exited before writing a line (buffered: ${buffered})`);
        buffered += decoder.decode(chunk.value, { stream: true });
      }
    },
  };
}
