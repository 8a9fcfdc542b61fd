import { afterEach, describe, expect, test } from "bun:test";
import type { InboundMessage } from "../../channels/types.ts";
import type { ScheduleService } from "../../schedules/service.ts";
import { createHarness, type RuntimeHarness } from "../support/runtime.ts";
import { admitted, dmIngress, dmMessage, runRecord, until } from "./support/ingress.ts";

/**
 * A delete of a user's message through ingress, on a real runtime and store: a queued run ends
 * without a model call, a running one stops as /stop stops it, and the delete is applied once.
 */

let harness: RuntimeHarness;
let schedules: ScheduleService;
const SOURCE = "telegram:bot1";

afterEach(async () => {
  await schedules.stop();
  await harness.close();
});

function start(options: { coalescePending?: boolean } = {}) {
  harness = createHarness([{ type: "hang", text: "Thinking about " }], {
    ...(options.coalescePending ? { coalescePending: true } : {}),
  });
  const started = dmIngress(harness, { inputPolicy: "queue" });
  schedules = started.schedules;
  return started;
}

const message = dmMessage;

const deletion = (deleteKey: string, deletedKey: string, overrides: Partial<InboundMessage> = {}) =>
  message(deleteKey, "", { withdrawn: { updateKey: deletedKey }, ...overrides });

const runOf = (runId: string) => runRecord(harness, runId);

describe("a deleted message withdraws its run", () => {
  test("queued: the run is cancelled without a model call; running: it stops as /stop stops it; a redelivery changes nothing", async () => {
    const { ingress, logger } = start();
    const first = admitted(await ingress(message("m1", "write me an essay")));
    await harness.model.whenCalled(1);
    const second = admitted(await ingress(message("m2", "and a poem")));
    expect((await runOf(second.runId)).state).toBe("queued");

    // The queued one: cancelled at once, and the model never sees it.
    expect(await ingress(deletion("delete:m2", "m2"))).toEqual({
      kind: "withdrawn",
      runId: second.runId,
      effect: "cancelled",
    });
    expect(await runOf(second.runId)).toMatchObject({ state: "cancelled", stopReason: "withdrawn" });

    // The running one: stopped (what it showed retracted), and its record says why.
    expect(await ingress(deletion("delete:m1", "m1"))).toEqual({
      kind: "withdrawn",
      runId: first.runId,
      effect: "stopped",
    });
    const stopped = await until(
      () => runOf(first.runId),
      (run) => run.state === "cancelled",
      "the running run to stop",
    );
    expect(stopped.stopReason).toBe("withdrawn");
    expect(harness.model.requests).toHaveLength(1);
    expect(harness.model.requests[0]?.aborted).toBe(true);

    // Redelivered deletes are duplicates and write nothing: no event, no second stop.
    const events = await harness.stores.runtime.readEvents(first.conversationId, 0, 1000);
    expect(await ingress(deletion("delete:m2", "m2"))).toEqual({
      kind: "duplicate",
      runId: null,
      conversationId: null,
    });
    expect(await ingress(deletion("delete:m1", "m1"))).toMatchObject({ kind: "duplicate" });
    expect(await harness.stores.runtime.readEvents(first.conversationId, 0, 1000)).toEqual(events);
    expect(await harness.stores.runtime.loadIngressReceipt(SOURCE, "delete:m2")).toMatchObject({
      outcome: "withdrawn:cancelled",
      conversationId: first.conversationId,
    });
    expect(logger.records.filter((r) => r.event === "ingress.withdrawn").map((r) => r.effect)).toEqual([
      "cancelled",
      "stopped",
    ]);

    // The conversation goes on: the next message is answered.
    harness.model.push({ type: "text", text: "Here you go." });
    const third = admitted(await ingress(message("m3", "just a haiku")));
    await until(
      () => runOf(third.runId),
      (run) => run.state === "completed",
      "the next message's answer",
    );
    expect(harness.model.requests).toHaveLength(2);
  });

  test("a finished answer, an unknown message and another chat's message are left alone", async () => {
    const { ingress } = start();
    harness.model.push({ type: "text", text: "Hi." });
    // The first call hangs until stopped: stop it, so the scripted "Hi." answers the next.
    const first = admitted(await ingress(message("m1", "hello")));
    await harness.model.whenCalled(1);
    await harness.runtime.interrupt({ conversationId: first.conversationId });
    await until(
      () => runOf(first.runId),
      (run) => run.state === "interrupted",
      "the first run to stop",
    );
    const answered = admitted(await ingress(message("m2", "hello again")));
    await until(
      () => runOf(answered.runId),
      (run) => run.state === "completed",
      "the answer",
    );

    expect(await ingress(deletion("delete:m2", "m2"))).toMatchObject({
      kind: "withdrawn",
      effect: "finished",
    });
    expect(await runOf(answered.runId)).toMatchObject({ state: "completed", stopReason: null });
    expect(await ingress(deletion("delete:m9", "m9"))).toEqual({
      kind: "withdrawn",
      runId: null,
      effect: "unknown",
    });

    // A delete from another chat (another reply target and room) touches nothing.
    harness.model.push({ type: "hang" });
    const running = admitted(await ingress(message("m3", "count to a million")));
    await harness.model.whenCalled(3);
    expect(
      await ingress(deletion("delete:m3", "m3", { replyTarget: "2002", conversationKey: "tg:dm:2002" })),
    ).toEqual({
      kind: "withdrawn",
      runId: null,
      effect: "unknown",
    });
    expect((await runOf(running.runId)).state).toBe("running");
  });

  test("a queued run that took in several messages goes on when one of them is deleted", async () => {
    const { ingress, logger } = start({ coalescePending: true });
    const first = admitted(await ingress(message("m1", "first")));
    await harness.model.whenCalled(1);
    const second = admitted(await ingress(message("m2", "second")));
    const third = await ingress(message("m3", "third"));
    expect(third).toMatchObject({ kind: "admitted", runId: second.runId });

    expect(await ingress(deletion("delete:m2", "m2"))).toEqual({
      kind: "withdrawn",
      runId: second.runId,
      effect: "shared",
    });
    expect((await runOf(second.runId)).state).toBe("queued");
    expect(logger.records.find((r) => r.event === "ingress.withdraw_shared")).toMatchObject({
      runId: second.runId,
      inputs: 2,
    });
    expect((await runOf(first.runId)).state).toBe("running");
  });
});
