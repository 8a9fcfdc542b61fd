import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import {
  DEFAULT_BUSINESS,
  type GraphErrorBody,
  signWebhookBody,
  startWhatsAppEmulator,
  type WebhookBody,
  type WhatsAppEmulator,
} from "./index.ts";

const VERSION = "v23.0";
const USER = "15551234567";
const STATUS_ORDER = ["sent", "delivered", "read", "failed"];

/** The gateway's side, for these tests: records signed POSTs and answers what the test says. */
class Receiver {
  readonly posts: Array<{ rawBody: string; signature: string | null; body: WebhookBody }> = [];
  answers: number[] = [];
  private server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const url = new URL(request.url);
      if (request.method === "GET") {
        const ok =
          url.searchParams.get("hub.mode") === "subscribe" &&
          url.searchParams.get("hub.verify_token") === "verify-me";
        return ok ? new Response(url.searchParams.get("hub.challenge")) : new Response("no", { status: 403 });
      }
      const rawBody = await request.text();
      this.posts.push({
        rawBody,
        signature: request.headers.get("x-hub-signature-256"),
        body: JSON.parse(rawBody) as WebhookBody,
      });
      return new Response("", { status: this.answers.shift() ?? 200 });
    },
  });
  get url(): string {
    return `http://127.0.0.1:${this.server.port}/whatsapp/webhook`;
  }
  statuses() {
    return this.posts.flatMap((p) =>
      p.body.entry.flatMap((e) => e.changes.flatMap((c) => c.value.statuses ?? [])),
    );
  }
  messages() {
    return this.posts.flatMap((p) =>
      p.body.entry.flatMap((e) => e.changes.flatMap((c) => c.value.messages ?? [])),
    );
  }
  stop() {
    return this.server.stop(true);
  }
}

let wa: WhatsAppEmulator;
let receiver: Receiver;
let nowMs = Date.UTC(2026, 11, 5, 12, 0, 0);

beforeAll(() => {
  receiver = new Receiver();
  wa = startWhatsAppEmulator({
    now: () => nowMs,
    limits: { pairIntervalMs: null, throughputPerSecond: null },
    webhook: { url: receiver.url, redeliveryDelaysMs: [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY] },
  });
});

afterEach(async () => {
  await wa.waitFor(
    () => wa.deliveries().every((d) => d.state !== "pending") || undefined,
    2_000,
    "deliveries",
  );
  wa.reset();
  wa.statusPlan = { kind: "on" };
  wa.windowFailure = "status";
  wa.setLimits({ pairIntervalMs: null, throughputPerSecond: null });
  receiver.posts.length = 0;
  receiver.answers = [];
});

afterAll(async () => {
  await wa.close();
  await receiver.stop();
});

async function graph(
  path: string,
  init: { body?: unknown; token?: string; method?: string; form?: FormData } = {},
) {
  const response = await fetch(`${wa.url}/${VERSION}/${path}`, {
    method: init.method ?? (init.body !== undefined || init.form ? "POST" : "GET"),
    headers: {
      authorization: `Bearer ${init.token ?? wa.accessToken}`,
      ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(init.form ? { body: init.form } : init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

const send = (body: Record<string, unknown>) =>
  graph(`${DEFAULT_BUSINESS.phoneNumberId}/messages`, {
    body: { messaging_product: "whatsapp", to: USER, ...body },
  });
const sendText = (text: string, extra: Record<string, unknown> = {}) =>
  send({ type: "text", text: { body: text }, ...extra });
const errorOf = (body: Record<string, unknown>) => (body as unknown as GraphErrorBody).error;
const wamidOf = (body: Record<string, unknown>) => (body.messages as Array<{ id: string }>)[0]!.id;

function buttons(count: number, title = (i: number) => `Option ${i}`, id = (i: number) => `id-${i}`) {
  return {
    type: "interactive",
    interactive: {
      type: "button",
      body: { text: "Approve the call?" },
      action: {
        buttons: Array.from({ length: count }, (_, i) => ({
          type: "reply",
          reply: { id: id(i), title: title(i) },
        })),
      },
    },
  };
}

describe("sending", () => {
  test("a text inside the window is accepted, shown, and followed by signed sent/delivered statuses echoing the callback data", async () => {
    wa.incoming({ from: USER, name: "Alice", text: "hi" });
    const answer = await sendText("hello *there*", { biz_opaque_callback_data: "ob_42" });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      messaging_product: "whatsapp",
      contacts: [{ input: USER, wa_id: USER }],
    });
    const wamid = wamidOf(answer.body);
    expect(wamid).toStartWith("wamid.");
    expect(wa.messages(USER).map((m) => m.text)).toEqual(["hello *there*"]);

    await wa.waitFor(() => receiver.statuses().length >= 2 || undefined, 2_000, "two statuses");
    expect(
      // Each status is its own POST and Meta does not order them: compare as a set.
      receiver
        .statuses()
        .map((s) => [s.id, s.status, s.biz_opaque_callback_data, s.recipient_id])
        .sort((a, b) => STATUS_ORDER.indexOf(a[1]!) - STATUS_ORDER.indexOf(b[1]!)),
    ).toEqual([
      [wamid, "sent", "ob_42", USER],
      [wamid, "delivered", "ob_42", USER],
    ]);
    for (const post of receiver.posts) {
      expect(post.signature).toBe(
        `sha256=${createHmac("sha256", wa.appSecret).update(post.rawBody).digest("hex")}`,
      );
    }
  });

  test("a wrong token is 401 with code 190; another number's id is code 100 subcode 33", async () => {
    const wrong = await graph(`${DEFAULT_BUSINESS.phoneNumberId}/messages`, {
      body: { messaging_product: "whatsapp", to: USER, text: { body: "x" } },
      token: "EAAnope",
    });
    expect(wrong.status).toBe(401);
    expect(errorOf(wrong.body)).toMatchObject({ code: 190, type: "OAuthException" });
    expect(errorOf(wrong.body).fbtrace_id).toBeString();
    const other = await graph("999/messages", { body: { messaging_product: "whatsapp", to: USER } });
    expect(errorOf(other.body)).toMatchObject({ code: 100, error_subcode: 33 });
    expect(JSON.stringify(wa.calls)).not.toContain(wa.accessToken);
  });

  test("text over 4096 characters is refused with code 100", async () => {
    wa.openWindow(USER);
    const answer = await sendText("x".repeat(4097));
    expect(answer.status).toBe(400);
    expect(errorOf(answer.body).code).toBe(100);
    expect(wa.transcript(USER)).toEqual([]);
  });
});

describe("the 24-hour customer service window", () => {
  test("outside it a free-form send is accepted, then fails by status with 131047; nothing is shown", async () => {
    const answer = await sendText("are you there?", { biz_opaque_callback_data: "ob_7" });
    expect(answer.status).toBe(200);
    await wa.waitFor(() => receiver.statuses().length === 1 || undefined, 2_000, "a failed status");
    const [status] = receiver.statuses();
    expect(status).toMatchObject({ status: "failed", biz_opaque_callback_data: "ob_7" });
    expect(status!.errors?.[0]).toMatchObject({ code: 131047, title: "Re-engagement message" });
    expect(status!.errors?.[0]?.error_data.details).toContain("24 hours");
    expect(wa.messages(USER)).toEqual([]);
    expect(wa.limitStats().windowRejected[USER]).toBe(1);
  });

  test('with windowFailure "response" the send itself is refused with 131047', async () => {
    wa.windowFailure = "response";
    const answer = await sendText("are you there?");
    expect(answer.status).toBe(400);
    expect(errorOf(answer.body)).toMatchObject({
      code: 131047,
      message: "(#131047) Re-engagement message",
      error_data: { messaging_product: "whatsapp" },
    });
  });

  test("a user's message opens it for 24 hours; a template goes through outside it", async () => {
    wa.windowFailure = "response";
    wa.incoming({ from: USER, text: "hi" });
    expect((await sendText("inside")).status).toBe(200);
    nowMs += 24 * 3600_000 + 1;
    expect(errorOf((await sendText("outside")).body).code).toBe(131047);
    const template = await send({
      type: "template",
      template: {
        name: "reengage",
        language: { code: "en_US" },
        components: [{ type: "body", parameters: [{ type: "text", text: "Your report is ready" }] }],
      },
    });
    expect(template.status).toBe(200);
    expect((template.body.messages as Array<{ message_status: string }>)[0]!.message_status).toBe("accepted");
    expect(wa.messages(USER).at(-1)?.template).toEqual({
      name: "reengage",
      language: "en_US",
      parameters: ["Your report is ready"],
    });
  });

  test("templates are checked: unknown name 132001, wrong parameter count 132000", async () => {
    const unknown = await send({ type: "template", template: { name: "nope", language: { code: "en_US" } } });
    expect(errorOf(unknown.body).code).toBe(132001);
    const params = await send({
      type: "template",
      template: { name: "reengage", language: { code: "en_US" } },
    });
    expect(errorOf(params.body).code).toBe(132000);
  });
});

describe("interactive reply buttons", () => {
  test("at most 3 buttons, titles up to 20 characters, ids up to 256, unique", async () => {
    wa.openWindow(USER);
    for (const body of [
      buttons(4),
      buttons(0),
      buttons(1, () => "x".repeat(21)),
      buttons(1, undefined, () => "i".repeat(257)),
      buttons(2, () => "Same"),
    ]) {
      const answer = await send(body);
      expect(answer.status).toBe(400);
      expect(errorOf(answer.body).code).toBe(131009);
    }
    const ok = await send(
      buttons(
        3,
        (i) => `${"T".repeat(19)}${i}`,
        (i) => `${"i".repeat(255)}${i}`,
      ),
    );
    expect(ok.status).toBe(200);
  });

  test("a press comes back as a button_reply whose context names the message", async () => {
    wa.openWindow(USER);
    const sent = await send(
      buttons(
        2,
        (i) => (i === 0 ? "Approve" : "Deny"),
        (i) => `ap_1:${i}`,
      ),
    );
    const wamid = wamidOf(sent.body);
    const { delivery } = wa.press(USER, wamid, "Deny");
    await wa.waitForDelivery(delivery);
    const message = receiver.messages().find((m) => m.type === "interactive");
    expect(message).toMatchObject({
      from: USER,
      context: { id: wamid, from: DEFAULT_BUSINESS.displayPhoneNumber },
      interactive: { type: "button_reply", button_reply: { id: "ap_1:1", title: "Deny" } },
    });
  });
});

describe("rate limits", () => {
  test("the pair rate refuses a second message to one user within the interval (131056), not to another user", async () => {
    wa.setLimits({ pairIntervalMs: 6_000 });
    wa.openWindow(USER);
    wa.openWindow("15550000002");
    expect((await sendText("one")).status).toBe(200);
    const second = await sendText("two");
    expect(errorOf(second.body).code).toBe(131056);
    expect((await send({ to: "15550000002", type: "text", text: { body: "other user" } })).status).toBe(200);
    nowMs += 6_000;
    expect((await sendText("three")).status).toBe(200);
    expect(wa.messages(USER).map((m) => m.text)).toEqual(["one", "three"]);
    expect(wa.limitStats().pairRejected[USER]).toBe(1);
  });

  test("the throughput limit refuses sends over the per-second share (130429)", async () => {
    wa.setLimits({ throughputPerSecond: 2 });
    wa.openWindow(USER);
    expect((await sendText("1")).status).toBe(200);
    expect((await sendText("2")).status).toBe(200);
    expect(errorOf((await sendText("3")).body)).toMatchObject({
      code: 130429,
      message: "(#130429) Rate limit hit",
    });
    nowMs += 1_000;
    expect((await sendText("4")).status).toBe(200);
  });
});

describe("media", () => {
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

  test("upload → id → url → download with the token; sent by id", async () => {
    const form = new FormData();
    form.set("messaging_product", "whatsapp");
    form.set("type", "image/png");
    form.set("file", new File([png], "chart.png", { type: "image/png" }));
    const uploaded = await graph(`${DEFAULT_BUSINESS.phoneNumberId}/media`, { form });
    expect(uploaded.status).toBe(200);
    const id = uploaded.body.id as string;
    const info = await graph(id);
    expect(info.body).toMatchObject({
      messaging_product: "whatsapp",
      mime_type: "image/png",
      file_size: png.length,
      id,
    });
    const url = info.body.url as string;
    expect((await fetch(url)).status).toBe(401);
    const download = await fetch(url, { headers: { authorization: `Bearer ${wa.accessToken}` } });
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(png);

    wa.openWindow(USER);
    const sent = await send({ type: "image", image: { id, caption: "the chart" } });
    expect(sent.status).toBe(200);
    expect(wa.messages(USER)[0]).toMatchObject({
      type: "image",
      text: "the chart",
      media: { id, mimeType: "image/png" },
    });
    expect(errorOf((await send({ type: "image", image: { id: "42" } })).body).code).toBe(100);
    expect(errorOf((await graph("4242")).body)).toMatchObject({ code: 100, error_subcode: 33 });
  });

  test("an image over 5 MB is refused with 131053", async () => {
    const form = new FormData();
    form.set("messaging_product", "whatsapp");
    form.set("file", new File([new Uint8Array(5 * 1024 * 1024 + 1)], "big.jpg", { type: "image/jpeg" }));
    const answer = await graph(`${DEFAULT_BUSINESS.phoneNumberId}/media`, { form });
    expect(errorOf(answer.body).code).toBe(131053);
  });

  test("a user's photo and voice note arrive with media ids that download", async () => {
    const voice = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 9, 9]);
    wa.incoming({ from: USER, image: { bytes: png, mimeType: "image/jpeg" }, caption: "look" });
    const { delivery } = wa.incoming({
      from: USER,
      audio: { bytes: voice, mimeType: "audio/ogg; codecs=opus" },
      voice: true,
    });
    await wa.waitForDelivery(delivery);
    const [image, audio] = receiver.messages();
    expect(image).toMatchObject({ type: "image", image: { mime_type: "image/jpeg", caption: "look" } });
    expect(audio).toMatchObject({ type: "audio", audio: { voice: true } });
    const info = await graph((audio!.audio as { id: string }).id);
    const bytes = await fetch(info.body.url as string, {
      headers: { authorization: `Bearer ${wa.accessToken}` },
    });
    expect(new Uint8Array(await bytes.arrayBuffer())).toEqual(voice);
  });
});

describe("webhooks", () => {
  test("a non-200 answer is redelivered with the same signed body; redeliverNow skips the wait", async () => {
    receiver.answers = [500, 503];
    const { delivery } = wa.incoming({ from: USER, text: "again?" });
    await wa.waitFor(() => delivery.attempts.length === 1 && delivery.attempts[0]!.status !== null, 2_000);
    expect(delivery.state).toBe("pending");
    wa.redeliverNow();
    await wa.waitFor(() => delivery.attempts.length === 2 && delivery.attempts[1]!.status !== null, 2_000);
    wa.redeliverNow();
    await wa.waitForDelivery(delivery);
    expect(delivery.attempts.map((a) => a.status)).toEqual([500, 503, 200]);
    expect(delivery.state).toBe("delivered");
    expect(new Set(receiver.posts.map((p) => p.rawBody)).size).toBe(1);
    expect(receiver.posts[0]!.signature).toBe(signWebhookBody(wa.appSecret, receiver.posts[0]!.rawBody));
  });

  test("several messages and statuses in one POST", async () => {
    wa.openWindow(USER);
    const wamid = wamidOf((await sendText("earlier")).body);
    wa.statusPlan = { kind: "never" };
    await wa.waitFor(() => receiver.statuses().length === 2 || undefined, 2_000);
    receiver.posts.length = 0;
    const { delivery } = wa.incomingBatch(
      [
        { from: USER, name: "Alice", text: "one" },
        {
          from: "15550000002",
          name: "Bob",
          location: { latitude: 52.52, longitude: 13.405, name: "Office" },
        },
        { from: USER, reaction: { messageId: wamid, emoji: "👍" } },
      ],
      [wa.statusFor(wamid, "read")],
    );
    await wa.waitForDelivery(delivery);
    expect(receiver.posts).toHaveLength(1);
    const value = receiver.posts[0]!.body.entry[0]!.changes[0]!.value;
    expect(value.messages?.map((m) => m.type)).toEqual(["text", "location", "reaction"]);
    expect(value.contacts?.map((c) => c.profile.name).sort()).toEqual(["Alice", "Bob"]);
    expect(value.statuses?.map((s) => s.status)).toEqual(["read"]);
    expect(value.metadata.phone_number_id).toBe(DEFAULT_BUSINESS.phoneNumberId);
  });

  test("a forged delivery is signed with another secret and sent once", async () => {
    receiver.answers = [401];
    const delivery = wa.deliverRaw({ object: "whatsapp_business_account", entry: [] }, "forged");
    await wa.waitForDelivery(delivery);
    expect(delivery.state).toBe("gave_up");
    expect(delivery.attempts).toHaveLength(1);
    expect(receiver.posts[0]!.signature).not.toBe(signWebhookBody(wa.appSecret, receiver.posts[0]!.rawBody));
  });

  test("verifyWebhook performs Meta's GET handshake", async () => {
    expect(
      await wa.verifyWebhook(receiver.url, { verifyToken: "verify-me", challenge: "1158201444" }),
    ).toEqual({
      status: 200,
      body: "1158201444",
      challenge: "1158201444",
    });
    expect((await wa.verifyWebhook(receiver.url, { verifyToken: "wrong" })).status).toBe(403);
  });
});

describe("status plans", () => {
  test('"failed" reports the code; "held" waits for releaseStatuses; "never" sends none', async () => {
    wa.openWindow(USER);
    wa.statusPlan = { kind: "failed", code: 131026, title: "Message undeliverable" };
    await sendText("a", { biz_opaque_callback_data: "ob_a" });
    await wa.waitFor(() => receiver.statuses().length === 1 || undefined, 2_000);
    expect(receiver.statuses()[0]).toMatchObject({ status: "failed", biz_opaque_callback_data: "ob_a" });
    expect(receiver.statuses()[0]!.errors?.[0]?.code).toBe(131026);

    wa.statusPlan = { kind: "held" };
    const held = wamidOf((await sendText("b")).body);
    await Bun.sleep(30);
    expect(receiver.statuses()).toHaveLength(1);
    expect(wa.heldStatusCount()).toBe(2);
    wa.releaseStatuses();
    await wa.waitFor(() => receiver.statuses().length === 3 || undefined, 2_000);
    expect(
      receiver
        .statuses()
        .slice(1)
        .map((s) => [s.id, s.status])
        .sort((a, b) => STATUS_ORDER.indexOf(a[1]!) - STATUS_ORDER.indexOf(b[1]!)),
    ).toEqual([
      [held, "sent"],
      [held, "delivered"],
    ]);

    wa.statusPlan = { kind: "never" };
    await sendText("c");
    await Bun.sleep(30);
    expect(receiver.statuses()).toHaveLength(3);
  });

  test('"on" with delayMs reports late; with batch, sent and delivered share one POST', async () => {
    wa.openWindow(USER);
    wa.statusPlan = { kind: "on", upTo: "read", delayMs: 150, batch: true };
    const wamid = wamidOf((await sendText("x")).body);
    await Bun.sleep(40);
    expect(receiver.posts).toHaveLength(0);
    await wa.waitFor(() => receiver.posts.length === 1 || undefined, 2_000, "the batched statuses");
    expect(receiver.statuses().map((s) => [s.id, s.status])).toEqual([
      [wamid, "sent"],
      [wamid, "delivered"],
      [wamid, "read"],
    ]);
    expect(wa.message(wamid)?.status).toBe("read");
  });

  test("mark as read with the typing indicator", async () => {
    const { message } = wa.incoming({ from: USER, text: "hi" });
    const answer = await send({ status: "read", message_id: message.id, typing_indicator: { type: "text" } });
    expect(answer.body).toEqual({ success: true });
    expect(wa.message(message.id)?.status).toBe("read");
    expect(wa.chat(USER)?.typingAtMs).toHaveLength(1);
    expect(errorOf((await send({ status: "read", message_id: "wamid.unknown" })).body).code).toBe(100);
  });
});

describe("faults", () => {
  test("server errors, rate limits with Retry-After, resets and hangs", async () => {
    wa.openWindow(USER);
    wa.injectFault("messages", { kind: "server_error", status: 503, code: 2 });
    const unavailable = await sendText("x");
    expect(unavailable.status).toBe(503);
    expect(errorOf(unavailable.body).code).toBe(2);

    wa.injectFault("messages", { kind: "rate_limited", code: 80007, retryAfterSeconds: 3 });
    const limited = await sendText("x");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("3");
    expect(errorOf(limited.body).code).toBe(80007);

    wa.injectFault("messages", { kind: "reset_after_effect" });
    await expect(sendText("sent but unanswered")).rejects.toThrow();
    expect(wa.messages(USER).map((m) => m.text)).toEqual(["sent but unanswered"]);

    wa.injectFault("messages", { kind: "reset" });
    await expect(sendText("never sent")).rejects.toThrow();

    wa.injectFault("messages", { kind: "hang" });
    const hung = sendText("slow");
    await wa.waitFor(() => wa.hungCount() === 1 || undefined, 2_000);
    wa.releaseHung();
    expect((await hung).status).toBe(200);
    expect(wa.messages(USER).map((m) => m.text)).toEqual(["sent but unanswered", "slow"]);
    expect(wa.callsOf("messages").map((c) => c.fault ?? "none")).toEqual([
      "server_error",
      "rate_limited",
      "reset_after_effect",
      "reset",
      "hang",
    ]);
  });
});
