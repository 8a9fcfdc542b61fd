import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createSlackAdapter, type SlackAdapter } from "../../../channels/slack/adapter.ts";
import type { IngressOutcome } from "../../../channels/types.ts";
import { type SlackEmulator, startSlackEmulator } from "../../emulators/slack/index.ts";
import { recordingIngress, recordingLogger } from "./helpers.ts";

const user = "U0HUMAN002";
const admitted: IngressOutcome = { kind: "admitted", runId: "run_1", conversationId: "conv_1" };

let emulator: SlackEmulator;
let adapter: SlackAdapter;
let ingress: ReturnType<typeof recordingIngress>;
/** Number of upcoming ingress calls that reject. */
let rejectNext = 0;
let ingressDelayMs = 0;
const logger = recordingLogger();

beforeAll(async () => {
  emulator = startSlackEmulator({ redeliveryDelayMs: 300, maxRedeliveries: 3 });
  adapter = createSlackAdapter(
    { mode: "socket", botToken: emulator.botToken, appToken: emulator.appToken, apiUrl: emulator.apiUrl },
    { logger },
  );
  ingress = recordingIngress(async () => {
    if (ingressDelayMs > 0) await Bun.sleep(ingressDelayMs);
    if (rejectNext > 0) {
      rejectNext -= 1;
      throw new Error("store unavailable");
    }
    return admitted;
  });
  await adapter.start(ingress);
});

afterEach(() => {
  ingress.messages.length = 0;
  rejectNext = 0;
  ingressDelayMs = 0;
});

afterAll(async () => {
  await adapter.stop();
  await emulator.close();
});

describe("Slack adapter, Socket Mode (real Bolt SocketModeReceiver)", () => {
  test("start() opens one Socket Mode connection with the app token", () => {
    expect(adapter.isConnected()).toBe(true);
    expect(emulator.socketConnections()).toBe(1);
    const open = emulator.calls("apps.connections.open");
    expect(open).toHaveLength(1);
    expect(open[0]?.tokenKind).toBe("app");
  });

  test("an event reaches ingress, then the envelope is acked", async () => {
    const body = emulator.events.dm({ user, text: "over the socket" });
    const envelopeId = emulator.pushEvent(body);
    await emulator.waitFor(() => emulator.envelope(envelopeId)?.state === "acked", 2000, "the ack");
    expect(ingress.messages).toHaveLength(1);
    expect(ingress.messages[0]).toMatchObject({
      updateKey: body.event_id,
      text: "over the socket",
      surface: "dm",
    });
    expect(emulator.envelope(envelopeId)?.deliveries).toHaveLength(1);
  }, 5000);

  test("the ack waits for ingress to resolve", async () => {
    ingressDelayMs = 200;
    const envelopeId = emulator.pushEvent(emulator.events.dm({ user, text: "slow" }));
    await emulator.waitFor(() => ingress.messages.length === 1, 2000, "ingress call");
    expect(emulator.envelope(envelopeId)?.state).toBe("delivered");
    await emulator.waitFor(() => emulator.envelope(envelopeId)?.state === "acked", 2000, "the ack");
  }, 5000);

  test("ingress rejects → no ack → Slack redelivers (retry_attempt 1) → delivered and acked", async () => {
    rejectNext = 1;
    const body = emulator.events.dm({ user, text: "try again" });
    const envelopeId = emulator.pushEvent(body);
    await emulator.waitFor(
      () => emulator.envelope(envelopeId)?.state === "acked",
      3000,
      "the ack after redelivery",
    );
    const envelope = emulator.envelope(envelopeId);
    expect(envelope?.deliveries.map((delivery) => delivery.retryAttempt)).toEqual([0, 1]);
    expect(ingress.messages.map((message) => message.updateKey)).toEqual([body.event_id, body.event_id]);
    expect(logger.records.some((record) => record.event === "slack.event_not_acknowledged")).toBe(true);
  }, 5000);

  test("an envelope ingress keeps rejecting is never acked (Slack gives up, nothing is faked)", async () => {
    rejectNext = 10;
    const envelopeId = emulator.pushEvent(emulator.events.dm({ user, text: "doomed" }));
    await emulator.waitFor(() => emulator.envelope(envelopeId)?.state === "abandoned", 3000, "abandonment");
    expect(ingress.messages).toHaveLength(4);
  }, 5000);

  test("a mention pair over the socket reaches ingress once; both envelopes are acked", async () => {
    const pair = emulator.events.channelMention({ user, channel: "C0SOCKET01" });
    const ids = [emulator.pushEvent(pair.appMention), emulator.pushEvent(pair.message)];
    await emulator.waitFor(
      () => ids.every((id) => emulator.envelope(id)?.state === "acked"),
      2000,
      "both acks",
    );
    expect(ingress.messages.map((message) => message.updateKey)).toEqual([pair.appMention.event_id]);
  }, 5000);

  test("a duplicated envelope is passed on twice with the same updateKey (ingress dedupes)", async () => {
    const body = emulator.events.dm({ user, text: "dup" });
    const envelopeId = emulator.pushEvent(body);
    await emulator.waitFor(() => emulator.envelope(envelopeId)?.state === "acked", 2000, "first ack");
    emulator.duplicate(envelopeId);
    await emulator.waitFor(() => ingress.messages.length === 2, 2000, "second delivery");
    expect(new Set(ingress.messages.map((message) => message.updateKey))).toEqual(new Set([body.event_id]));
  }, 5000);

  test("after a server-requested reconnect, events still flow", async () => {
    emulator.requestReconnect();
    await emulator.waitFor(
      () => emulator.socketConnectionsEver() === 2 && emulator.socketConnections() === 1,
      8000,
      "reconnect",
    );
    await emulator.waitFor(() => adapter.isConnected(), 2000, "adapter connected");
    const envelopeId = emulator.pushEvent(emulator.events.dm({ user, text: "after reconnect" }));
    await emulator.waitFor(
      () => emulator.envelope(envelopeId)?.state === "acked",
      2000,
      "ack after reconnect",
    );
    expect(ingress.messages.map((message) => message.text)).toEqual(["after reconnect"]);
  }, 10_000);

  // Keep last: stops the adapter.
  test("stop() waits for in-flight ingress, acks it, then disconnects", async () => {
    ingressDelayMs = 300;
    const envelopeId = emulator.pushEvent(emulator.events.dm({ user, text: "in flight" }));
    await emulator.waitFor(() => ingress.messages.length === 1, 2000, "ingress call");
    await adapter.stop();
    expect(adapter.isConnected()).toBe(false);
    await emulator.waitFor(() => emulator.socketConnections() === 0, 2000, "socket closed");
    expect(emulator.envelope(envelopeId)?.state).toBe("acked");
  }, 5000);
});
