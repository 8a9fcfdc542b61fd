/**
 * What the WhatsApp adapter does beyond the shared contract: the webhook route's refusals, items of
 * one POST handled one by one, statuses reported to the gateway, quoted replies, read marks with
 * typing, and how buttons and files are shaped for the Cloud API.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { DeliveryStatusReport, InboundMessage } from "../../../channels/types.ts";
import { createWhatsAppAdapter, type WhatsAppAdapter } from "../../../channels/whatsapp/adapter.ts";
import type { WhatsAppConfigInput } from "../../../channels/whatsapp/config.ts";
import {
  startWhatsAppEmulator,
  statusError,
  type WhatsAppEmulator,
  type WhatsAppEmulatorOptions,
} from "../../emulators/whatsapp/index.ts";
import { recordingIngress, recordingLogger, serveRoutes } from "../slack/helpers.ts";

const USER = "15551234567";
const VERIFY_TOKEN = "adapter-test-verify-token";

interface Setup {
  emulator: WhatsAppEmulator;
  adapter: WhatsAppAdapter;
  ingress: ReturnType<typeof recordingIngress>;
  statuses: DeliveryStatusReport[];
  logger: ReturnType<typeof recordingLogger>;
  url: string;
}

let cleanup: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of cleanup.reverse()) await close();
  cleanup = [];
});

async function setUp(
  options: {
    decide?: Parameters<typeof recordingIngress>[0];
    reportStatus?: (report: DeliveryStatusReport) => Promise<void>;
    config?: Partial<WhatsAppConfigInput>;
    emulator?: WhatsAppEmulatorOptions;
  } = {},
): Promise<Setup> {
  const emulator = startWhatsAppEmulator({
    limits: { pairIntervalMs: null },
    statuses: { kind: "never" },
    ...options.emulator,
  });
  const logger = recordingLogger();
  const adapter = createWhatsAppAdapter(
    {
      accessToken: emulator.accessToken,
      phoneNumberId: emulator.business.phoneNumberId,
      appSecret: emulator.appSecret,
      verifyToken: VERIFY_TOKEN,
      apiRoot: emulator.url,
      requestTimeoutMs: 500,
      ...options.config,
    },
    { logger },
  );
  const server = serveRoutes(adapter.routes());
  const url = `${server.url}/whatsapp/webhook`;
  emulator.setWebhookUrl(url);
  emulator.openWindow(USER);
  const ingress = recordingIngress(options.decide);
  const statuses: DeliveryStatusReport[] = [];
  await adapter.start(ingress, {
    deliveryStatus:
      options.reportStatus ??
      (async (report) => {
        statuses.push(report);
      }),
  });
  cleanup.push(async () => {
    await adapter.stop();
    await emulator.close();
    await server.stop();
  });
  return { emulator, adapter, ingress, statuses, logger, url };
}

async function until<T>(probe: () => T | undefined | false, what: string): Promise<T> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

describe("the webhook route", () => {
  test("answers Meta's GET handshake with the challenge only for the verify token", async () => {
    const { emulator, url } = await setUp();
    const ok = await emulator.verifyWebhook(url, { verifyToken: VERIFY_TOKEN, challenge: "1158201444" });
    expect(ok).toMatchObject({ status: 200, body: "1158201444" });
    const refused = await emulator.verifyWebhook(url, { verifyToken: "not-the-token" });
    expect(refused.status).toBe(403);
    expect(refused.body).not.toContain(refused.challenge);
  });

  test("a forged or unsigned POST is refused with 401 before anything reaches ingress", async () => {
    const { emulator, ingress, logger } = await setUp();
    const body = { object: "whatsapp_business_account", entry: [] };
    for (const signature of ["forged", "missing"] as const) {
      const delivery = await emulator.waitForDelivery(emulator.deliverRaw(body, signature));
      expect(delivery.attempts.map((a) => a.status)).toEqual([401]);
    }
    expect(ingress.messages).toEqual([]);
    expect(logger.records.filter((r) => r.event === "whatsapp.webhook_refused").map((r) => r.status)).toEqual(
      [401, 401],
    );
  });

  test("a signed body that is not a WhatsApp webhook gets 400 and a log line naming the problem", async () => {
    const { emulator, ingress, logger } = await setUp();
    const delivery = await emulator.waitForDelivery(emulator.deliverRaw({ hello: "world" }));
    expect(delivery.attempts[0]?.status).toBe(400);
    expect(ingress.messages).toEqual([]);
    const line = logger.records.find((r) => r.event === "whatsapp.webhook_refused");
    expect(line).toMatchObject({ status: 400 });
    expect(String(line?.reason)).toContain("not a WhatsApp webhook body");
  });

  test("a failing ingress is answered 500; Meta's redelivery is admitted and answered 200", async () => {
    const { emulator, ingress } = await setUp({
      decide: (_message, call) => {
        if (call === 1) throw new Error("database is locked");
        return { kind: "admitted", runId: "run_1", conversationId: "conv_1" };
      },
    });
    const { delivery } = emulator.incoming({ from: USER, text: "hello" });
    await until(() => delivery.state === "delivered" && delivery, "the redelivery");
    expect(delivery.attempts.map((a) => a.status)).toEqual([500, 200]);
    expect(ingress.messages.map((m) => m.updateKey)).toEqual([
      ingress.messages[0]!.updateKey,
      ingress.messages[0]!.updateKey,
    ]);
  });

  test("several messages and statuses in one POST: each is handled, and one failure refuses only the body", async () => {
    let failed = false;
    const { emulator, ingress } = await setUp({
      decide: (message) => {
        if (message.text === "second" && !failed) {
          failed = true;
          throw new Error("database is locked");
        }
        return { kind: "admitted", runId: `run_${message.text}`, conversationId: "conv_1" };
      },
    });
    const { delivery } = emulator.incomingBatch([
      { from: USER, text: "first" },
      { from: USER, text: "second" },
      { from: USER, text: "third" },
    ]);
    await until(() => delivery.state === "delivered" && delivery, "the batch delivered");
    expect(delivery.attempts.map((a) => a.status)).toEqual([500, 200]);
    // The third was admitted although the second failed; the redelivery finds all three again.
    expect(ingress.messages.map((m) => m.text)).toEqual([
      "first",
      "second",
      "third",
      "first",
      "second",
      "third",
    ]);
  });
});

describe("statuses", () => {
  test("sent, delivered and read settle the send they name; failed carries Meta's code and title", async () => {
    const { emulator, adapter, statuses } = await setUp();
    const receipt = await adapter.send(USER, { text: "hi", format: "rich", idempotencyKey: "run_a:0#0" });
    const wamid = receipt.messageIds[0]!;
    expect(emulator.message(wamid)?.callbackData).toBe("run_a:0#0");
    await emulator.waitForDelivery(emulator.sendStatus(wamid, "delivered"));
    await emulator.waitForDelivery(
      emulator.sendStatus(
        wamid,
        "failed",
        statusError({ code: 131047, title: "Re-engagement message" }, "more than 24 hours have passed"),
      ),
    );
    expect(statuses).toEqual([
      { idempotencyKey: "run_a:0#0", messageId: wamid, outcome: "delivered", status: "delivered" },
      {
        idempotencyKey: "run_a:0#0",
        messageId: wamid,
        outcome: "failed",
        status: "failed",
        reason: expect.stringContaining("WhatsApp 131047: Re-engagement message"),
      },
    ]);
    expect(statuses[1]?.reason).toContain("whatsapp.reengageTemplate");
  });

  test("a status the gateway cannot record is answered 500, so Meta delivers it again", async () => {
    let calls = 0;
    const { emulator, adapter } = await setUp({
      reportStatus: async () => {
        calls += 1;
        if (calls === 1) throw new Error("database is locked");
      },
    });
    const receipt = await adapter.send(USER, { text: "hi", format: "rich", idempotencyKey: "run_b:0#0" });
    const delivery = emulator.sendStatus(receipt.messageIds[0]!, "sent");
    await until(() => delivery.state === "delivered" && delivery, "the status redelivered");
    expect(delivery.attempts.map((a) => a.status)).toEqual([500, 200]);
    expect(calls).toBe(2);
  });
});

describe("receiving", () => {
  test("an admitted message is marked read with the typing indicator; typing() shows it again", async () => {
    const { emulator, adapter } = await setUp();
    const { message, delivery } = emulator.incoming({ from: USER, text: "hello" });
    await emulator.waitForDelivery(delivery);
    await until(() => emulator.chat(USER)?.typingAtMs.length === 1, "the read mark with typing");
    expect(emulator.message(message.id)?.status).toBe("read");
    await adapter.typing(USER);
    expect(emulator.chat(USER)?.typingAtMs).toHaveLength(2);
  });

  test("typing() in a chat with no known message does nothing", async () => {
    const { emulator, adapter } = await setUp();
    await adapter.typing("15550000000");
    expect(emulator.callsOf("messages")).toEqual([]);
  });

  test("a reply quotes the message it answers when the adapter still knows its text", async () => {
    const { emulator, adapter, ingress } = await setUp();
    const receipt = await adapter.send(USER, {
      text: "Shall I book it?",
      format: "rich",
      idempotencyKey: "k#0",
    });
    const { delivery } = emulator.incoming({ from: USER, text: "yes", replyTo: receipt.messageIds[0]! });
    await emulator.waitForDelivery(delivery);
    const reply = ingress.messages[0] as InboundMessage;
    expect(reply).toMatchObject({ channel: "whatsapp", text: "> Shall I book it?\n\nyes" });
    expect(reply.replyTo).toBe(receipt.messageIds[0]!);
  });

  test("a reaction goes to ingress as a reaction, with the start of the text reacted to when known, and its log line", async () => {
    const { emulator, adapter, ingress, logger } = await setUp();
    const receipt = await adapter.send(USER, {
      text: "Shall I book it?",
      format: "rich",
      idempotencyKey: "k#0",
    });
    const { message } = emulator.incoming({
      from: USER,
      reaction: { messageId: receipt.messageIds[0]!, emoji: "👍" },
    });
    const { delivery } = emulator.incoming({
      from: USER,
      reaction: { messageId: "wamid.unknown", emoji: "" },
    });
    await emulator.waitForDelivery(delivery);
    expect(ingress.messages).toHaveLength(2);
    expect(ingress.messages[0]).toMatchObject({
      channel: "whatsapp",
      updateKey: `reaction:${message.id}`,
      principal: { id: USER, isBot: false },
      text: "",
      attachments: [],
      surface: "dm",
      reaction: { emoji: "👍", messageId: receipt.messageIds[0]!, excerpt: "Shall I book it?" },
    });
    expect(ingress.messages[1]!.reaction).toEqual({ emoji: null, messageId: "wamid.unknown" });
    expect(logger.records.find((r) => r.event === "whatsapp.reaction")).toMatchObject({
      updateKey: `reaction:${message.id}`,
      messageId: receipt.messageIds[0]!,
    });
  });
});

describe("sending", () => {
  test("button labels over 20 characters are cut; ids carry the data", async () => {
    const { emulator, adapter } = await setUp();
    const receipt = await adapter.send(USER, {
      text: "Run the tool?",
      format: "rich",
      idempotencyKey: "k#0",
      buttons: [
        [{ label: "Approve", data: "ap_1:approve" }],
        [{ label: "Always allow in this chat", data: "ap_1:always" }],
      ],
    });
    expect(emulator.message(receipt.messageIds[0]!)?.buttons).toEqual([
      { id: "ap_1:approve", title: "Approve" },
      { id: "ap_1:always", title: "Always allow in thi…" },
    ]);
  });

  test("more than 3 buttons is refused before anything is sent", async () => {
    const { emulator, adapter } = await setUp();
    const buttons = [["a", "b", "c", "d"].map((label) => ({ label, data: label }))];
    await expect(
      adapter.send(USER, { text: "Pick", format: "rich", idempotencyKey: "k#0", buttons }),
    ).rejects.toMatchObject({
      code: "input_invalid",
    });
    expect(emulator.callsOf("messages")).toEqual([]);
  });

  test("a prompt longer than an interactive body goes as text, then the buttons carry the record's key", async () => {
    const { emulator, adapter } = await setUp();
    const text = "x".repeat(1500);
    const receipt = await adapter.send(USER, {
      text,
      format: "rich",
      idempotencyKey: "run_c:0#0",
      buttons: [[{ label: "Approve", data: "ap_2:approve" }]],
    });
    expect(receipt.messageIds).toHaveLength(2);
    const [prompt, choice] = receipt.messageIds.map((id) => emulator.message(id));
    expect(prompt).toMatchObject({ type: "text", text });
    expect(prompt?.callbackData).toBeUndefined();
    expect(choice).toMatchObject({ type: "interactive", callbackData: "run_c:0#0" });
  });

  test("JPEG and PNG go as images, other files as documents with their name", async () => {
    const { emulator, adapter } = await setUp();
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const photo = await adapter.files.send(USER, {
      bytes: png,
      filename: "chart.png",
      mimeType: "image/png",
      caption: "the chart",
      format: "rich",
      idempotencyKey: "run_d:0#0",
    });
    const doc = await adapter.files.send(USER, {
      bytes: new TextEncoder().encode("a,b\n1,2\n"),
      filename: "data.csv",
      mimeType: "text/csv",
      caption: "",
      format: "rich",
      idempotencyKey: "run_e:0#0",
    });
    expect(emulator.message(photo.messageIds[0]!)).toMatchObject({ type: "image", text: "the chart" });
    expect(emulator.message(doc.messageIds[0]!)).toMatchObject({
      type: "document",
      media: { filename: "data.csv" },
      callbackData: "run_e:0#0",
    });
  });
});

describe("the 24-hour window", () => {
  const TEMPLATE = { name: "reengage", language: "en_US" };
  const LATE = "15559990000";

  test("a send refused with 131047 goes as the re-engagement template, carrying the text", async () => {
    const { emulator, adapter } = await setUp({
      config: { reengageTemplate: TEMPLATE },
      emulator: { windowFailure: "response" },
    });
    const receipt = await adapter.send(LATE, {
      text: "Your report is ready",
      format: "rich",
      idempotencyKey: "run_w:0#0",
    });
    expect(emulator.message(receipt.messageIds[0]!)).toMatchObject({
      type: "template",
      template: { name: "reengage", language: "en_US", parameters: ["Your report is ready"] },
      callbackData: "run_w:0#0",
    });
  });

  test("without a template the refusal is platform_rejected, not retryable, and says how to fix it", async () => {
    const { adapter } = await setUp({ emulator: { windowFailure: "response" } });
    const error = await adapter
      .send(LATE, { text: "Your report is ready", format: "rich", idempotencyKey: "run_w:0#0" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: "platform_rejected",
      retryable: false,
      details: { outsideServiceWindow: true },
    });
    expect(String((error as Error).message)).toContain("whatsapp.reengageTemplate");
  });

  test("accepted, then failed by status: the template goes once (a redelivered status sends nothing more)", async () => {
    const { emulator, adapter, statuses } = await setUp({ config: { reengageTemplate: TEMPLATE } });
    emulator.statusPlan = { kind: "on" };
    const receipt = await adapter.send(LATE, {
      text: "Weekly summary",
      format: "rich",
      idempotencyKey: "run_x:0#0",
    });
    await until(
      () => statuses.some((s) => s.status === "sent as the re-engagement template"),
      "the template",
    );
    const template = emulator.messages(LATE).find((m) => m.type === "template");
    expect(template?.template?.parameters).toEqual(["Weekly summary"]);
    expect(statuses.find((s) => s.status === "sent as the re-engagement template")).toEqual({
      idempotencyKey: "run_x:0#0",
      messageId: template!.wamid,
      outcome: "delivered",
      status: "sent as the re-engagement template",
    });
    const failed = emulator.deliveries().find((d) => JSON.stringify(d.body).includes(receipt.messageIds[0]!));
    await emulator.waitForDelivery(emulator.deliverRaw(failed!.body));
    expect(emulator.messages(LATE).filter((m) => m.type === "template")).toHaveLength(1);
  });

  test("accepted, then failed by status without a template: reported failed with the fix", async () => {
    const { emulator, adapter, statuses } = await setUp();
    emulator.statusPlan = { kind: "on" };
    await adapter.send(LATE, { text: "Weekly summary", format: "rich", idempotencyKey: "run_y:0#0" });
    const failed = await until(() => statuses.find((s) => s.outcome === "failed"), "the failed status");
    expect(failed.reason).toContain("131047");
    expect(failed.reason).toContain("whatsapp.reengageTemplate");
  });
});
