import { describe, expect, test } from "bun:test";
import { SwitchboardError } from "../../src/errors.ts";
import { type AdmitRequest, isSettledUpdate, type RunRecord } from "../../src/runtime/store.ts";
import type { MessagePart } from "../../src/runtime/types.ts";
import { admission } from "../../src/store/admission.ts";
import {
  absorbedRuns,
  acquisition,
  admitted,
  cancelsApprovals,
  checkFence,
  coalescingTarget,
  mayAbsorb,
  nextRunnable,
  planAdmission,
  priorDuplicate,
  purgeRefusal,
  receiptDuplicate,
  releasedState,
  stopDecision,
  summaryConflict,
  terminalEvent,
  withAlwaysAllowed,
} from "../../src/store/rules.ts";

const T0 = 1_700_000_000_000;

function run(id: string, overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    id,
    conversationId: "c",
    state: "queued",
    priority: "normal",
    policy: "queue",
    queueSeq: 1,
    inputMessageIds: [`in-${id}`],
    assistantMessageId: `out-${id}`,
    owner: null,
    fencingToken: 0,
    leaseExpiresAtMs: null,
    stopReason: null,
    steps: 0,
    usage: {},
    costComplete: true,
    absorbedInto: null,
    error: null,
    context: null,
    createdAtMs: T0,
    startedAtMs: null,
    finishedAtMs: null,
    ...overrides,
  };
}

const held = (id: string, leaseExpiresAtMs: number, overrides: Partial<RunRecord> = {}) =>
  run(id, { state: "running", owner: "w", fencingToken: 1, leaseExpiresAtMs, startedAtMs: T0, ...overrides });

const request = (policy: AdmitRequest["policy"], coalescePending = false) => ({ policy, coalescePending });

describe("policy effects at admission", () => {
  test("queue and inject touch no earlier run", () => {
    const active = [held("a", T0 + 10), run("b")];
    for (const policy of ["queue", "inject"] as const) {
      expect(planAdmission(request(policy), active)).toEqual({ effects: [], join: null, priority: "normal" });
    }
  });

  test("supersede ends queued runs and asks owned ones to stop, in durable order", () => {
    const b = run("b");
    const a = held("a", T0 + 10);
    const asked = held("x", T0 + 10, { state: "interrupt_requested", stopReason: "interrupted" });
    expect(planAdmission(request("supersede", true), [b, a, asked]).effects).toEqual([
      { kind: "supersede", run: b },
      { kind: "stop", run: a, reason: "superseded", announce: true },
      { kind: "stop", run: asked, reason: "superseded", announce: false },
    ]);
  });

  test("interrupt leaves queued runs alone; a run already stopping as superseded keeps that reason", () => {
    const a = held("a", T0 + 10, { state: "interrupt_requested", stopReason: "superseded" });
    const plan = planAdmission(request("interrupt"), [a, run("b")]);
    expect(plan.effects).toEqual([{ kind: "stop", run: a, reason: "superseded", announce: false }]);
  });

  test("interrupt-next is urgent and never coalesces", () => {
    const plan = planAdmission(request("interrupt-next", true), [run("b")]);
    expect(plan).toMatchObject({ join: null, priority: "urgent" });
  });
});

describe("coalescing", () => {
  test("joins the first ordinary queued run that has not started", () => {
    const target = run("c");
    const active = [
      held("a", T0 + 10),
      run("u", { priority: "urgent" }),
      run("i", { policy: "inject" }),
      run("s", { steps: 1 }),
      run("r", { startedAtMs: T0 }),
      target,
    ];
    expect(planAdmission(request("queue", true), active).join).toBe(target);
    expect(planAdmission(request("queue", false), active).join).toBeNull();
  });

  test("never joins a run this admission superseded", () => {
    expect(coalescingTarget([run("a")], request("queue", true), ["a"])).toBeUndefined();
  });

  test("the result names the joined run's stops and supersessions", () => {
    const plan = planAdmission(request("supersede"), [held("a", T0 + 10), run("b")]);
    const landed = { conversationId: "c", runId: "n", inputMessageId: "m", version: 3, seq: 4 };
    expect(admitted(plan, landed)).toEqual({
      outcome: "admitted",
      ...landed,
      stopRequested: [{ runId: "a", reason: "superseded" }],
      superseded: ["b"],
      cancelledApprovals: [],
    });
    expect(admitted(planAdmission(request("queue", true), [run("b")]), landed).outcome).toBe("coalesced");
  });
});

describe("duplicates", () => {
  test("an ingress receipt without a run (a command, an ignored update) is no duplicate", () => {
    const ingress = { source: "telegram:bot", key: "7" };
    expect(receiptDuplicate(null, ingress)).toBeNull();
    expect(
      receiptDuplicate(
        { conversation_id: "c", run_id: null, input_message_id: null, outcome: "command" },
        ingress,
      ),
    ).toBeNull();
    expect(
      receiptDuplicate(
        { conversation_id: "c", run_id: "r", input_message_id: "m", outcome: "admitted" },
        ingress,
      ),
    ).toEqual({
      outcome: "duplicate",
      conversationId: "c",
      runId: "r",
      inputMessageId: "m",
    });
  });

  test("a receipt a purge kept refuses its update for good, as a purged update", () => {
    const purged = { conversation_id: null, run_id: null, input_message_id: null, outcome: "purged" };
    let thrown: unknown;
    try {
      receiptDuplicate(purged, { source: "telegram:bot", key: "7" });
    } catch (error) {
      thrown = error;
    }
    expect(isSettledUpdate(thrown)).toBe(true);
    expect(thrown).toMatchObject({
      code: "conversation_purged",
      message: expect.stringContaining("Update 7"),
    });
    // Another input to a purged conversation is refused too, but is no redelivered update.
    expect(isSettledUpdate(new SwitchboardError("conversation_purged", "Conversation c was purged"))).toBe(
      false,
    );
  });

  test("a receipt a refusal wrote keeps its update refused, whatever it would meet now", () => {
    for (const outcome of ["refused:flood", "refused:pairing", "refused:budget"]) {
      const refused = { conversation_id: "c", run_id: null, input_message_id: null, outcome };
      let thrown: unknown;
      try {
        receiptDuplicate(refused, { source: "telegram:bot", key: "8" });
      } catch (error) {
        thrown = error;
      }
      expect(isSettledUpdate(thrown)).toBe(true);
      expect(thrown).toMatchObject({ code: "update_refused", message: expect.stringContaining(outcome) });
    }
    // A receipt of a command (no run) is no refusal: the command path answers its repeats.
    const command = { conversation_id: "c", run_id: null, input_message_id: null, outcome: "command" };
    expect(receiptDuplicate(command, { source: "telegram:bot", key: "9" })).toBeNull();
  });

  test("a reused idempotency key with other input is a typed conflict", () => {
    const prior = { fingerprint: "fp", run_id: "r", id: "m" };
    expect(priorDuplicate(prior, { idempotencyKey: "k", fingerprint: "fp" }, "c")).toMatchObject({
      runId: "r",
    });
    expect(() => priorDuplicate(prior, { idempotencyKey: "k", fingerprint: "other" }, "c")).toThrow(
      expect.objectContaining({ code: "idempotency_conflict" }),
    );
    expect(priorDuplicate(null, { idempotencyKey: "k", fingerprint: "fp" }, "c")).toBeNull();
  });
});

describe("run-state transitions", () => {
  test("a queued run is acquired unless another run of its conversation holds a live lease", () => {
    const queued = run("b", { fencingToken: 2 });
    expect(acquisition(queued, [held("a", T0 + 10), queued], T0)).toBeNull();
    expect(acquisition(queued, [held("a", T0), queued], T0)).toEqual({ state: "running", fencingToken: 3 });
  });

  test("an owned run is taken over only after its lease expired, keeping a pending stop", () => {
    expect(acquisition(held("a", T0 + 1), [], T0)).toBeNull();
    expect(acquisition(held("a", T0), [], T0)).toEqual({ state: "running", fencingToken: 2 });
    const stopping = held("a", T0, { state: "interrupt_requested" });
    expect(acquisition(stopping, [], T0)).toEqual({ state: "interrupt_requested", fencingToken: 2 });
    expect(acquisition(run("done", { state: "completed" }), [], T0)).toBeNull();
  });

  test("a stop request ends a queued run, asks an owned one, and ignores a finished one", () => {
    expect(stopDecision(run("a"), "interrupted")).toEqual({ kind: "end", state: "cancelled" });
    expect(stopDecision(run("a"), "superseded")).toEqual({ kind: "end", state: "superseded" });
    expect(stopDecision(held("a", T0), "interrupted")).toEqual({ kind: "request", mark: true });
    expect(stopDecision(held("a", T0, { state: "interrupt_requested" }), "timeout")).toEqual({
      kind: "request",
      mark: false,
    });
    expect(stopDecision(run("a", { state: "failed" }), "interrupted")).toEqual({ kind: "not_active" });
    expect(stopDecision(null, "interrupted")).toEqual({ kind: "not_active" });
  });

  test("a released run queues again; a pending stop request survives the release", () => {
    expect(releasedState(held("a", T0))).toBe("queued");
    expect(releasedState(held("a", T0, { state: "interrupt_requested" }))).toBe("interrupt_requested");
  });
});

describe("fencing and the terminal race", () => {
  const fence = { runId: "a", fencingToken: 1 };

  test("writes pass only under the current token of a run still owned", () => {
    expect(checkFence(held("a", T0), fence).id).toBe("a");
    for (const stale of [null, held("a", T0, { fencingToken: 2 }), held("a", T0, { state: "completed" })]) {
      expect(() => checkFence(stale, fence)).toThrow(expect.objectContaining({ code: "fence_lost" }));
    }
  });

  test("only a completed answer absorbs, and only inject runs whose every input joined it", () => {
    const parts: MessagePart[] = [
      { type: "joined-input", messageId: "in-b" },
      { type: "text", text: "answer" },
    ];
    const b = run("b", { policy: "inject" });
    const partly = run("p", { policy: "inject", inputMessageIds: ["in-b", "in-p"] });
    const queue = run("q", { inputMessageIds: ["in-b"] });
    expect(absorbedRuns("completed", parts, [b, partly, queue])).toEqual([b]);
    expect(absorbedRuns("interrupted", parts, [b])).toEqual([]);
    expect(mayAbsorb("completed", parts)).toBe(true);
    expect(mayAbsorb("completed", [{ type: "text", text: "x" }])).toBe(false);
    expect(mayAbsorb("failed", parts)).toBe(false);
  });

  test("the terminal event carries the answer's text, usage and, when set, error and absorber", () => {
    const parts: MessagePart[] = [
      { type: "reasoning", text: "hm" },
      { type: "text", text: "hi" },
    ];
    expect(terminalEvent(run("a"), "failed", parts, { usage: { outputTokens: 2 }, error: "boom" })).toEqual({
      type: "terminal",
      conversationId: "c",
      runId: "a",
      state: "failed",
      text: "hi",
      usage: { outputTokens: 2 },
      error: "boom",
    });
    expect(terminalEvent(run("b"), "absorbed", [], { usage: {}, absorbedInto: "a" })).toMatchObject({
      absorbedInto: "a",
      text: "",
    });
  });
});

describe("recovery ordering", () => {
  test("a held run blocks its conversation until its lease expires, then resumes first", () => {
    const a = held("a", T0 + 10);
    const u = run("u", { priority: "urgent" });
    expect(nextRunnable([a, run("b"), u], T0)).toBeNull();
    expect(nextRunnable([a, run("b"), u], T0 + 10)).toBe(a);
  });

  test("then urgent runs first, then ordinary ones, each in durable order", () => {
    const b = run("b");
    const u1 = run("u1", { priority: "urgent" });
    const u2 = run("u2", { priority: "urgent" });
    expect(nextRunnable([b, u1, u2], T0)).toBe(u1);
    expect(nextRunnable([b], T0)).toBe(b);
    expect(nextRunnable([], T0)).toBeNull();
  });
});

describe("purge refusals", () => {
  test("active runs refuse first, then a stale expected version; otherwise purge", () => {
    expect(purgeRefusal(["a"], 1, 2)).toEqual({ outcome: "active", runIds: ["a"] });
    expect(purgeRefusal([], 1, 2)).toEqual({ outcome: "conflict", actualVersion: 2 });
    expect(purgeRefusal([], 2, 2)).toBeNull();
    expect(purgeRefusal([], undefined, 7)).toBeNull();
  });
});

describe("summary compare-and-set", () => {
  test("a save must name the current version and move the summary forward", () => {
    expect(summaryConflict(null, { expectedVersion: 0, throughFinishSeq: 1 })).toBe(false);
    expect(summaryConflict(null, { expectedVersion: 1, throughFinishSeq: 1 })).toBe(true);
    const current = { version: 1, throughFinishSeq: 5 };
    expect(summaryConflict(current, { expectedVersion: 1, throughFinishSeq: 6 })).toBe(false);
    expect(summaryConflict(current, { expectedVersion: 1, throughFinishSeq: 5 })).toBe(true);
    expect(summaryConflict(current, { expectedVersion: 0, throughFinishSeq: 6 })).toBe(true);
  });
});

describe("the admission algorithm", () => {
  const base: AdmitRequest = {
    conversation: { key: "chat-1" },
    idempotencyKey: "k",
    fingerprint: "fp",
    parts: [{ type: "text", text: "hi" }],
    context: null,
    policy: "supersede",
    coalescePending: false,
    ingress: { source: "s", key: "u1", payload: {} },
    proposedIds: { runId: "new-run", messageId: "new-msg" },
    nowMs: T0,
  };

  /** Drives the algorithm with scripted answers, recording the steps it asks for. */
  function drive(answers: Record<string, unknown>, request: AdmitRequest = base) {
    const steps: string[] = [];
    const gen = admission(request);
    let next = gen.next();
    while (!next.done) {
      steps.push(next.value.name);
      next = gen.next(answers[next.value.name]);
    }
    return { steps, result: next.value };
  }

  test("a known ingress identity answers duplicate before anything else is read", () => {
    const { steps, result } = drive({
      receipt: { conversation_id: "c", run_id: "r", input_message_id: "m", outcome: "admitted" },
      version: 4,
    });
    expect(steps).toEqual(["receipt", "version"]);
    expect(result).toEqual({
      outcome: "duplicate",
      conversationId: "c",
      runId: "r",
      inputMessageId: "m",
      version: 4,
    });
  });

  test("new input: resolve, enter, check the key, apply the policy, then write run, input, receipt, event", () => {
    const { steps, result } = drive({
      receipt: null,
      resolveKey: "c",
      priorInput: null,
      activeRuns: [held("a", T0 + 10), run("b")],
      cancelApprovals: ["ap_1"],
      appendEvent: { seq: 9, version: 9 },
    });
    expect(steps).toEqual([
      "receipt",
      "resolveKey",
      "enterConversation",
      "priorInput",
      "activeRuns",
      "markStopRequested",
      "appendEvent",
      "endRun",
      "insertRun",
      "insertInput",
      "cancelApprovals",
      "recordReceipt",
      "appendEvent",
    ]);
    expect(result).toMatchObject({
      outcome: "admitted",
      runId: "new-run",
      superseded: ["b"],
      seq: 9,
      cancelledApprovals: ["ap_1"],
    });
  });

  test("a decision checks the approval first, then records it (and the always-allowed tool) with its run", () => {
    const decision = {
      approvalId: "ap_1",
      state: "approved" as const,
      decidedBy: "Alice",
      alwaysAllowTool: "notes_append",
    };
    const { steps } = drive(
      {
        priorInput: null,
        approvalState: { state: "pending", conversation_id: "c" },
        appendEvent: { seq: 1, version: 1 },
      },
      { ...base, conversation: { id: "c" }, policy: "queue", ingress: undefined, approval: decision },
    );
    expect(steps).toEqual([
      "enterConversation",
      "priorInput",
      "approvalState",
      "insertRun",
      "insertInput",
      "decideApproval",
      "allowTool",
      "appendEvent",
    ]);
  });

  test("a decision on an approval no longer pending, or of another conversation, is refused", () => {
    const request = {
      ...base,
      conversation: { id: "c" },
      policy: "queue" as const,
      ingress: undefined,
      approval: { approvalId: "ap_1", state: "denied" as const, decidedBy: "Bob" },
    };
    expect(() =>
      drive({ priorInput: null, approvalState: { state: "approved", conversation_id: "c" } }, request),
    ).toThrow("already approved");
    expect(() =>
      drive({ priorInput: null, approvalState: { state: "pending", conversation_id: "other" } }, request),
    ).toThrow("No approval ap_1");
    expect(() => drive({ priorInput: null, approvalState: null }, request)).toThrow("No approval ap_1");
  });

  test("only supersede and interrupt inputs (not decisions) cancel pending approvals", () => {
    expect(cancelsApprovals({ policy: "supersede" })).toBe(true);
    expect(cancelsApprovals({ policy: "interrupt" })).toBe(true);
    expect(cancelsApprovals({ policy: "queue" })).toBe(false);
    expect(cancelsApprovals({ policy: "inject" })).toBe(false);
    expect(
      cancelsApprovals({
        policy: "supersede",
        approval: { approvalId: "a", state: "approved", decidedBy: "x" },
      }),
    ).toBe(false);
    expect(withAlwaysAllowed({ timezone: "UTC", alwaysAllow: ["b"] }, "a")).toEqual({
      timezone: "UTC",
      alwaysAllow: ["a", "b"],
    });
    expect(withAlwaysAllowed({ alwaysAllow: ["a"] }, "a")).toEqual({ alwaysAllow: ["a"] });
  });

  test("queue without coalescing reads no earlier run", () => {
    const { steps } = drive(
      { priorInput: null, appendEvent: { seq: 1, version: 1 } },
      { ...base, conversation: { id: "c" }, policy: "queue", ingress: undefined },
    );
    expect(steps).toEqual(["enterConversation", "priorInput", "insertRun", "insertInput", "appendEvent"]);
  });
});
