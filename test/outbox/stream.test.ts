import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { ChannelCapabilities, ChannelLimits } from "../../channels/types.ts";
import { FIRST_PREVIEW_WAIT_MS, type StreamReply } from "../../outbox/stream.ts";
import { createDeliveryWorker, type DeliveryWorker } from "../../outbox/worker.ts";
import type { RuntimeEvent } from "../../src/runtime/events.ts";
import type { TerminalRunState } from "../../src/runtime/types.ts";
import { commitAnswer as commitAnswerDelivery } from "../../src/store/outbox-writes.ts";
import { sqliteOutboxSteps } from "../../src/store/sqlite/outbox.ts";
import { runSync } from "../../src/store/steps.ts";
import { silentLogger } from "../../src/util/log.ts";
import { FakeClock, settle } from "../support/fake-clock.ts";
import {
  FakeAdapter,
  type FakeAdapterOptions,
  formattingRejected,
  unavailable,
} from "./support/fake-adapter.ts";
import { OutboxDb } from "./support/outbox-db.ts";
import { messageInsert } from "./support/records.ts";

const TARGET = "chat-s";
const CONVERSATION = "conv-s";

let db: OutboxDb;
const running: DeliveryWorker[] = [];

beforeEach(() => {
  db = new OutboxDb();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((worker) => worker.drain(0)));
  db.close();
});

interface Setup {
  limits?: Partial<ChannelLimits>;
  capabilities?: Partial<ChannelCapabilities>;
  without?: FakeAdapterOptions["without"];
  latencyMs?: number;
  firstMessageId?: number;
  /** Default 0 here (a preview from the first delta on); the product's wait has its own tests. */
  firstPreviewWaitMs?: number;
}

async function setup(options: Setup = {}) {
  const clock = new FakeClock();
  const adapter = new FakeAdapter({
    clock,
    limits: { maxMessageChars: 4096, editIntervalMs: 1000, ...options.limits },
    ...(options.capabilities ? { capabilities: options.capabilities } : {}),
    ...(options.without ? { without: options.without } : {}),
    ...(options.latencyMs ? { latencyMs: options.latencyMs } : {}),
    ...(options.firstMessageId ? { firstMessageId: options.firstMessageId } : {}),
  });
  const repo = db.repository();
  const worker = createDeliveryWorker({
    repo,
    adapters: new Map([["telegram", adapter]]),
    clock,
    random: () => 0,
    logger: silentLogger,
    firstPreviewWaitMs: options.firstPreviewWaitMs ?? 0,
  });
  running.push(worker);
  const recovery = await worker.start();
  const conn = db.connect();
  let sequence = 0;

  /** One streamed run, driven like the runtime drives it. */
  function run(runId: string) {
    const stream = worker.openStream({
      channel: "telegram",
      account: "bot-1",
      runId,
      conversationId: CONVERSATION,
      target: TARGET,
    });
    const base = { conversationId: CONVERSATION, runId };
    return {
      stream,
      delta(text: string) {
        stream.handle({
          ...base,
          type: "assistant-delta",
          durable: false,
          sequence: ++sequence,
          delta: text,
        });
      },
      reset() {
        stream.handle({
          ...base,
          type: "attempt-reset",
          durable: false,
          sequence: ++sequence,
          reason: "retry",
        });
      },
      checkpoint(text: string) {
        stream.handle({
          ...base,
          type: "checkpoint",
          durable: true,
          seq: ++sequence,
          step: 1,
          durationMs: 1,
          text,
        });
      },
      /** The lead's terminal commit (T2, one transaction), then the terminal event, then notify. */
      finish(state: TerminalRunState, text: string) {
        commitAnswer(runId, state, text);
        const event: RuntimeEvent = {
          ...base,
          type: "terminal",
          durable: true,
          seq: ++sequence,
          state,
          text,
          usage: {},
        };
        stream.handle(event);
        worker.notify();
      },
    };
  }

  function commitAnswer(runId: string, state: TerminalRunState, text: string) {
    return conn
      .transaction(() =>
        runSync(
          commitAnswerDelivery(
            {
              runId,
              conversationId: CONVERSATION,
              channel: "telegram",
              account: "bot-1",
              target: TARGET,
              state,
              text,
            },
            clock.now(),
          ),
          sqliteOutboxSteps(conn),
        ),
      )
      .immediate();
  }

  return { clock, adapter, repo, worker, recovery, run, commitAnswer };
}

const edits = (adapter: FakeAdapter) => adapter.callsOf("edit");

async function settled(stream: StreamReply): Promise<void> {
  let done = false;
  void stream.settled.then(() => {
    done = true;
  });
  await settle();
  expect(done).toBe(true);
}

describe("live previews", () => {
  test("the first delta sends a message; later deltas are coalesced into spaced edits", async () => {
    const { clock, adapter, repo, run } = await setup();
    const t0 = clock.now();
    const reply = run("run_a");
    reply.delta("Hello");
    await settle();
    expect(adapter.visible(TARGET)).toEqual(["Hello"]);
    const record = await repo.show("run_a:stream");
    expect(record).toMatchObject({
      state: "sending",
      kind: "stream",
      final: false,
      receipt: { messageIds: ["100"] },
    });

    for (const piece of [" wor", "ld", ", how", " are", " you?"]) {
      await clock.advance(150);
      reply.delta(piece);
    }
    await clock.advance(1000 - 750);
    expect(adapter.visible(TARGET)).toEqual(["Hello world, how are you?"]);
    reply.delta(" Fine.");
    await clock.advance(999);
    expect(edits(adapter)).toHaveLength(1);
    await clock.advance(1);
    expect(edits(adapter).map((e) => [e.text, e.atMs - t0])).toEqual([
      ["Hello world, how are you?", 1000],
      ["Hello world, how are you? Fine.", 2000],
    ]);
  });

  test("never more than one call in flight, even when the platform is slow", async () => {
    const { clock, adapter, run } = await setup({ latencyMs: 1500, limits: { editIntervalMs: 200 } });
    const reply = run("run_slow");
    for (let i = 0; i < 20; i++) {
      reply.delta(`word${i} `);
      await clock.advance(100);
    }
    reply.finish("completed", "the final answer");
    await clock.runUntil(() => adapter.visible(TARGET).join() === "the final answer", "final text shown");
    expect(adapter.maxInFlight).toBe(1);
    expect(edits(adapter).length).toBeLessThan(5);
  });

  test("past the message limit the text rolls over into a new message; the receipt grows", async () => {
    const { clock, adapter, repo, run } = await setup({ limits: { maxMessageChars: 40 } });
    const reply = run("run_long");
    reply.delta("First paragraph is here.");
    await settle();
    reply.delta("\n\nSecond paragraph is here.");
    await clock.advance(1000);
    expect(adapter.visible(TARGET)).toEqual(["First paragraph is here.", "Second paragraph is here."]);
    expect((await repo.show("run_long:stream"))?.receipt).toEqual({ messageIds: ["100", "101"] });
    // The first message already shows its chunk: only the new one is sent, nothing is edited.
    expect(edits(adapter)).toEqual([]);
    for (const call of adapter.calls) expect(call.text?.length ?? 0).toBeLessThanOrEqual(40);
  });
});

describe("the wait before the first preview", () => {
  test("an answer finished within the wait is sent once, whole: no preview, no edit", async () => {
    const { clock, adapter, repo, run } = await setup({ firstPreviewWaitMs: FIRST_PREVIEW_WAIT_MS });
    const t0 = clock.now();
    const reply = run("run_quick");
    reply.delta("Hi");
    await settle();
    await clock.advance(FIRST_PREVIEW_WAIT_MS - 1);
    expect(adapter.callsOf("send")).toEqual([]);
    reply.delta(" there!");
    reply.finish("completed", "Hi there!");
    await clock.runUntil(() => adapter.visible(TARGET).length === 1, "the answer");
    await settle();
    expect(adapter.callsOf("send").map((c) => [c.text, c.atMs - t0])).toEqual([
      ["Hi there!", FIRST_PREVIEW_WAIT_MS - 1],
    ]);
    expect(edits(adapter)).toEqual([]);
    // The terminal commit enqueued the answer as an ordinary message; no stream record was opened.
    expect(await repo.show("run_quick:stream")).toBeNull();
    await settled(reply.stream);
  });

  test("a longer answer previews when the wait is over, with the text streamed so far", async () => {
    const { clock, adapter, run } = await setup({ firstPreviewWaitMs: FIRST_PREVIEW_WAIT_MS });
    const t0 = clock.now();
    const reply = run("run_long_wait");
    reply.delta("Once");
    await clock.advance(100);
    reply.delta(" upon a time");
    await clock.advance(FIRST_PREVIEW_WAIT_MS - 100);
    expect(adapter.callsOf("send").map((c) => [c.text, c.atMs - t0])).toEqual([
      ["Once upon a time", FIRST_PREVIEW_WAIT_MS],
    ]);
    reply.finish("completed", "Once upon a time, the end.");
    await clock.runUntil(() => edits(adapter).length === 1, "the final edit");
    expect(edits(adapter).map((e) => [e.text, e.atMs - t0])).toEqual([
      ["Once upon a time, the end.", FIRST_PREVIEW_WAIT_MS + 1000],
    ]);
  });

  test("shutdown during the wait sends nothing and settles", async () => {
    const { adapter, run } = await setup({ firstPreviewWaitMs: FIRST_PREVIEW_WAIT_MS });
    const reply = run("run_stop");
    reply.delta("Partial");
    await settle();
    reply.stream.abort();
    await settled(reply.stream);
    expect(adapter.calls).toEqual([]);
  });
});

describe("the end of a stream", () => {
  test("the final text is the canonical answer, and it never waits behind a queued preview", async () => {
    const { clock, adapter, repo, run } = await setup();
    const t0 = clock.now();
    const reply = run("run_f");
    reply.delta("Draft");
    await settle();
    await clock.advance(100);
    reply.delta(" that will be replaced");
    await clock.advance(100);
    reply.finish("completed", "The **canonical** answer.");
    await clock.runUntil(() => edits(adapter).length === 1, "the final edit");
    await settle();
    expect(edits(adapter).map((e) => [e.text, e.atMs - t0])).toEqual([
      ["The <b>canonical</b> answer.", 1000],
    ]);
    expect(adapter.visible(TARGET)).toEqual(["The <b>canonical</b> answer."]);
    expect(await repo.show("run_f:stream")).toMatchObject({
      state: "delivered",
      final: true,
      markdown: "The **canonical** answer.",
      receipt: { messageIds: ["100"] },
    });
    await settled(reply.stream);
  });

  test("attempt-reset withdraws the attempt's text back to the last checkpoint", async () => {
    const { clock, adapter, run } = await setup();
    const reply = run("run_r");
    reply.delta("Step one.");
    reply.checkpoint("Step one.");
    await settle();
    reply.delta(" A wrong turn");
    await clock.advance(1000);
    expect(adapter.visible(TARGET)).toEqual(["Step one. A wrong turn"]);
    reply.reset();
    await clock.advance(1000);
    expect(adapter.visible(TARGET)).toEqual(["Step one."]);
    reply.finish("completed", "Step one, done.");
    await clock.runUntil(() => adapter.visible(TARGET)[0] === "Step one, done.", "first run finished");

    const empty = run("run_r2");
    empty.delta("Withdrawn entirely");
    await clock.advance(1);
    empty.reset();
    await clock.advance(1000);
    expect(adapter.visible(TARGET)).toEqual(["Step one, done.", "…"]);
  });

  test("a superseded run's partial messages are deleted", async () => {
    const { clock, adapter, repo, run } = await setup({ limits: { maxMessageChars: 40 } });
    const reply = run("run_sup");
    reply.delta("First paragraph is here.\n\nSecond paragraph is here.");
    await settle();
    expect(adapter.visible(TARGET)).toHaveLength(2);
    reply.finish("superseded", "First paragraph is here.");
    await clock.runUntil(() => adapter.visible(TARGET).length === 0, "partial messages deleted");
    await settle();
    expect(adapter.callsOf("delete").map((c) => c.messageId)).toEqual(["101", "100"]);
    expect(await repo.show("run_sup:stream")).toMatchObject({
      state: "delivered",
      receipt: { messageIds: [] },
    });
  });

  test("an interrupted run is finalised with a visible (stopped) mark", async () => {
    const { clock, adapter, run } = await setup();
    const reply = run("run_int");
    reply.delta("Half of the");
    await settle();
    reply.finish("interrupted", "Half of the");
    await clock.runUntil(() => edits(adapter).length === 1, "the final edit");
    expect(adapter.visible(TARGET)).toEqual(["Half of the (stopped)"]);
  });

  test("a failed preview send hands the record to the worker, which delivers the final text once", async () => {
    const { clock, adapter, repo, run } = await setup();
    adapter.fail("send", unavailable());
    const reply = run("run_fail");
    reply.delta("Hello");
    await settle();
    expect(await repo.show("run_fail:stream")).toMatchObject({ state: "pending", final: false });
    reply.delta(" there");
    await clock.advance(5000);
    expect(adapter.visible(TARGET)).toEqual([]);
    reply.finish("completed", "Hello there");
    await clock.runUntil(() => adapter.visible(TARGET).length === 1, "final text sent by the worker");
    expect(adapter.visible(TARGET)).toEqual(["Hello there"]);
    expect((await repo.show("run_fail:stream"))?.state).toBe("delivered");
  });
});

describe("platform capabilities", () => {
  test("rejected rich markup switches the stream to plain text for its remaining edits", async () => {
    const { clock, adapter, repo, run } = await setup();
    adapter.fail("send", formattingRejected());
    const reply = run("run_plain");
    reply.delta("Some **bold** text");
    await settle();
    expect(adapter.calls.map((c) => [c.op, c.format, c.outcome])).toEqual([
      ["send", "rich", "error"],
      ["send", "plain", "ok"],
    ]);
    reply.finish("completed", "Some **bold** text, done");
    await clock.runUntil(() => edits(adapter).length === 1, "final edit");
    expect(adapter.visible(TARGET)).toEqual(["Some bold text, done"]);
    expect(await repo.show("run_plain:stream")).toMatchObject({ state: "delivered", format: "plain" });
  });

  test("without edit support nothing is previewed and the answer arrives as one message", async () => {
    const { adapter, repo, run } = await setup({ without: ["edit"] });
    const reply = run("run_noedit");
    reply.delta("partial");
    await settle();
    expect(adapter.calls).toEqual([]);
    reply.finish("completed", "the whole answer");
    await settle();
    expect(adapter.visible(TARGET)).toEqual(["the whole answer"]);
    expect(await repo.show("run_noedit:0")).toMatchObject({ kind: "message", state: "delivered" });
  });
});

describe("order and races with the terminal commit", () => {
  test("a stream behind an undelivered answer does not preview; its final text follows in order", async () => {
    const { clock, adapter, repo, worker, run } = await setup();
    adapter.fail("send", unavailable());
    await repo.insert([messageInsert(TARGET, "earlier answer")], clock.now());
    worker.notify();
    await settle();
    const reply = run("run_q");
    reply.delta("later answer, streaming");
    await settle();
    expect(adapter.visible(TARGET)).toEqual([]);
    reply.finish("completed", "later answer");
    await clock.runUntil(() => adapter.visible(TARGET).length === 2, "both answers");
    expect(adapter.visible(TARGET)).toEqual(["earlier answer", "later answer"]);
    expect(edits(adapter)).toEqual([]);
  });

  test("when the terminal commit wins the race, the late stream opens nothing: one answer", async () => {
    const { adapter, repo, worker, run, commitAnswer } = await setup();
    expect(commitAnswer("run_race", "completed", "the answer")).toBe("enqueued");
    worker.notify();
    const reply = run("run_race");
    reply.delta("the ans");
    await settle();
    expect(adapter.visible(TARGET)).toEqual(["the answer"]);
    expect(await repo.show("run_race:stream")).toBeNull();
    await settled(reply.stream);
  });
});

describe("recovery", () => {
  test("after a crash mid-stream, the partial messages are edited to the final text, not sent again", async () => {
    const first = await setup({ limits: { maxMessageChars: 40 } });
    const reply = first.run("run_crash");
    reply.delta("First paragraph is here.");
    await settle();
    expect(first.adapter.visible(TARGET)).toEqual(["First paragraph is here."]);
    running.splice(running.indexOf(first.worker), 1); // the process dies mid-stream

    const second = await setup({ limits: { maxMessageChars: 40 }, firstMessageId: 500 });
    second.adapter.sharePlatformWith(first.adapter);
    const id = (await second.repo.show("run_crash:stream"))!.id;
    expect(second.recovery.resumedStreams).toEqual([id]);
    // Not final yet: the worker waits for the run, the chat still shows the partial text.
    await settle();
    expect(second.adapter.calls).toEqual([]);

    // The restarted runtime finishes the run; its terminal commit finalises the stream record.
    expect(
      second.commitAnswer("run_crash", "completed", "First paragraph, final.\n\nAnd a second one."),
    ).toBe("stream-finalized");
    second.worker.notify();
    await settle();
    expect(second.adapter.visible(TARGET)).toEqual(["First paragraph, final.", "And a second one."]);
    expect(second.adapter.callsOf("edit").map((c) => c.messageId)).toEqual(["100"]);
    expect(second.adapter.callsOf("send").map((c) => c.text)).toEqual(["And a second one."]);
    expect(await second.repo.show("run_crash:stream")).toMatchObject({
      state: "delivered",
      receipt: { messageIds: ["100", "500"] },
    });
  });
});
