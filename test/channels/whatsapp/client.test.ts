import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { WhatsAppClient } from "../../../channels/whatsapp/client.ts";
import { isOutsideServiceWindow } from "../../../channels/whatsapp/errors.ts";
import { SwitchboardError } from "../../../src/errors.ts";
import { startWhatsAppEmulator, type WhatsAppEmulator } from "../../emulators/whatsapp/index.ts";

const USER = "15551234567";
let wa: WhatsAppEmulator;
let client: WhatsAppClient;
const nowMs = Date.UTC(2026, 11, 5, 9, 0, 0);

beforeAll(() => {
  wa = startWhatsAppEmulator({
    now: () => nowMs,
    statuses: { kind: "never" },
    limits: { pairIntervalMs: null, throughputPerSecond: null },
  });
  client = new WhatsAppClient({
    apiRoot: `${wa.url}/`,
    apiVersion: "v23.0",
    phoneNumberId: wa.business.phoneNumberId,
    accessToken: wa.accessToken,
    requestTimeoutMs: 300,
    pairIntervalMs: 6_000,
  });
});

afterEach(() => {
  wa.reset();
  wa.windowFailure = "status";
  wa.setLimits({ pairIntervalMs: null, throughputPerSecond: null });
});

afterAll(() => wa.close());

async function failure(promise: Promise<unknown>): Promise<SwitchboardError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SwitchboardError) return error;
    throw error;
  }
  throw new Error("expected the call to fail");
}

describe("sending", () => {
  test("text with a reply context and the outbox record id as callback data", async () => {
    const { message } = wa.incoming({ from: USER, text: "hi" });
    const wamid = await client.sendText(USER, "*Hello* there", { replyTo: message.id, callbackData: "ob_1" });
    expect(wa.message(wamid)).toMatchObject({
      direction: "out",
      text: "*Hello* there",
      replyTo: message.id,
      callbackData: "ob_1",
    });
    expect(wa.callsOf("messages")[0]!.path).toBe(`/v23.0/${wa.business.phoneNumberId}/messages`);
  });

  test("reply buttons within Meta's rules; broken rules are refused before any call", async () => {
    wa.openWindow(USER);
    const wamid = await client.sendButtons(USER, "Run `rm -rf build`?", [
      { id: "ap_1.approve", title: "Approve" },
      { id: "ap_1.deny", title: "Deny" },
      { id: "ap_1.always", title: "Always allow" },
    ]);
    expect(wa.message(wamid)?.buttons?.map((b) => b.title)).toEqual(["Approve", "Deny", "Always allow"]);
    const four = Array.from({ length: 4 }, (_, i) => ({ id: `b${i}`, title: `B${i}` }));
    for (const buttons of [
      four,
      [],
      [{ id: "x", title: "A title that is too long" }],
      [{ id: "i".repeat(257), title: "Ok" }],
      [
        { id: "same", title: "One" },
        { id: "same", title: "Two" },
      ],
    ]) {
      expect((await failure(client.sendButtons(USER, "?", buttons))).code).toBe("input_invalid");
    }
    expect(wa.callsOf("messages")).toHaveLength(1);
  });

  test("a file: uploaded, then sent by id with its caption and name", async () => {
    wa.openWindow(USER);
    const pdf = new TextEncoder().encode("%PDF-1.7\n%âãÏÓ\n1 0 obj\n");
    const mediaId = await client.uploadMedia(pdf, "application/pdf", "report.pdf");
    const wamid = await client.sendMedia(
      USER,
      "document",
      { id: mediaId },
      { caption: "The report", filename: "report.pdf" },
    );
    expect(wa.message(wamid)).toMatchObject({
      type: "document",
      text: "The report",
      media: { id: mediaId, mimeType: "application/pdf", filename: "report.pdf" },
    });
    expect(wa.media.get(mediaId)?.bytes).toEqual(pdf);
    expect((await failure(client.sendMedia(USER, "audio", { id: mediaId }, { caption: "no" }))).code).toBe(
      "input_invalid",
    );
  });

  test("a template outside the window", async () => {
    const wamid = await client.sendTemplate(USER, {
      name: "reengage",
      language: "en_US",
      bodyParameters: ["Your weekly report is ready"],
    });
    expect(wa.message(wamid)?.template).toEqual({
      name: "reengage",
      language: "en_US",
      parameters: ["Your weekly report is ready"],
    });
  });

  test("mark read with the typing indicator", async () => {
    const { message } = wa.incoming({ from: USER, text: "hi" });
    await client.markRead(message.id, { typing: true });
    expect(wa.message(message.id)?.status).toBe("read");
    expect(wa.chat(USER)?.typingAtMs).toHaveLength(1);
    await client.markRead(message.id, { typing: false });
    expect(wa.chat(USER)?.typingAtMs).toHaveLength(1);
  });
});

describe("media in", () => {
  test("a user's voice note streams through its media id with the token", async () => {
    const voice = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 0, 2, 4, 8, 16]);
    const { message } = wa.incoming({
      from: USER,
      audio: { bytes: voice, mimeType: "audio/ogg" },
      voice: true,
    });
    const mediaId = (message.audio as { id: string }).id;
    const info = await client.mediaInfo(mediaId);
    expect(info).toMatchObject({ mimeType: "audio/ogg", sizeBytes: voice.length });
    const file = await client.openMedia(mediaId, new AbortController().signal);
    const chunks: Uint8Array[] = [];
    for await (const chunk of file.body) chunks.push(chunk);
    expect(Buffer.concat(chunks)).toEqual(Buffer.from(voice));
    expect(file.sizeBytes).toBe(voice.length);
  });

  test("an unknown media id is refused, an outage of the download is retryable", async () => {
    expect(await failure(client.openMedia("123", new AbortController().signal))).toMatchObject({
      code: "platform_rejected",
      retryable: false,
    });
    const stored = wa.addMedia(new Uint8Array([1, 2, 3]), "image/jpeg", { status: 503, times: 1 });
    expect(await failure(client.openMedia(stored.id, new AbortController().signal))).toMatchObject({
      code: "platform_unavailable",
      retryable: true,
    });
    expect((await failure(client.openMedia("../etc", new AbortController().signal))).code).toBe(
      "platform_rejected",
    );
  });
});

describe("errors become the channel error kinds", () => {
  test("131047 outside the window is rejected, never retryable, and names the fix", async () => {
    wa.windowFailure = "response";
    const error = await failure(client.sendText(USER, "late"));
    expect(error).toMatchObject({ code: "platform_rejected", retryable: false });
    expect(error.details).toMatchObject({ whatsappCode: 131047, outsideServiceWindow: true });
    expect(error.message).toContain("whatsapp.reengageTemplate");
    expect(isOutsideServiceWindow(error)).toBe(true);
  });

  test("131056 holds back that user's chat for the pair interval only", async () => {
    wa.setLimits({ pairIntervalMs: 6_000 });
    wa.openWindow(USER);
    await client.sendText(USER, "one");
    const error = await failure(client.sendText(USER, "two"));
    expect(error).toMatchObject({ code: "platform_rate_limited", retryable: true, retryAfterMs: 6_000 });
    expect(error.details).toMatchObject({ whatsappCode: 131056, scope: "recipient" });
    expect(error.details?.global).toBeUndefined();
  });

  test("130429 and a 429 hold back the whole number, for Retry-After when given", async () => {
    wa.setLimits({ throughputPerSecond: 1 });
    wa.openWindow(USER);
    await client.sendText(USER, "one");
    const throughput = await failure(client.sendText(USER, "two"));
    expect(throughput).toMatchObject({ code: "platform_rate_limited", retryAfterMs: 1_000 });
    expect(throughput.details).toMatchObject({ whatsappCode: 130429, global: true });

    wa.setLimits({ throughputPerSecond: null });
    wa.injectFault("messages", { kind: "rate_limited", code: 80007, retryAfterSeconds: 4 });
    const limited = await failure(client.sendText(USER, "three"));
    expect(limited).toMatchObject({ code: "platform_rate_limited", retryAfterMs: 4_000 });
    expect(limited.details?.global).toBe(true);
  });

  test("5xx and Meta's transient codes are retryable outages", async () => {
    wa.openWindow(USER);
    wa.injectFault("messages", { kind: "server_error", status: 500 });
    expect(await failure(client.sendText(USER, "x"))).toMatchObject({
      code: "platform_unavailable",
      retryable: true,
    });
    wa.injectFault("messages", {
      kind: "graph_error",
      status: 400,
      code: 131000,
      title: "Something went wrong",
    });
    expect(await failure(client.sendText(USER, "x"))).toMatchObject({
      code: "platform_unavailable",
      retryable: true,
    });
  });

  test("other 4xx are permanent; a bad token is unauthorized without the token in the message", async () => {
    wa.openWindow(USER);
    wa.injectFault("messages", {
      kind: "graph_error",
      status: 400,
      code: 131026,
      title: "Message undeliverable",
      details: "The recipient is not a WhatsApp user.",
    });
    const undeliverable = await failure(client.sendText(USER, "x"));
    expect(undeliverable).toMatchObject({ code: "platform_rejected", retryable: false });
    expect(undeliverable.message).toContain("The recipient is not a WhatsApp user.");
    expect(undeliverable.details?.fbtraceId).toBeString();

    const stranger = new WhatsAppClient({
      apiRoot: wa.url,
      phoneNumberId: wa.business.phoneNumberId,
      accessToken: "EAAexpiredToken123",
    });
    const unauthorized = await failure(stranger.sendText(USER, "x"));
    expect(unauthorized.code).toBe("unauthorized");
    expect(unauthorized.message).toContain("WHATSAPP_ACCESS_TOKEN");
    expect(unauthorized.message).not.toContain("EAAexpiredToken123");
  });

  test("a broken connection or our deadline is a timeout (maybe sent); a refused connection is an outage", async () => {
    wa.openWindow(USER);
    wa.injectFault("messages", { kind: "reset_after_effect" });
    expect(await failure(client.sendText(USER, "maybe"))).toMatchObject({
      code: "platform_timeout",
      retryable: true,
    });
    expect(wa.messages(USER).map((m) => m.text)).toEqual(["maybe"]);

    wa.injectFault("messages", { kind: "hang" });
    const timedOut = await failure(client.sendText(USER, "slow"));
    expect(timedOut).toMatchObject({ code: "platform_timeout", details: { timeoutMs: 300 } });
    wa.releaseHung();

    const offline = new WhatsAppClient({
      apiRoot: "http://127.0.0.1:1",
      phoneNumberId: "1",
      accessToken: "t",
    });
    expect(await failure(offline.sendText(USER, "x"))).toMatchObject({
      code: "platform_unavailable",
      retryable: true,
    });
  });
});
