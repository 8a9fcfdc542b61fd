import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { InboundMessage } from "../../channels/types.ts";
import { createScheduleService, type ScheduleService } from "../../schedules/service.ts";
import { type ChatCommands, type CommandScope, createChatCommands } from "../../src/gateway/commands.ts";
import { DirectoryBlobStore } from "../../src/store/blob-directory.ts";
import { readBlobReferences } from "../../src/store/sqlite/blob-references.ts";
import { systemClock } from "../../src/util/clock.ts";
import { createHarness, type RuntimeHarness, tempDir } from "../support/runtime.ts";

let harness: RuntimeHarness;
let schedules: ScheduleService;
let commands: ChatCommands;
let notified = 0;

beforeEach(() => {
  harness = createHarness([]);
  schedules = createScheduleService({
    repository: harness.stores.schedules,
    clock: systemClock,
    dispatch: async () => ({ status: "retry", reason: "not dispatched in these tests" }),
  });
  notified = 0;
  commands = createChatCommands({
    runtime: harness.runtime,
    store: harness.stores.runtime,
    state: harness.stores.runtime,
    outbox: harness.stores.outbox,
    schedules,
    defaultTimezone: "Europe/Berlin",
    clock: systemClock,
    notify: () => {
      notified += 1;
    },
  });
});

afterEach(async () => {
  await schedules.stop();
  await harness.close();
});

let updates = 0;
async function scope(text: string, updateKey = `u${++updates}`): Promise<CommandScope> {
  const message: InboundMessage = {
    channel: "telegram",
    account: "bot1",
    updateKey,
    principal: { id: "alice", isBot: false },
    conversationKey: "tg:dm:1001",
    replyTarget: "1001",
    surface: "dm",
    text,
    messageId: "77",
    addressedToBot: true,
    attachments: [],
    receivedAtMs: Date.now(),
  };
  const conversationId = await harness.stores.runtime.resolveConversationKey(
    message.conversationKey,
    Date.now(),
  );
  return { message, conversationId, source: "telegram:bot1" };
}

describe("chat commands: matching", () => {
  test("own and schedule commands, with a bot suffix, any case; anything else is input", () => {
    expect(commands.match("/stop")).toBe("stop");
    expect(commands.match("/STATUS please")).toBe("status");
    expect(commands.match("/new@switchboard_bot")).toBe("new");
    expect(commands.match("/in 10m stretch")).toBe("in");
    expect(commands.match("/stopwatch")).toBeNull();
    expect(commands.match("/unknown")).toBeNull();
    expect(commands.match("stop")).toBeNull();
    expect(commands.match("hello /stop")).toBeNull();
  });
});

describe("chat commands: running", () => {
  test("a reply is enqueued once per update, to the message's chat, and the worker is woken", async () => {
    const first = await scope("/help", "u-help");
    const reply = await commands.run("help", first);
    expect(reply.duplicate).toBe(false);
    expect(reply.text).toContain("/new");
    const record = await harness.stores.outbox.show("notice:telegram:bot1:u-help");
    expect(record).toMatchObject({
      channel: "telegram",
      account: "bot1",
      target: "1001",
      replyTo: "77",
      conversationId: first.conversationId,
      markdown: reply.text,
    });
    expect(notified).toBe(1);

    expect(await commands.run("help", await scope("/help", "u-help"))).toEqual({ duplicate: true, text: "" });
    expect(notified).toBe(1);
  });

  test("a receipt whose reply was never written (a crash in between) runs the command again", async () => {
    const claimed = await scope("/help", "u-crashed");
    await harness.stores.runtime.claimIngress({
      source: claimed.source,
      key: claimed.message.updateKey,
      outcome: "command:help",
      payload: claimed.message,
      conversationId: claimed.conversationId,
      nowMs: Date.now(),
    });
    const reply = await commands.run("help", claimed);
    expect(reply.duplicate).toBe(false);
    expect(await harness.stores.outbox.show("notice:telegram:bot1:u-crashed")).not.toBeNull();
  });

  test("/stop with nothing running says so; /status reports model, runs, replies and time zone", async () => {
    expect((await commands.run("stop", await scope("/stop"))).text).toBe("Nothing is running right now.");
    const status = (await commands.run("status", await scope("/status"))).text;
    expect(status).toContain("Model: scripted");
    expect(status).toContain("Answers: 0 running, 0 queued");
    // The /stop reply above is still waiting for a worker.
    expect(status).toContain("Replies: 1 waiting to be delivered, 0 ambiguous");
    expect(status).toContain("time zone Europe/Berlin");
    expect(status).not.toContain("Last reply not delivered");
  });

  test("/status names the last reply the platform refused for good, and why", async () => {
    const first = await scope("/status", "u-failed");
    const [id] = await harness.stores.outbox.insert(
      [
        {
          key: "run_refused:0",
          runId: "run_refused",
          conversationId: first.conversationId,
          channel: "telegram",
          account: "bot1",
          target: "1001",
          kind: "message",
          markdown: "a reply",
        },
      ],
      Date.now(),
    );
    await harness.stores.outbox.markSending(id!, Date.now());
    await harness.stores.outbox.markFailed(id!, "send failed: outside the 24-hour window", Date.now());
    const status = (await commands.run("status", await scope("/status", "u-failed-2"))).text;
    expect(status).toContain(`Last reply not delivered (${id}): send failed: outside the 24-hour window`);
  });

  test("/new maps the chat to a fresh conversation; the old one keeps its id", async () => {
    const before = await scope("/new");
    await commands.run("new", before);
    const after = await harness.stores.runtime.resolveConversationKey("tg:dm:1001", Date.now());
    expect(after).not.toBe(before.conversationId);
  });

  test("schedule commands go through the schedule service with an id derived from the update", async () => {
    const created = await commands.run("in", await scope("/in 10m stretch", "u-in"));
    expect(created.duplicate).toBe(false);
    const conversationId = (await scope("noop")).conversationId;
    const list = await schedules.list(conversationId);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ prompt: "stretch", channel: "telegram", replyTarget: "1001" });
    expect(list[0]?.id).toMatch(/^sch_[0-9a-f]{20}$/);

    const bad = await commands.run("in", await scope("/in soon stretch"));
    expect(bad.text).toContain("Example:");
    expect(await schedules.list(conversationId)).toHaveLength(1);
  });

  test("a notice (too long) is enqueued once per update", async () => {
    const notice = await scope("x", "u-long");
    expect(await commands.notice(notice, "Your message is too long", "oversized")).toEqual({
      duplicate: false,
    });
    expect(await commands.notice(notice, "Your message is too long", "oversized")).toEqual({
      duplicate: true,
    });
    expect((await harness.stores.outbox.show("notice:telegram:bot1:u-long"))?.markdown).toBe(
      "Your message is too long",
    );
  });
});

describe("chat commands: /export", () => {
  let blobDir: ReturnType<typeof tempDir>;
  let blobs: DirectoryBlobStore;
  let exporting: ChatCommands;
  beforeEach(() => {
    blobDir = tempDir("switchboard-export-blobs-");
    blobs = new DirectoryBlobStore(blobDir.path);
    exporting = createChatCommands({
      runtime: harness.runtime,
      store: harness.stores.runtime,
      state: harness.stores.runtime,
      outbox: harness.stores.outbox,
      schedules,
      defaultTimezone: "Europe/Berlin",
      clock: systemClock,
      notify: () => {},
      // Telegram takes files; here the other channels send none.
      files: {
        store: blobs,
        limits: (channel) =>
          channel === "telegram" ? { maxFileBytes: 1024 * 1024, maxCaptionChars: 1024 } : undefined,
      },
    });
  });
  afterEach(() => blobDir.cleanup());

  /** One settled exchange in the chat's conversation. */
  async function exchange(conversationId: string, question: string, answer: string): Promise<void> {
    const nowMs = Date.now();
    const admitted = await harness.stores.runtime.admit({
      conversation: { id: conversationId },
      idempotencyKey: `k-${question}`,
      fingerprint: question,
      parts: [{ type: "text", text: question }],
      context: null,
      policy: "queue",
      coalescePending: false,
      proposedIds: { runId: `run_${++updates}`, messageId: `msg_${updates}` },
      nowMs,
    });
    const acquired = await harness.stores.runtime.acquireRun({
      runId: admitted.runId,
      owner: "t",
      nowMs,
      leaseMs: 60_000,
    });
    await harness.stores.runtime.commitTerminal({
      fence: acquired!.fence,
      state: "completed",
      assistantParts: [{ type: "text", text: answer }],
      nowMs,
    });
  }

  test("a channel that takes files gets one Markdown file in the blob store, pinned until sent; a redelivery adds nothing", async () => {
    const first = await scope("/export", "u-export");
    await exchange(first.conversationId, "what rhymes with orange?", "Nothing quite does.");
    const reply = await exporting.run("export", first);
    expect(reply.text).toMatch(/^This conversation as Markdown: 2 messages, exported .* UTC\.$/);
    const record = await harness.stores.outbox.show("notice:telegram:bot1:u-export");
    if (record?.kind !== "message" || !record.media) throw new Error("expected a file record");
    expect(record.markdown).toBe(reply.text);
    expect(record.media).toMatchObject({
      filename: `conversation-${first.conversationId}.md`,
      mimeType: "text/markdown",
    });
    const bytes = await blobs.read(record.media.blobId);
    const markdown = new TextDecoder().decode(bytes!);
    expect(record.media.sizeBytes).toBe(bytes!.byteLength);
    expect(markdown).toContain("what rhymes with orange?");
    expect(markdown).toContain("Nothing quite does.");
    expect((await readBlobReferences(harness.stores.db)).pinned.has(record.media.blobId)).toBe(true);

    expect(await exporting.run("export", await scope("/export", "u-export"))).toEqual({
      duplicate: true,
      text: "",
    });
    expect(await harness.stores.outbox.list({ conversationId: first.conversationId })).toHaveLength(1);
    expect(await Array.fromAsync(blobs.list())).toHaveLength(1);
  });

  test("a channel that sends no files gets the transcript as a Markdown message", async () => {
    const web = await scope("/export", "u-export-web");
    const message = { ...web.message, channel: "web" as const };
    await exchange(web.conversationId, "hello from the browser", "Hello!");
    const reply = await exporting.run("export", { ...web, message });
    expect(reply.text).toStartWith(`# Conversation ${web.conversationId}`);
    expect(reply.text).toContain("hello from the browser");
    const record = await harness.stores.outbox.show("notice:telegram:bot1:u-export-web");
    expect(record).toMatchObject({ kind: "message", media: null, markdown: reply.text, channel: "web" });
    expect(await Array.fromAsync(blobs.list())).toEqual([]);
  });
});
