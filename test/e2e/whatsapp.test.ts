// Kept per platform: WhatsApp's signed webhooks, Meta's redeliveries and the status webhooks that settle sends.
/**
 * End to end: the WhatsApp adapter against the Cloud API emulator (the gateway's /whatsapp/webhook
 * is its subscribed URL), the model behind the fake OpenAI-compatible server, SQLite on a temp
 * file. The gateway is composed in this process (startInProcessGateway, its webhook route served
 * on a port of its own) except where a process is the point: a send cut short by SIGKILL.
 * The emulator's pair rate (one message every 6 s to a user) is on only where it is what a test
 * checks, and there shortened to a second on both sides.
 */
import { Database } from "bun:sqlite";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import sharp from "sharp";
import { systemClock } from "../../src/util/clock.ts";
import { startWhatsAppEmulator, type WhatsAppEmulator } from "../emulators/whatsapp/index.ts";
import { type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { appendRule, approvalStates, notesIn, writeApprovalConfig } from "./support/approval-scenario.ts";
import { runCliJson } from "./support/cli.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  eventually,
  freePort,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  startGatewayProcess,
} from "./support/gateway-process.ts";
import { oggOpus, userParts } from "./support/media.ts";
import { sampleIn } from "./support/metrics.ts";
import { outboxRecordOf, waitUntilSettled } from "./support/settled.ts";

const dir = tempDir("switchboard-e2e-whatsapp-");
const ALICE = "15551230001";
const BOB = "15551230002";
const CAROL = "15551230003";
const DAVE = "15551230004";
const ERIN = "15551230005";
const FRANK = "15551230006";
const GRACE = "15551230007";
const HEIDI = "15551230008";
const MIKE = "15551230013";
const VERIFY_TOKEN = "e2e-whatsapp-verify-token";
let llm: FakeLlmServer;
let wa: WhatsAppEmulator;

function env(
  port: number,
  dbFile = "gateway.sqlite",
  extra: Record<string, string> = {},
): Record<string, string> {
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    dbFile,
    surfaces: { "whatsapp:dm": { inputPolicy: "supersede", delivery: "terminal" } },
    extra: {
      SWITCHBOARD_HTTP_PORT: String(port),
      WHATSAPP_ACCESS_TOKEN: wa.accessToken,
      WHATSAPP_PHONE_NUMBER_ID: wa.business.phoneNumberId,
      WHATSAPP_APP_SECRET: wa.appSecret,
      WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN,
      WHATSAPP_API_ROOT: wa.url,
      WHATSAPP_ALLOWED_USERS: [ALICE, BOB, CAROL, DAVE, ERIN, FRANK, GRACE, HEIDI, MIKE].join(","),
      ...extra,
    },
  });
}

const botTexts = (waId: string) => wa.messages(waId).map((m) => m.text ?? "");

function waitForReply(waId: string, text: string, timeoutMs = 10_000) {
  return wa.waitFor(
    () => wa.messages(waId).find((m) => m.text?.includes(text)),
    timeoutMs,
    `a reply containing "${text}" to ${waId}`,
  );
}

const duplicates = async (gateway: InProcessGateway) =>
  sampleIn(await gateway.gateway.renderMetrics(), "switchboard_inbound_duplicates_total", {
    channel: "whatsapp",
  });

/** The gateway on `gatewayEnv`, in this process, subscribed to the emulator's webhooks. */
async function startInProcess(
  gatewayEnv: Record<string, string>,
  channels?: { whatsapp: Record<string, unknown> },
): Promise<InProcessGateway> {
  const gateway = await startInProcessGateway(gatewayEnv, {
    clock: systemClock,
    serveRoutes: true,
    ...(channels ? { channels } : {}),
  });
  wa.setWebhookUrl(`${gateway.url}/whatsapp/webhook`);
  return gateway;
}

beforeAll(() => {
  llm = startFakeLlmServer();
  wa = startWhatsAppEmulator({ limits: { pairIntervalMs: null } });
});
afterAll(async () => {
  await wa.close();
  await llm.stop();
  dir.cleanup();
});

describe("whatsapp end to end", () => {
  const port = freePort();
  let gateway: InProcessGateway;
  beforeAll(async () => {
    gateway = await startInProcess(env(port));
  }, GATEWAY_START_TIMEOUT_MS);
  afterAll(async () => {
    await gateway?.stop();
  }, GATEWAY_STOP_TIMEOUT_MS);

  test("Meta's handshake, then one message, one reply, marked read with typing", async () => {
    const handshake = await wa.verifyWebhook(`${gateway.url}/whatsapp/webhook`, {
      verifyToken: VERIFY_TOKEN,
    });
    expect(handshake.status).toBe(200);
    expect(handshake.body).toBe(handshake.challenge);

    const { message, delivery } = wa.incoming({ from: ALICE, name: "Alice", text: "hello there" });
    const reply = await waitForReply(ALICE, "echo: hello there");
    expect((await wa.waitForDelivery(delivery)).attempts.map((a) => a.status)).toEqual([200]);
    expect(reply.callbackData).toMatch(/#0$/);
    expect(wa.message(message.id)?.status).toBe("read");
    expect(wa.chat(ALICE)?.typingAtMs.length).toBeGreaterThanOrEqual(1);
    expect(llm.requestsContaining("hello there").length).toBe(1);
  }, 20_000);

  test("a webhook Meta delivers again is answered 200 once more and admitted once: one model call, one reply", async () => {
    const { delivery } = wa.incoming({ from: BOB, text: "dedupe me please" });
    await waitForReply(BOB, "echo: dedupe me please");
    const before = await duplicates(gateway);
    const again = await wa.waitForDelivery(wa.deliverRaw(delivery.body));
    expect(again.attempts.map((a) => a.status)).toEqual([200]);
    await eventually(
      async () => (await duplicates(gateway)) === before + 1,
      10_000,
      "the duplicate at ingress",
    );
    await waitUntilSettled(env(port).SWITCHBOARD_DB!);
    expect(llm.requestsContaining("dedupe me please").length).toBe(1);
    expect(botTexts(BOB).filter((t) => t.includes("dedupe me please")).length).toBe(1);
  }, 20_000);

  test("a webhook with a forged signature is refused with 401 and changes nothing", async () => {
    const { delivery } = wa.incoming({ from: CAROL, text: "first, genuine" });
    await waitForReply(CAROL, "echo: first, genuine");
    const forged = structuredClone(delivery.body);
    const item = forged.entry[0]!.changes[0]!.value.messages![0]!;
    item.id = `${item.id}forged`;
    (item as { text?: { body: string } }).text = { body: "forged instructions" };
    const refused = await wa.waitForDelivery(wa.deliverRaw(forged, "forged"));
    expect(refused.attempts.map((a) => a.status)).toEqual([401]);
    await waitUntilSettled(env(port).SWITCHBOARD_DB!);
    expect(llm.requestsContaining("forged instructions")).toEqual([]);
    expect(botTexts(CAROL)).toEqual(["echo: first, genuine"]);
    expect(gateway.logs.some((e) => e.event === "whatsapp.webhook_refused" && e.status === 401)).toBe(true);
  }, 20_000);

  test("a reaction to the bot's reply is noted for the next turn: no run, a redelivery changes nothing, a stranger's is not noted", async () => {
    const db = env(port).SWITCHBOARD_DB!;
    wa.incoming({ from: MIKE, text: "react to this" });
    const reply = await waitForReply(MIKE, "echo: react to this");
    await waitUntilSettled(db);
    const calls = llm.requests().length;
    const replies = botTexts(MIKE).length;
    const runs = count(db, "SELECT COUNT(*) AS n FROM runs");
    const { message, delivery } = wa.incoming({
      from: MIKE,
      name: "Mike",
      reaction: { messageId: reply.wamid, emoji: "👍" },
    });
    expect((await wa.waitForDelivery(delivery)).attempts.map((a) => a.status)).toEqual([200]);
    expect(gateway.logs.some((e) => e.event === "whatsapp.reaction" && e.messageId === reply.wamid)).toBe(
      true,
    );
    expect(
      gateway.logs.some((e) => e.event === "ingress.reaction_noted" && e.messageId === reply.wamid),
    ).toBe(true);
    const noted = reactionsSlots(db);
    expect(noted).toHaveLength(1);
    expect(noted[0]!.version).toBe(1);

    // Meta delivers the same reaction again: a duplicate, and the slot stays as it was.
    const before = await duplicates(gateway);
    const again = await wa.waitForDelivery(wa.deliverRaw(delivery.body));
    expect(again.attempts.map((a) => a.status)).toEqual([200]);
    expect(await duplicates(gateway)).toBe(before + 1);
    expect(reactionsSlots(db)).toEqual(noted);

    // A user off the allowlist reacts to the same message: answered 200, noted nowhere.
    const stranger = wa.incoming({ from: "15559990000", reaction: { messageId: reply.wamid, emoji: "😡" } });
    expect((await wa.waitForDelivery(stranger.delivery)).attempts.map((a) => a.status)).toEqual([200]);
    expect(reactionsSlots(db)).toEqual(noted);

    await waitUntilSettled(db);
    expect(llm.requests().length).toBe(calls);
    expect(botTexts(MIKE)).toHaveLength(replies);
    expect(count(db, "SELECT COUNT(*) AS n FROM runs")).toBe(runs);
    expect(wa.message(message.id)?.status).not.toBe("read");

    // The next message's model request carries the reaction in its system prompt.
    wa.incoming({ from: MIKE, text: "and now?" });
    await waitForReply(MIKE, "echo: and now?");
    const system = llm.requestsContaining("and now?")[0]!.messages.find((m) => m.role === "system");
    expect(String(system?.content)).toContain(
      "Recent reactions to your replies: 👍 from Mike on “echo: react to this”",
    );
    expect(String(system?.content)).not.toContain("😡");
  }, 20_000);
});

describe("whatsapp: a send cut short by SIGKILL", () => {
  /** A gateway that SIGKILLs itself right after WhatsApp accepted a send, before recording it. */
  async function crashAfterAccepted(dbFile: string, port: number, extra: Record<string, string> = {}) {
    const crashing = await startGatewayProcess(
      env(port, dbFile, { SWITCHBOARD_TEST_KILL_POINT: "outbox.platform-accepted", ...extra }),
    );
    wa.setWebhookUrl(`${crashing.url}/whatsapp/webhook`);
    return crashing;
  }

  test("is settled by WhatsApp's status webhook after the restart, with no operator", async () => {
    const port = freePort();
    const dbFile = "crash-status.sqlite";
    wa.statusPlan = { kind: "held" };
    const crashing = await crashAfterAccepted(dbFile, port);
    wa.incoming({ from: DAVE, text: "crash while sending" });
    await crashing.exited;
    expect(botTexts(DAVE)).toEqual(["echo: crash while sending"]);

    const restarted = await startGatewayProcess(env(port, dbFile));
    try {
      const db = env(port, dbFile).SWITCHBOARD_DB!;
      expect(outboxRecordOf(db, "echo: crash while sending").state).toBe("sending");
      wa.statusPlan = { kind: "on" };
      wa.releaseStatuses();
      await eventually(
        () => outboxRecordOf(db, "echo: crash while sending").state === "delivered",
        10_000,
        "the status webhook to settle the record",
      );
      const shown = await runCliJson<{ history: Array<{ action: string; note?: string }> }>(
        ["outbox", "show", outboxRecordOf(db, "echo: crash while sending").id],
        { SWITCHBOARD_DB: db },
      );
      expect(shown.history.map((h) => h.action)).toContain("resolved by platform status");
      await waitUntilSettled(db);
      expect(botTexts(DAVE)).toEqual(["echo: crash while sending"]);
      expect(llm.requestsContaining("crash while sending").length).toBe(1);
    } finally {
      await restarted.kill("SIGTERM");
    }
  }, 40_000);

  test("becomes ambiguous when no status comes within WHATSAPP_STATUS_WAIT_MS, and is not resent", async () => {
    const port = freePort();
    const dbFile = "crash-no-status.sqlite";
    const bound = { WHATSAPP_STATUS_WAIT_MS: "1000" };
    wa.statusPlan = { kind: "never" };
    const crashing = await crashAfterAccepted(dbFile, port, bound);
    wa.incoming({ from: ERIN, text: "nobody reports this one" });
    await crashing.exited;

    const restarted = await startGatewayProcess(env(port, dbFile, bound));
    try {
      const db = env(port, dbFile).SWITCHBOARD_DB!;
      await eventually(
        () => outboxRecordOf(db, "echo: nobody reports this one").state === "ambiguous",
        10_000,
        "the record to become ambiguous once the wait ended",
      );
      // The line is written after the commit the database already shows.
      await eventually(
        () => restarted.events().some((e) => e.event === "outbox.no_platform_status"),
        5_000,
        "the outbox.no_platform_status log line",
      );
      expect(botTexts(ERIN)).toEqual(["echo: nobody reports this one"]);
    } finally {
      wa.statusPlan = { kind: "on" };
      await restarted.kill("SIGTERM");
    }
  }, 40_000);
});

function count(dbPath: string, sql: string): number {
  const db = new Database(dbPath, { readonly: true });
  try {
    return (db.query(sql).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Every conversation's reactions slot: its version and value. */
function reactionsSlots(dbPath: string): Array<{ version: number; value: string }> {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.query("SELECT version, value FROM conversation_state WHERE slot = 'reactions'").all() as Array<{
      version: number;
      value: string;
    }>;
  } finally {
    db.close();
  }
}

/** The state and last error of the one outbox record whose Markdown contains `text`. */
function recordContaining(
  dbPath: string,
  text: string,
): { id: string; state: string; last_error: string | null } | null {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db
      .query(
        "SELECT id, state, last_error FROM outbox WHERE markdown LIKE ? ORDER BY created_at_ms DESC LIMIT 1",
      )
      .get(`%${text}%`) as { id: string; state: string; last_error: string | null } | null;
  } finally {
    db.close();
  }
}

describe("whatsapp: a schedule that fires after the 24-hour window closed", () => {
  // The confirmation of `/in` (sent at once) goes inside the window; then the emulator's window is
  // shortened to a millisecond, so that it is closed when the schedule fires two seconds later.
  // The pair rate is off: the template follows the refused message at once (with it, the template
  // waits for Meta's next redelivery of the status).
  const DAY_MS = 24 * 60 * 60 * 1000;
  afterEach(() => wa.setLimits({ serviceWindowMs: DAY_MS }));

  async function scheduleOutsideWindow(user: string, prompt: string, dbPath: string) {
    wa.incoming({ from: user, text: `/in 2s ${prompt}` });
    await waitForReply(user, "Scheduled sch_");
    wa.setLimits({ serviceWindowMs: 1 });
    expect(recordContaining(dbPath, prompt)).toBeNull();
    const settled = (record: ReturnType<typeof recordContaining>) =>
      record !== null && record.state !== "pending" && record.state !== "sending";
    await eventually(
      () => settled(recordContaining(dbPath, prompt)),
      15_000,
      `the scheduled answer about "${prompt}" to settle`,
    );
    return recordContaining(dbPath, prompt)!;
  }

  test("without a template: the record fails with WhatsApp's 131047 and the fix, and is not retried", async () => {
    const gatewayEnv = env(freePort(), "window.sqlite");
    const gateway = await startInProcess(gatewayEnv);
    try {
      const record = await scheduleOutsideWindow(FRANK, "water the plants", gatewayEnv.SWITCHBOARD_DB!);
      // Meta accepts the free-form message (delivered, on its answer), then fails it by status.
      await eventually(
        () => recordContaining(gatewayEnv.SWITCHBOARD_DB!, "water the plants")?.state === "failed",
        10_000,
        "the failed status to fail the record",
      );
      const failedRecord = recordContaining(gatewayEnv.SWITCHBOARD_DB!, "water the plants")!;
      expect(failedRecord.id).toBe(record.id);
      expect(failedRecord.last_error).toContain("131047");
      expect(failedRecord.last_error).toContain("whatsapp.reengageTemplate");
      const failed = await runCliJson<Array<{ id: string; lastError: string }>>(
        ["outbox", "list", "--state", "failed"],
        {
          SWITCHBOARD_DB: gatewayEnv.SWITCHBOARD_DB!,
        },
      );
      expect(failed.map((r) => r.id)).toContain(record.id);
      await waitUntilSettled(gatewayEnv.SWITCHBOARD_DB!);
      const tries = wa
        .transcript(FRANK)
        .filter((m) => m.direction === "out" && m.text?.includes("water the plants"));
      expect(tries).toHaveLength(1);
      expect(tries[0]?.failure?.code).toBe(131047);
      // Back inside the window, /status says which reply did not arrive and why.
      wa.setLimits({ serviceWindowMs: DAY_MS });
      wa.incoming({ from: FRANK, text: "/status" });
      const status = await waitForReply(FRANK, "Last reply not delivered");
      expect(status.text).toContain(`(${record.id})`);
      expect(status.text).toContain("131047");
    } finally {
      await gateway.stop();
    }
  }, 40_000);

  test("with whatsapp.reengageTemplate: the answer goes as the template, carrying its text", async () => {
    const gatewayEnv = env(freePort(), "window-template.sqlite");
    const configFile = gatewayEnv.SWITCHBOARD_CONFIG!;
    const config = JSON.parse(readFileSync(configFile, "utf8")) as Record<string, unknown>;
    const withTemplate = configFile.replace(/\.json$/, "-template.json");
    writeFileSync(
      withTemplate,
      JSON.stringify({ ...config, whatsapp: { reengageTemplate: { name: "reengage", language: "en_US" } } }),
    );
    const gateway = await startInProcess({ ...gatewayEnv, SWITCHBOARD_CONFIG: withTemplate });
    try {
      const record = await scheduleOutsideWindow(GRACE, "stretch your legs", gatewayEnv.SWITCHBOARD_DB!);
      // Meta accepts the free-form message and fails it a moment later by status (131047).
      const template = await wa.waitFor(
        () => wa.messages(GRACE).find((m) => m.type === "template"),
        10_000,
        "the re-engagement template",
      );
      await waitUntilSettled(gatewayEnv.SWITCHBOARD_DB!);
      expect(recordContaining(gatewayEnv.SWITCHBOARD_DB!, "stretch your legs")).toMatchObject({
        id: record.id,
        state: "delivered",
      });
      expect(template?.template).toMatchObject({ name: "reengage", language: "en_US" });
      expect(template?.template?.parameters[0]).toContain("stretch your legs");
      // Logged once Meta's answer reaches the adapter, which can be after its status webhook settled the record.
      await eventually(
        () => gateway.logs.some((e) => e.event === "whatsapp.reengaged"),
        5_000,
        "the whatsapp.reengaged log line",
      );
    } finally {
      await gateway.stop();
    }
  }, 40_000);
});

describe("whatsapp: the pair rate", () => {
  // A second instead of Meta's six, on both sides: the emulator refuses a second message within it,
  // and the adapter holds the chat back for as long (WhatsAppConfig.pairIntervalMs).
  const SHORT_PAIR_INTERVAL_MS = 1_000;
  beforeAll(() => wa.setLimits({ pairIntervalMs: SHORT_PAIR_INTERVAL_MS }));
  afterAll(() => wa.setLimits({ pairIntervalMs: null }));

  test("a long answer in several messages to one user: each one Meta refuses (131056) waits, nothing is lost", async () => {
    const gatewayEnv = env(freePort(), "pair-rate.sqlite");
    const paragraphs = Array.from(
      { length: 3 },
      (_, i) => `Part ${i + 1}: ${"lorem ipsum dolor sit amet ".repeat(150)}`,
    );
    llm.addRules([
      {
        match: { lastUserContains: "tell me everything" },
        reply: { kind: "text", text: paragraphs.join("\n\n") },
      },
    ]);
    const gateway = await startInProcess(gatewayEnv, {
      whatsapp: { pairIntervalMs: SHORT_PAIR_INTERVAL_MS },
    });
    try {
      wa.incoming({ from: HEIDI, text: "tell me everything" });
      await eventually(
        () => recordContaining(gatewayEnv.SWITCHBOARD_DB!, "Part 3")?.state === "delivered",
        30_000,
        "every part delivered",
      );
      const shown = wa.messages(HEIDI).map((m) => m.text ?? "");
      expect(shown).toHaveLength(3);
      for (const [i, text] of shown.entries()) expect(text).toStartWith(`Part ${i + 1}:`);
      // A refused part waited the pair interval, so no part was refused twice.
      expect(wa.limitStats().pairRejected[HEIDI]).toBeGreaterThanOrEqual(1);
      expect(wa.limitStats().pairRejected[HEIDI]).toBeLessThanOrEqual(2);
    } finally {
      await gateway.stop();
    }
  }, 60_000);
});

describe("whatsapp: media and approvals", () => {
  const IVAN = "15551230009";
  const JUDY = "15551230010";
  const KARL = "15551230011";
  const LENA = "15551230012";
  const PNG = new Uint8Array([
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0,
    1, 8, 6, 0, 0, 0,
  ]);
  const notes = notesIn(dir.path);
  let pages: ReturnType<typeof Bun.serve>;
  let gateway: InProcessGateway;
  let gatewayEnv: Record<string, string>;

  beforeAll(async () => {
    pages = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request) =>
        new URL(request.url).pathname === "/chart.png"
          ? new Response(PNG)
          : new Response("missing", { status: 404 }),
    });
    const base = env(freePort(), "media.sqlite", {
      SWITCHBOARD_TRANSCRIPTION_MODEL: "openai-compatible:whisper-1",
      SWITCHBOARD_FETCH_ALLOW_PRIVATE: "on",
      WHATSAPP_ALLOWED_USERS: [IVAN, JUDY, KARL, LENA].join(","),
    });
    // After env(), which writes the surfaces-only config to the same file: this one adds the notes server.
    const config = writeApprovalConfig(dir.path, notes, {
      "whatsapp:dm": { delivery: "terminal", inputPolicy: "queue" },
    });
    gatewayEnv = { ...base, SWITCHBOARD_CONFIG: config };
    gateway = await startInProcess(gatewayEnv);
  }, GATEWAY_START_TIMEOUT_MS);
  afterAll(async () => {
    pages.stop(true);
    await gateway?.stop();
  }, GATEWAY_STOP_TIMEOUT_MS);

  test("a photo reaches the model as an image, downloaded once through its media id", async () => {
    llm.setRules([]);
    const photo = await sharp({
      create: { width: 320, height: 200, channels: 3, background: { r: 10, g: 200, b: 30 } },
    })
      .jpeg()
      .toBuffer();
    const { message } = wa.incoming({
      from: IVAN,
      image: { bytes: new Uint8Array(photo), mimeType: "image/jpeg" },
      caption: "what colour is this photo",
    });
    await waitForReply(IVAN, "echo:", 30_000);
    const image = userParts(llm.requests(), "what colour is this photo").find(
      (p) => p.type === "image_url",
    ) as { image_url: { url: string } } | undefined;
    expect(image?.image_url.url.startsWith("data:image/jpeg;base64,")).toBe(true);
    const mediaId = (message.image as { id: string }).id;
    expect(wa.media.downloads(mediaId)).toEqual({ started: 1, completed: 1 });
  }, 40_000);

  test("a voice note is transcribed, and its transcript is in the prompt", async () => {
    llm.setTranscription({ text: "remind me to water the plants" });
    const voice = oggOpus(6_000);
    wa.incoming({ from: JUDY, audio: { bytes: voice, mimeType: "audio/ogg; codecs=opus" }, voice: true });
    await waitForReply(JUDY, "echo:", 30_000);
    expect(llm.transcriptions().find((t) => t.bytes.byteLength === voice.byteLength)?.model).toBe(
      "whisper-1",
    );
    const prompt = llm.requests().find((r) => r.lastUserText.includes("remind me to water the plants"));
    expect(prompt?.lastUserText).toContain("[voice transcript of");
  }, 40_000);

  test("the agent sends a file: uploaded to /media, shown once as an image with its caption, before the answer", async () => {
    llm.setRules([
      {
        match: { lastUserContains: "send me the chart", lastRole: "user" },
        reply: {
          kind: "tool-call",
          toolName: "send_file",
          input: { url: `http://127.0.0.1:${pages.port}/chart.png`, caption: "the **chart**" },
        },
      },
      { match: { lastRole: "tool" }, reply: { kind: "text", text: "Here it is." } },
    ]);
    const uploadsBefore = wa.callsOf("media_upload").length;
    wa.incoming({ from: KARL, text: "send me the chart" });
    await waitForReply(KARL, "Here it is.", 30_000);
    await waitUntilSettled(gatewayEnv.SWITCHBOARD_DB!);
    const shown = wa.messages(KARL);
    expect(shown.map((m) => [m.type, m.text])).toEqual([
      ["image", "the *chart*"],
      ["text", "Here it is."],
    ]);
    expect([...(wa.media.get(shown[0]!.media!.id!)?.bytes ?? [])]).toEqual([...PNG]);
    expect(wa.callsOf("media_upload").length - uploadsBefore).toBe(1);
  }, 40_000);

  test("an approval by reply button: the effect once, the notice, and a redelivered press decides nothing more", async () => {
    appendRule(llm, "remember eggs", "eggs");
    wa.incoming({ from: LENA, text: "please remember eggs" });
    const prompt = await wa.waitFor(
      () => wa.messages(LENA).find((m) => m.type === "interactive" && m.text?.includes("eggs")),
      20_000,
      "the approval prompt with reply buttons",
    );
    expect(prompt.buttons?.map((b) => b.title)).toEqual(["Approve", "Deny", "Always allow in thi…"]);
    expect(notes.count("eggs")).toBe(0);

    const { delivery } = wa.press(LENA, prompt.wamid, "Approve");
    // WhatsApp cannot edit the prompt: the outcome comes as a message of its own, through the
    // outbox, as does the answer.
    await waitForReply(LENA, "Approved by", 30_000);
    await waitForReply(LENA, "Done:", 30_000);
    expect(notes.count("eggs")).toBe(1);

    const again = await wa.waitForDelivery(wa.deliverRaw((await wa.waitForDelivery(delivery)).body));
    expect(again.attempts.map((a) => a.status)).toEqual([200]);
    await waitUntilSettled(gatewayEnv.SWITCHBOARD_DB!);
    expect(notes.count("eggs")).toBe(1);
    expect(botTexts(LENA).filter((t) => t.startsWith("Done:"))).toHaveLength(1);
    expect(approvalStates(gatewayEnv.SWITCHBOARD_DB!, "eggs")).toEqual(["approved"]);
  }, 60_000);
});
