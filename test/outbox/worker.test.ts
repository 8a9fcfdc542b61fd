import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { ChannelCapabilities, ChannelLimits } from "../../channels/types.ts";
import { RATE_WINDOW_MARGIN_MS } from "../../outbox/rate-limiter.ts";
import type { OutboxRecord } from "../../outbox/types.ts";
import { createDeliveryWorker, type DeliveryWorker } from "../../outbox/worker.ts";
import type { SqliteOutboxRepository } from "../../src/store/sqlite/outbox.ts";
import { type Logger, silentLogger } from "../../src/util/log.ts";
import { FakeClock, settle } from "../support/fake-clock.ts";
import { recordingLogger } from "../support/logger.ts";
import {
  FakeAdapter,
  formattingRejected,
  rateLimited,
  rejected,
  unavailable,
} from "./support/fake-adapter.ts";
import { OutboxDb } from "./support/outbox-db.ts";
import { messageInsert } from "./support/records.ts";

interface Setup {
  logger?: Logger;
  capabilities?: Partial<ChannelCapabilities>;
  limits?: Partial<ChannelLimits>;
  maxAttempts?: number;
  callTimeoutMs?: number;
  firstMessageId?: number;
}

let db: OutboxDb;
const running: DeliveryWorker[] = [];

beforeEach(() => {
  db = new OutboxDb();
});
afterEach(async () => {
  // A worker left with a hung call stands for a crashed process: it is abandoned, not stopped.
  await Promise.all(running.splice(0).map((worker) => worker.drain(0)));
  db.close();
});

function setup(options: Setup = {}) {
  const clock = new FakeClock();
  const adapter = new FakeAdapter({
    clock,
    ...(options.capabilities ? { capabilities: options.capabilities } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.firstMessageId ? { firstMessageId: options.firstMessageId } : {}),
  });
  const repo = db.repository();
  const observed = { rateLimited: [] as string[], firstSends: [] as { key: string; queuedMs: number }[] };
  const worker = createDeliveryWorker({
    repo,
    adapters: new Map([["telegram", adapter]]),
    clock,
    random: () => 0,
    logger: options.logger ?? silentLogger,
    observer: {
      rateLimited: (channel) => observed.rateLimited.push(channel),
      firstSendStarted: (record) =>
        observed.firstSends.push({ key: record.key, queuedMs: clock.now() - record.createdAtMs }),
    },
    ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
    ...(options.callTimeoutMs ? { callTimeoutMs: options.callTimeoutMs } : {}),
  });
  running.push(worker);
  return { clock, adapter, repo, worker, observed };
}

async function enqueue(repo: SqliteOutboxRepository, clock: FakeClock, ...items: [string, string][]) {
  return repo.insert(
    items.map(([target, text]) => messageInsert(target, text)),
    clock.now(),
  );
}

async function stateOf(repo: SqliteOutboxRepository, id: string): Promise<OutboxRecord["state"] | undefined> {
  return (await repo.show(id))?.state;
}

describe("order and retries", () => {
  test("a 429 then a 500 on the head: every answer delivered exactly once, in order", async () => {
    const { clock, adapter, repo, worker } = setup();
    adapter.fail("send", rateLimited(3000)).fail("send", unavailable());
    const ids = await enqueue(repo, clock, ["chat-a", "one"], ["chat-a", "two"], ["chat-a", "three"]);
    const t0 = clock.now();
    await worker.start();
    await clock.runUntil(() => adapter.visible("chat-a").length === 3, "three messages visible");

    expect(adapter.visible("chat-a")).toEqual(["one", "two", "three"]);
    const sends = adapter.calls.filter((c) => c.op === "send");
    expect(sends.map((c) => [c.text, c.outcome, c.atMs - t0])).toEqual([
      ["one", "error", 0],
      // 429: retried exactly when the platform said.
      ["one", "error", 3000],
      // 500 on attempt 2: backoff 1000 ms ceiling, half of it with zero jitter.
      ["one", "ok", 3500],
      ["two", "ok", 3500],
      ["three", "ok", 3500],
    ]);
    for (const id of ids) expect(await stateOf(repo, id)).toBe("delivered");
    const first = await repo.show(ids[0]!);
    expect(first?.attempts).toBe(3);
    expect(first?.receipt).toEqual({ messageIds: ["100"] });
    expect(first?.history.map((h) => h.action)).toEqual([
      "enqueued",
      "sending",
      "retry scheduled",
      "sending",
      "retry scheduled",
      "sending",
      "chunk delivered",
      "delivered",
    ]);
  });

  test("a retrying head blocks only its own target; other targets proceed", async () => {
    const { clock, adapter, repo, worker } = setup();
    adapter.fail("send", unavailable(), 1, "chat-a");
    const [a1, a2, b1] = await enqueue(repo, clock, ["chat-a", "a1"], ["chat-a", "a2"], ["chat-b", "b1"]);
    const t0 = clock.now();
    await worker.start();
    await settle();
    expect(adapter.visible("chat-b")).toEqual(["b1"]);
    expect(adapter.visible("chat-a")).toEqual([]);
    expect(await stateOf(repo, a1!)).toBe("pending");
    expect(await stateOf(repo, a2!)).toBe("pending");
    expect(await stateOf(repo, b1!)).toBe("delivered");

    await clock.runUntil(() => adapter.visible("chat-a").length === 2, "chat-a delivered");
    expect(adapter.visible("chat-a")).toEqual(["a1", "a2"]);
    expect(clock.now() - t0).toBe(250);
  });

  test("a rejected answer fails at once with the platform's reason and does not block the chat", async () => {
    const logger = recordingLogger();
    const { clock, adapter, repo, worker } = setup({ logger });
    adapter.fail("send", rejected("chat not found"));
    const [bad, good] = await enqueue(repo, clock, ["chat-a", "doomed"], ["chat-a", "fine"]);
    await worker.start();
    await clock.runUntil(() => adapter.visible("chat-a").length === 1, "second answer visible");
    const failed = await repo.show(bad!);
    expect(failed?.state).toBe("failed");
    expect(failed?.lastError).toMatch(/send failed: 400 Bad Request: chat not found/);
    expect(await stateOf(repo, good!)).toBe("delivered");
    // One warn line with the record, the chat and the platform's reason, never the text.
    const failures = logger.records.filter((record) => record.event === "outbox.delivery_failed");
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({
      level: "warn",
      recordId: bad,
      channel: "telegram",
      target: "chat-a",
      reason: expect.stringContaining("chat not found"),
    });
    expect(logger.lines.join("\n")).not.toContain("doomed");
  });

  test("transient failures give up after maxAttempts; an operator retry delivers it, recorded in history", async () => {
    const logger = recordingLogger();
    const { clock, adapter, repo, worker } = setup({ maxAttempts: 3, logger });
    adapter.fail("send", unavailable(), 3);
    const [id] = await enqueue(repo, clock, ["chat-a", "persistent"]);
    await worker.start();
    await clock.runUntil(() => adapter.callsOf("send", "error").length === 3, "three failed attempts");
    await settle();
    const failed = await repo.show(id!);
    expect(failed?.state).toBe("failed");
    expect(failed?.lastError).toMatch(/gave up after 3 attempts: 500/);
    expect(adapter.visible("chat-a")).toEqual([]);
    expect(logger.records.filter((record) => record.event === "outbox.delivery_failed")).toEqual([
      expect.objectContaining({ recordId: id, reason: expect.stringMatching(/gave up after 3 attempts/) }),
    ]);
    expect(logger.lines.join("\n")).not.toContain("persistent");

    await repo.retry(id!, "operator:ann", clock.now(), "platform is back");
    worker.notify();
    await settle();
    expect(adapter.visible("chat-a")).toEqual(["persistent"]);
    const delivered = await repo.show(id!);
    expect(delivered?.state).toBe("delivered");
    expect(delivered?.history.filter((h) => h.actor === "operator:ann")).toEqual([
      { atMs: clock.now(), actor: "operator:ann", action: "retry", note: "platform is back" },
    ]);
  });

  test("new work is picked up on notify, without polling", async () => {
    const { clock, adapter, repo, worker } = setup();
    await worker.start();
    await enqueue(repo, clock, ["chat-a", "hello"]);
    await settle();
    expect(clock.nextTimerInMs()).toBeNull();
    expect(adapter.visible("chat-a")).toEqual([]);
    worker.notify();
    await settle();
    expect(adapter.visible("chat-a")).toEqual(["hello"]);
  });
});

describe("rate limits", () => {
  test("sends are spaced per chat and per account", async () => {
    const { clock, adapter, repo, worker } = setup({
      limits: { perChatIntervalMs: 1000, perAccountPerSecond: 2 },
    });
    const items: [string, string][] = [];
    for (const chat of ["chat-a", "chat-b", "chat-c"])
      for (const n of [1, 2, 3]) items.push([chat, `${chat}-${n}`]);
    await enqueue(repo, clock, ...items);
    const t0 = clock.now();
    await worker.start();
    await clock.runUntil(() => adapter.callsOf("send").length === 9, "nine sends");

    const sends = adapter.callsOf("send").map((c) => ({ chat: c.target, atMs: c.atMs - t0 }));
    for (const chat of ["chat-a", "chat-b", "chat-c"]) {
      const times = sends.filter((s) => s.chat === chat).map((s) => s.atMs);
      expect(adapter.visible(chat)).toEqual([`${chat}-1`, `${chat}-2`, `${chat}-3`]);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000);
    }
    // Account: at most 2 in any second.
    const all = sends.map((s) => s.atMs).sort((a, b) => a - b);
    all.forEach((atMs, i) => {
      if (i >= 2) expect(atMs).toBeGreaterThanOrEqual((i - 1) * 500);
    });
    expect(all.at(-1)).toBeLessThanOrEqual(4 * (1000 + RATE_WINDOW_MARGIN_MS));
  });

  test("no more than the account's rate in any one second (the platform's sliding window)", async () => {
    const { clock, adapter, repo, worker } = setup({
      limits: { perChatIntervalMs: 0, perAccountPerSecond: 2 },
    });
    await enqueue(
      repo,
      clock,
      ...["a", "b", "c", "d", "e", "f"].map((chat): [string, string] => [chat, chat]),
    );
    const t0 = clock.now();
    await worker.start();
    await clock.runUntil(() => adapter.callsOf("send").length === 6, "six sends");
    const times = adapter.callsOf("send").map((c) => c.atMs - t0);
    for (let i = 2; i < times.length; i++) expect(times[i]! - times[i - 2]!).toBeGreaterThanOrEqual(1000);
  });

  test("a chat waiting for its interval does not hold a delivery slot that other chats could use", async () => {
    const { clock, adapter, repo, worker } = setup({
      limits: { perChatIntervalMs: 1000, perAccountPerSecond: 0 },
    });
    // Four chats with two answers each fill the worker's four slots; "late" is queued last.
    const busy = ["chat-a", "chat-b", "chat-c", "chat-d"];
    await enqueue(repo, clock, ...busy.map((chat): [string, string] => [chat, `${chat}-1`]));
    await enqueue(repo, clock, ...busy.map((chat): [string, string] => [chat, `${chat}-2`]), [
      "late",
      "late-1",
    ]);
    const t0 = clock.now();
    await worker.start();
    await clock.runUntil(() => adapter.callsOf("send").length === 9, "nine sends");
    const sentAt = (text: string) => adapter.callsOf("send").find((c) => c.text === text)!.atMs - t0;
    expect(sentAt("late-1")).toBe(0);
    for (const chat of busy) expect(sentAt(`${chat}-2`)).toBe(1000 + RATE_WINDOW_MARGIN_MS);
  });

  test("a global 429 holds back the whole account until retryAfterMs, and is counted", async () => {
    const { clock, adapter, repo, worker, observed } = setup({
      limits: { perChatIntervalMs: 0, perAccountPerSecond: 100 },
    });
    adapter.fail("send", rateLimited(5000, true), 1, "chat-a");
    await enqueue(repo, clock, ["chat-a", "a1"]);
    const t0 = clock.now();
    await worker.start();
    await settle();
    await enqueue(repo, clock, ["chat-b", "b1"]);
    worker.notify();
    await clock.runUntil(() => adapter.visible("chat-b").length === 1, "b1 visible");
    expect(clock.now() - t0).toBe(5000);
    await clock.runUntil(() => adapter.visible("chat-a").length === 1, "a1 visible");
    expect(adapter.callsOf("send").map((c) => c.atMs - t0)).toEqual([5000, 5000]);
    expect(observed.rateLimited).toEqual(["telegram"]);
    // Every attempt at a reply's first chunk is reported: a1 at once (429), then both at 5 s.
    expect(observed.firstSends.map((s) => s.queuedMs).sort((a, b) => a - b)).toEqual([0, 5000, 5000]);
  });
});

describe("uncertain outcomes settled by the platform's delivery status", () => {
  test("a send whose answer never came waits for its status, which delivers it; the chat then continues", async () => {
    const { clock, adapter, repo, worker } = setup({
      callTimeoutMs: 5000,
      capabilities: { statusWaitMs: 60_000 },
    });
    adapter.fail("send", { kind: "hang", reached: true });
    const [sent, later] = await enqueue(repo, clock, ["chat-a", "maybe"], ["chat-a", "after"]);
    await worker.start();
    await clock.advance(5000);
    const waiting = await repo.show(sent!);
    expect(waiting?.state).toBe("sending");
    expect(waiting?.lastError).toMatch(/^awaiting the platform's delivery status: send: no answer/);
    expect(await stateOf(repo, later!)).toBe("pending");

    await worker.recordPlatformStatus({
      idempotencyKey: `${waiting!.key}#0`,
      messageId: "wamid.maybe",
      outcome: "delivered",
      status: "sent",
    });
    await clock.runUntil(() => adapter.visible("chat-a").length === 2, "the next reply sent");
    const settled = await repo.show(sent!);
    expect(settled).toMatchObject({ state: "delivered", receipt: { messageIds: ["wamid.maybe"] } });
    expect(settled?.history.at(-1)?.action).toBe("resolved by platform status");
    expect(adapter.calls.filter((c) => c.op === "send").map((c) => c.text)).toEqual(["maybe", "after"]);
  });

  test("without a status within the wait, the send becomes ambiguous and is not resent", async () => {
    const { clock, adapter, repo, worker } = setup({
      callTimeoutMs: 5000,
      capabilities: { statusWaitMs: 60_000 },
    });
    adapter.fail("send", { kind: "hang", reached: true });
    const [sent] = await enqueue(repo, clock, ["chat-a", "maybe"]);
    await worker.start();
    await clock.advance(5000 + 59_000);
    expect(await stateOf(repo, sent!)).toBe("sending");
    await clock.advance(1_000);
    const record = await repo.show(sent!);
    expect(record?.state).toBe("ambiguous");
    expect(record?.lastError).toMatch(/no delivery status came from the platform in time/);
    await clock.advance(600_000);
    expect(adapter.calls.filter((c) => c.op === "send")).toHaveLength(1);
  });

  test("a send interrupted by a crash waits for its status after the restart; a failed status fails it", async () => {
    const first = setup({ capabilities: { statusWaitMs: 60_000 } });
    first.adapter.fail("send", { kind: "hang", reached: false });
    const [hung] = await enqueue(first.repo, first.clock, ["chat-a", "maybe"]);
    await first.worker.start();
    await settle();
    running.splice(running.indexOf(first.worker), 1); // the process dies here

    const second = setup({ capabilities: { statusWaitMs: 60_000 } });
    const summary = await second.worker.start();
    expect(summary).toMatchObject({ ambiguous: [], awaitingStatus: [hung!] });
    const key = (await second.repo.show(hung!))!.key;
    await second.worker.recordPlatformStatus({
      idempotencyKey: `${key}#0`,
      messageId: "wamid.x",
      outcome: "failed",
      status: "failed",
      reason: "WhatsApp 131047: Re-engagement message",
    });
    expect(await second.repo.show(hung!)).toMatchObject({
      state: "failed",
      lastError: "the platform reported the send failed: WhatsApp 131047: Re-engagement message",
    });
    await second.clock.advance(120_000);
    expect(second.adapter.calls).toEqual([]);
  });
});

describe("uncertain outcomes", () => {
  test("a send hung by a crash becomes ambiguous on restart and is not resent; resolve --delivered sends nothing", async () => {
    const first = setup();
    first.adapter.fail("send", { kind: "hang", reached: true });
    const [hung, later] = await enqueue(first.repo, first.clock, ["chat-a", "maybe"], ["chat-a", "after"]);
    await first.worker.start();
    await settle();
    expect(await stateOf(first.repo, hung!)).toBe("sending");
    running.splice(running.indexOf(first.worker), 1); // the process dies here

    const second = setup({ firstMessageId: 500 });
    second.adapter.sharePlatformWith(first.adapter);
    const summary = await second.worker.start();
    expect(summary.ambiguous).toEqual([hung!]);
    await second.clock.advance(600_000);
    expect(second.adapter.calls).toEqual([]);
    expect(second.adapter.visible("chat-a")).toEqual(["maybe"]);
    expect(await stateOf(second.repo, later!)).toBe("pending");
    expect(await second.repo.counts("conv-chat-a")).toEqual({ waiting: 1, ambiguous: 1 });

    await second.repo.resolve(hung!, "delivered", "operator:ann", "seen in the chat", second.clock.now());
    second.worker.notify();
    await settle();
    expect(second.adapter.callsOf("send").map((c) => c.text)).toEqual(["after"]);
    expect(second.adapter.visible("chat-a")).toEqual(["maybe", "after"]);
  });

  test("a call that never answers becomes ambiguous after the call timeout and is not resent", async () => {
    const { clock, adapter, repo, worker } = setup({ callTimeoutMs: 5000 });
    adapter.fail("send", { kind: "hang", reached: false });
    const [id] = await enqueue(repo, clock, ["chat-a", "hello"]);
    await worker.start();
    await clock.advance(5000);
    const record = await repo.show(id!);
    expect(record?.state).toBe("ambiguous");
    expect(record?.lastError).toMatch(/no answer from the platform.*within 5000 ms/);
    await clock.advance(600_000);
    expect(adapter.calls).toHaveLength(1);
  });

  test("an idempotent adapter gets the hung send again with the same idempotency key", async () => {
    const { clock, adapter, repo, worker } = setup({
      callTimeoutMs: 5000,
      capabilities: { idempotentSend: true },
    });
    adapter.fail("send", { kind: "hang", reached: true });
    const [id] = await enqueue(repo, clock, ["chat-a", "hello"]);
    await worker.start();
    await clock.runUntil(() => adapter.callsOf("send").length === 1, "a second, answered send");
    const sends = adapter.calls.filter((c) => c.op === "send");
    expect(sends.map((c) => c.outcome)).toEqual(["hang", "ok"]);
    expect(sends[1]?.idempotencyKey).toBe(sends[0]!.idempotencyKey!);
    expect(adapter.visible("chat-a")).toEqual(["hello"]);
    expect(await stateOf(repo, id!)).toBe("delivered");
  });

  test("an idempotent channel's interrupted send is repeated with the same key after a restart", async () => {
    const first = setup({ capabilities: { idempotentSend: true } });
    first.adapter.fail("send", { kind: "hang", reached: true });
    const [id] = await enqueue(first.repo, first.clock, ["chat-a", "hello"]);
    await first.worker.start();
    await settle();
    running.splice(running.indexOf(first.worker), 1);

    const second = setup({ capabilities: { idempotentSend: true }, firstMessageId: 500 });
    second.adapter.sharePlatformWith(first.adapter);
    expect((await second.worker.start()).requeued).toEqual([id!]);
    await settle();
    expect(second.adapter.callsOf("send")[0]?.idempotencyKey).toBe(first.adapter.calls[0]!.idempotencyKey!);
    expect(second.adapter.visible("chat-a")).toEqual(["hello"]);
    expect(await second.repo.show(id!)).toMatchObject({
      state: "delivered",
      receipt: { messageIds: ["100"] },
    });
  });

  test("cancelling an ambiguous head lets the chat continue", async () => {
    const { clock, adapter, repo, worker } = setup({ callTimeoutMs: 1000 });
    adapter.fail("send", { kind: "hang", reached: false });
    const [stuck] = await enqueue(repo, clock, ["chat-a", "stuck"], ["chat-a", "next"]);
    await worker.start();
    await clock.advance(1000);
    expect(await stateOf(repo, stuck!)).toBe("ambiguous");
    expect(adapter.visible("chat-a")).toEqual([]);
    await repo.cancel(stuck!, "operator:bob", clock.now(), "sent by hand");
    worker.notify();
    await settle();
    expect(adapter.visible("chat-a")).toEqual(["next"]);
  });
});

describe("formatting and chunks", () => {
  const threeParagraphs = "First paragraph is here.\n\nSecond paragraph is here.\n\nThird paragraph is here.";

  test("rich formatting the platform rejects is sent once more as plain text", async () => {
    const { clock, adapter, repo, worker } = setup();
    adapter.fail("send", formattingRejected());
    const [id] = await enqueue(repo, clock, ["chat-a", "**bold** and <tag>"]);
    await worker.start();
    await settle();
    expect(adapter.calls.map((c) => [c.format, c.text, c.outcome])).toEqual([
      ["rich", "<b>bold</b> and &lt;tag&gt;", "error"],
      ["plain", "bold and <tag>", "ok"],
    ]);
    const record = await repo.show(id!);
    expect(record).toMatchObject({ state: "delivered", attempts: 1, rendered: { format: "plain" } });
    expect(record?.history.map((h) => h.action)).toContain("formatting fallback");
  });

  test("a long answer is sent as ordered chunks, replying with the first; the receipt holds them all", async () => {
    const { clock, adapter, repo, worker } = setup({ limits: { maxMessageChars: 40 } });
    const [id] = await repo.insert(
      [messageInsert("chat-a", threeParagraphs, { replyTo: "42" })],
      clock.now(),
    );
    await worker.start();
    await settle();
    expect(adapter.visible("chat-a")).toEqual([
      "First paragraph is here.",
      "Second paragraph is here.",
      "Third paragraph is here.",
    ]);
    expect(adapter.callsOf("send").map((c) => c.replyTo)).toEqual(["42", undefined, undefined]);
    expect(await repo.show(id!)).toMatchObject({
      state: "delivered",
      chunksDelivered: 3,
      receipt: { messageIds: ["100", "101", "102"] },
    });
  });

  test("after a crash between chunks, delivered chunks are not sent again", async () => {
    const first = setup({ limits: { maxMessageChars: 40 } });
    first.adapter.fail("send", { kind: "ok" }).fail("send", { kind: "hang", reached: false });
    const [id] = await enqueue(first.repo, first.clock, ["chat-a", threeParagraphs]);
    await first.worker.start();
    await settle();
    expect(first.adapter.calls.map((c) => c.outcome)).toEqual(["ok", "hang"]);
    running.splice(running.indexOf(first.worker), 1); // the process dies here

    const second = setup({ limits: { maxMessageChars: 40 }, firstMessageId: 500 });
    second.adapter.sharePlatformWith(first.adapter);
    expect((await second.worker.start()).ambiguous).toEqual([id!]);
    await settle();
    expect(second.adapter.calls).toEqual([]);
    await second.repo.retry(id!, "operator:ann", second.clock.now(), "chunk 2 is not in the chat");
    second.worker.notify();
    await settle();
    expect(second.adapter.callsOf("send").map((c) => [c.text, c.idempotencyKey])).toEqual([
      ["Second paragraph is here.", `${(await second.repo.show(id!))!.key}#1`],
      ["Third paragraph is here.", `${(await second.repo.show(id!))!.key}#2`],
    ]);
    expect(second.adapter.visible("chat-a")).toEqual([
      "First paragraph is here.",
      "Second paragraph is here.",
      "Third paragraph is here.",
    ]);
    expect(await second.repo.show(id!)).toMatchObject({
      state: "delivered",
      receipt: { messageIds: ["100", "500", "501"] },
    });
  });

  test("on an idempotent channel the interrupted chunk is repeated by key and shows once", async () => {
    const idempotent = { idempotentSend: true };
    const first = setup({ limits: { maxMessageChars: 40 }, capabilities: idempotent });
    first.adapter.fail("send", { kind: "ok" }).fail("send", { kind: "hang", reached: true });
    const [id] = await enqueue(first.repo, first.clock, ["chat-a", threeParagraphs]);
    await first.worker.start();
    await settle();
    running.splice(running.indexOf(first.worker), 1);

    const second = setup({ limits: { maxMessageChars: 40 }, capabilities: idempotent, firstMessageId: 500 });
    second.adapter.sharePlatformWith(first.adapter);
    expect((await second.worker.start()).requeued).toEqual([id!]);
    await settle();
    expect(second.adapter.callsOf("send").map((c) => c.text)).toEqual([
      "Second paragraph is here.",
      "Third paragraph is here.",
    ]);
    expect(second.adapter.visible("chat-a")).toEqual([
      "First paragraph is here.",
      "Second paragraph is here.",
      "Third paragraph is here.",
    ]);
    expect(await second.repo.show(id!)).toMatchObject({ receipt: { messageIds: ["100", "101", "500"] } });
  });
});

describe("shutdown", () => {
  test("drain waits for the delivery in flight; a hung one makes it report false", async () => {
    const { clock, adapter, repo, worker } = setup();
    adapter.fail("send", { kind: "hang", reached: false });
    await enqueue(repo, clock, ["chat-a", "stuck"]);
    await worker.start();
    await settle();
    const drained = worker.drain(2000);
    await clock.advance(2000);
    expect(await drained).toBe(false);

    const healthy = setup();
    await enqueue(healthy.repo, healthy.clock, ["chat-b", "fine"]);
    await healthy.worker.start();
    expect(await healthy.worker.drain(2000)).toBe(true);
    expect(healthy.adapter.visible("chat-b")).toEqual(["fine"]);
  });

  test("drain still delivers replies committed before it that the worker had not taken yet", async () => {
    const { clock, adapter, repo, worker } = setup();
    await worker.start();
    await settle();
    // Committed by a run that settled just before shutdown; the notify had not reached the loop.
    await enqueue(repo, clock, ["chat-a", "last words"], ["chat-b", "goodbye"], ["chat-a", "and more"]);
    expect(await worker.drain(2000)).toBe(true);
    expect(adapter.visible("chat-a")).toEqual(["last words", "and more"]);
    expect(adapter.visible("chat-b")).toEqual(["goodbye"]);
  });
});

/** `inner`, telling `seen` of each call of the worker's two queries (the outbox heads and the next wake time). */
function watchingQueries(
  inner: SqliteOutboxRepository,
  seen: (query: string) => void,
): SqliteOutboxRepository {
  return new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== "nextDeliverable" && property !== "nextWakeAtMs") return value;
      return (...args: unknown[]) => {
        seen(String(property));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

describe("the reply's critical path", () => {
  test("a started delivery reaches its platform call before the worker queries the outbox again", async () => {
    const clock = new FakeClock();
    const adapter = new FakeAdapter({ clock });
    const inner = db.repository();
    const order: string[] = [];
    const repo = watchingQueries(inner, (query) => order.push(query));
    const worker = createDeliveryWorker({
      repo,
      adapters: new Map([["telegram", adapter]]),
      clock,
      logger: silentLogger,
      observer: { firstSendStarted: (record) => order.push(`send ${record.markdown}`) },
    });
    running.push(worker);
    await enqueue(inner, clock, ["chat-a", "hello"]);
    await worker.start();
    await clock.runUntil(() => adapter.visible("chat-a").length === 1, "the message visible");
    expect(order.slice(0, 3)).toEqual(["nextDeliverable", "send hello", "nextWakeAtMs"]);
  });

  test("a chat held by its flood window wakes the worker only when it has something to send", async () => {
    const clock = new FakeClock();
    const adapter = new FakeAdapter({ clock, limits: { perChatIntervalMs: 1000 } });
    const inner = db.repository();
    let queries = 0;
    const repo = watchingQueries(inner, (query) => {
      if (query === "nextDeliverable") queries += 1;
    });
    const worker = createDeliveryWorker({
      repo,
      adapters: new Map([["telegram", adapter]]),
      clock,
      logger: silentLogger,
    });
    running.push(worker);
    await enqueue(inner, clock, ["chat-a", "first"]);
    await worker.start();
    await clock.runUntil(() => adapter.visible("chat-a").length === 1, "the first message visible");
    await settle();
    const afterFirst = queries;
    // The chat's window holds it for a while after the send; with nothing queued, its end is no
    // reason to look.
    await clock.advance(5_000);
    await settle();
    expect(queries).toBe(afterFirst);

    // Two replies at once: the second waits for the window and goes when it opens, unprompted.
    await enqueue(inner, clock, ["chat-a", "second"], ["chat-a", "third"]);
    worker.notify();
    await clock.runUntil(() => adapter.visible("chat-a").length === 3, "the later messages visible");
    expect(adapter.visible("chat-a")).toEqual(["first", "second", "third"]);
  });
});
