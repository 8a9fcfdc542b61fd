import { afterEach, describe, expect, test } from "bun:test";
import type { ScheduleService } from "../../schedules/service.ts";
import type { SurfaceOverride } from "../../src/gateway/config/surfaces.ts";
import { planCorrection } from "../../src/gateway/correction.ts";
import type { RunRecord } from "../../src/runtime/store.ts";
import type { Turn } from "../support/llm/scripted-model.ts";
import { createHarness, type RuntimeHarness } from "../support/runtime.ts";
import { admitted, dmIngress, dmMessage, runRecord, until } from "./support/ingress.ts";

/**
 * Edits of a user's message through ingress, on a real runtime and store: before the answer an
 * edit corrects the message (the run restarts, or the queued input is replaced); after it, the
 * surface's `edits` setting decides; an edit delivered again is applied once.
 */

let harness: RuntimeHarness;
let schedules: ScheduleService;
const SOURCE = "telegram:bot1";

afterEach(async () => {
  await schedules.stop();
  await harness.close();
});

function start(dm: SurfaceOverride, script: Turn[] = [{ type: "hang" }]) {
  harness = createHarness(script);
  const started = dmIngress(harness, dm);
  schedules = started.schedules;
  return started;
}

const message = dmMessage;

/** An edit of message `messageId` (its own update key `editKey`) to `text`. */
const edit = (editKey: string, messageId: string, text: string) =>
  message(editKey, text, { messageId, edited: { messageId } });

const runOf = (runId: string) => runRecord(harness, runId);

describe("an edit before the answer is a correction", () => {
  test("supersede: the running run ends `edited` and a run for the new text answers the same message", async () => {
    const { ingress, logger } = start({ inputPolicy: "supersede" }, [
      { type: "hang" },
      { type: "text", text: "Paris." },
    ]);
    const first = admitted(await ingress(message("m1", "capital of Frnace?")));
    await harness.model.whenCalled(1);

    const corrected = admitted(await ingress(edit("edit:m1:1", "m1", "capital of France?")));
    expect(corrected.runId).not.toBe(first.runId);
    const replaced = await until(
      () => runOf(first.runId),
      (run) => run.state === "superseded",
      "the first run to end",
    );
    expect(replaced.stopReason).toBe("edited");
    const answer = await until(
      () => runOf(corrected.runId),
      (run) => run.state === "completed",
      "the corrected answer",
    );
    expect(answer.context).toMatchObject({ replyTo: "m1" });
    expect(harness.model.requests[0]?.aborted).toBe(true);
    expect(harness.model.requests[1]?.lastUserText).toBe("capital of France?");
    // The run restarted with the edited text only: the first wording is not in its prompt.
    expect(harness.model.requests[1]?.promptText).not.toContain("Frnace");
    expect(logger.records.find((r) => r.event === "ingress.corrected")).toMatchObject({
      runId: corrected.runId,
      replaced: [first.runId],
    });
  });

  test("queue: the queued input is replaced and the running answer goes on", async () => {
    const { ingress } = start({ inputPolicy: "queue" }, [
      { type: "hang" },
      { type: "text", text: "A haiku." },
    ]);
    const running = admitted(await ingress(message("m1", "write an essay")));
    await harness.model.whenCalled(1);
    const queued = admitted(await ingress(message("m2", "and a poen")));

    const corrected = admitted(await ingress(edit("edit:m2:1", "m2", "and a haiku")));
    expect(await runOf(queued.runId)).toMatchObject({ state: "cancelled", stopReason: "edited" });
    expect(await runOf(corrected.runId)).toMatchObject({ state: "queued", context: { replyTo: "m2" } });
    expect((await runOf(running.runId)).state).toBe("running");

    await harness.runtime.interrupt({ conversationId: running.conversationId, runId: running.runId });
    await until(
      () => runOf(corrected.runId),
      (run) => run.state === "completed",
      "the corrected input's answer",
    );
    expect(harness.model.requests.map((r) => r.lastUserText)).toEqual(["write an essay", "and a haiku"]);
  });

  test("a redelivered edit is applied once, and an older edit never ends a newer correction", async () => {
    const { ingress, logger } = start({ inputPolicy: "supersede" }, [
      { type: "hang" },
      { type: "hang" },
      { type: "hang" },
    ]);
    admitted(await ingress(message("m1", "helo")));
    await harness.model.whenCalled(1);
    const firstEdit = admitted(await ingress(edit("edit:m1:1", "m1", "hello")));
    await harness.model.whenCalled(2);
    const secondEdit = admitted(await ingress(edit("edit:m1:2", "m1", "hello there")));
    await until(
      () => runOf(firstEdit.runId),
      (run) => run.state === "superseded",
      "the first correction to end",
    );

    // The first edit again (a platform's redelivery): the same run, nothing more ended or admitted.
    expect(await ingress(edit("edit:m1:1", "m1", "hello"))).toMatchObject({
      kind: "duplicate",
      runId: firstEdit.runId,
    });
    expect((await runOf(secondEdit.runId)).state).not.toMatch(/superseded|cancelled/);
    const active = await harness.stores.runtime.listActiveRuns(secondEdit.conversationId);
    expect(active.map((r) => r.id)).toEqual([secondEdit.runId]);
    expect(logger.records.filter((r) => r.event === "ingress.corrected")).toHaveLength(3);
  });
});

describe("an edit after the answer follows the surface's `edits`", () => {
  for (const edits of ["ignore", "new-input"] as const) {
    test(`edits: ${edits}`, async () => {
      const { ingress } = start({ inputPolicy: "supersede", edits }, [
        { type: "text", text: "Hi." },
        { type: "text", text: "Hi again." },
      ]);
      const answered = admitted(await ingress(message("m1", "hello")));
      await until(
        () => runOf(answered.runId),
        (run) => run.state === "completed",
        "the answer",
      );
      const outcome = await ingress(edit("edit:m1:1", "m1", "hello there"));
      if (edits === "ignore") {
        expect(outcome).toEqual({ kind: "ignored", reason: "edit after the answer" });
        expect(await ingress(edit("edit:m1:1", "m1", "hello there"))).toMatchObject({ kind: "duplicate" });
        expect(harness.model.requests).toHaveLength(1);
        expect(await harness.stores.runtime.loadIngressReceipt(SOURCE, "edit:m1:1")).toMatchObject({
          outcome: "ignored:edit",
        });
      } else {
        const again = admitted(outcome);
        await until(
          () => runOf(again.runId),
          (run) => run.state === "completed",
          "the edit's answer",
        );
        expect(harness.model.requests.map((r) => r.lastUserText)).toEqual(["hello", "hello there"]);
      }
    });
  }

  test("an edit that turns the message into a command runs nothing", async () => {
    const { ingress } = start({ inputPolicy: "supersede" });
    admitted(await ingress(message("m1", "hello")));
    await harness.model.whenCalled(1);
    expect(await ingress(edit("edit:m1:1", "m1", "/new"))).toEqual({
      kind: "ignored",
      reason: "edit into a command",
    });
  });
});

describe("a delete that names the message by its platform id", () => {
  test("cancels the queued run answering it, and stops the running one", async () => {
    const { ingress } = start({ inputPolicy: "queue" });
    const running = admitted(await ingress(message("ev1", "write an essay", { messageId: "ts1" })));
    await harness.model.whenCalled(1);
    const queued = admitted(await ingress(message("ev2", "and a poem", { messageId: "ts2" })));

    const deleting = (key: string, messageId: string) =>
      message(key, "", { messageId, withdrawn: { messageId } });
    expect(await ingress(deleting("ev3", "ts2"))).toEqual({
      kind: "withdrawn",
      runId: queued.runId,
      effect: "cancelled",
    });
    expect(await runOf(queued.runId)).toMatchObject({ state: "cancelled", stopReason: "withdrawn" });
    expect(await ingress(deleting("ev3", "ts2"))).toMatchObject({ kind: "duplicate" });

    expect(await ingress(deleting("ev4", "ts1"))).toMatchObject({ runId: running.runId, effect: "stopped" });
    const stopped = await until(
      () => runOf(running.runId),
      (run) => run.state === "cancelled",
      "the running run to stop",
    );
    expect(stopped.stopReason).toBe("withdrawn");
    expect(await ingress(deleting("ev5", "ts9"))).toEqual({
      kind: "withdrawn",
      runId: null,
      effect: "unknown",
    });
  });
});

describe("planCorrection", () => {
  const run = (id: string, state: RunRecord["state"]) => ({ id, state }) as RunRecord;

  test("nothing to correct once the answer is finished", () => {
    expect(planCorrection([], "supersede")).toBeNull();
  });

  test("a queued run is always replaced; a running one only where new input interrupts", () => {
    const runs = [run("r1", "running"), run("r2", "queued")];
    expect(planCorrection(runs, "supersede")).toMatchObject({ policy: "queue", replaces: runs });
    expect(planCorrection(runs, "interrupt")).toMatchObject({ policy: "queue", replaces: runs });
    expect(planCorrection(runs, "queue")).toMatchObject({ policy: "queue", replaces: [runs[1]] });
    expect(planCorrection(runs, "inject")).toMatchObject({ policy: "inject", replaces: [runs[1]] });
    expect(planCorrection([run("r3", "queued")], "inject")).toMatchObject({ policy: "queue" });
  });
});
