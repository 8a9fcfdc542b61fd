import { describe, expect, test } from "bun:test";
import type { ChannelAdapter, ReplyStatus } from "../../channels/types.ts";
import { SwitchboardError } from "../../src/errors.ts";
import { StatusReactions, terminalStatus } from "../../src/gateway/status-reactions.ts";
import type { RunContext } from "../../src/run-context.ts";
import type { RuntimeEvent } from "../../src/runtime/events.ts";
import type { ApprovalRecord, RunRecord, RunView } from "../../src/runtime/store.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { recordingLogger } from "../support/logger.ts";

/**
 * The reaction ladder as the runtime's events and the outbox's outcomes drive it, against an
 * adapter that records each call (and refuses with a 429 when told to): which status each run
 * shows, in order, and that a rate limit pauses the channel's reactions for the wait it named.
 */

type Call = { target: string; messageId: string; status: ReplyStatus; previous: readonly ReplyStatus[] };

function setup(options: { enabled?: (context: RunContext) => boolean } = {}) {
  const calls: Call[] = [];
  const refusals: Error[] = [];
  const adapter = {
    channel: "telegram",
    account: "bot",
    async react(target: string, messageId: string, status: ReplyStatus, previous: readonly ReplyStatus[]) {
      const refusal = refusals.shift();
      if (refusal) throw refusal;
      calls.push({ target, messageId, status, previous });
    },
  } as unknown as ChannelAdapter;
  const contexts = new Map<string, RunContext>();
  /** The decided approvals of conversation c1, newest first: the run that asked, and the decision's run. */
  const decisions: Array<{ runId: string; successorRunId: string }> = [];
  const clock = new FakeClock();
  const logger = recordingLogger();
  const reactions = new StatusReactions({
    adapters: new Map([["telegram", adapter]]),
    enabled: options.enabled ?? ((context) => context.surface === "dm"),
    store: {
      loadRun: async (runId) => {
        const context = contexts.get(runId);
        return context
          ? ({ run: { id: runId, conversationId: "c1", context } as unknown as RunRecord } as RunView)
          : null;
      },
      listApprovals: async (filter) =>
        filter.conversationId === "c1"
          ? (decisions.slice(0, filter.limit) as unknown as ApprovalRecord[])
          : [],
    },
    clock,
    logger,
  });
  const run = (runId: string, replyTo: string, surface: RunContext["surface"] = "dm") =>
    contexts.set(runId, {
      channel: "telegram",
      account: "bot",
      target: "1001",
      replyTo,
      surface,
      delivery: "terminal",
      conversationKey: "tg:dm:1001",
      principal: { id: "alice" },
      origin: "user",
    });
  const admitted = (runId: string): RuntimeEvent => ({
    type: "admission",
    durable: true,
    seq: 1,
    conversationId: "c1",
    runId,
    inputMessageId: `msg-${runId}`,
    outcome: "admitted",
  });
  const ended = (runId: string, state: string): RuntimeEvent => ({
    type: "terminal",
    durable: true,
    seq: 2,
    conversationId: "c1",
    runId,
    state: state as RunRecord["state"],
    text: "",
    usage: {},
  });
  const ladder = () => calls.map((c) => `${c.messageId}:${c.previous.join("+") || "-"}>${c.status}`);
  return { reactions, run, admitted, ended, ladder, refusals, clock, logger, decisions };
}

describe("the status reaction ladder", () => {
  test("👀 on admission, ⏳ while an approval waits, 👀 again for the decision's run, ✅ once delivered", async () => {
    const { reactions, run, admitted, ended, ladder } = setup();
    run("r1", "m1");
    reactions.handle(admitted("r1"));
    await reactions.idle();
    reactions.handle(ended("r1", "awaiting_approval"));
    await reactions.idle();
    // The decision's run answers the same message.
    run("r2", "m1");
    reactions.handle(admitted("r2"));
    await reactions.idle();
    reactions.handle(ended("r2", "completed"));
    await reactions.idle();
    expect(ladder()).toEqual(["m1:->seen", "m1:seen>waiting", "m1:waiting>seen"]);
    reactions.settled("r2", true);
    await reactions.idle();
    expect(ladder().at(-1)).toBe("m1:seen>done");
    // Nothing is tracked any more.
    expect(reactions.watching).toBe(false);
  });

  test("⚠️ when the run fails, and when its answer's delivery fails or turns ambiguous", async () => {
    const { reactions, run, admitted, ended, ladder } = setup();
    run("r1", "m1");
    run("r2", "m2");
    reactions.handle(admitted("r1"));
    reactions.handle(admitted("r2"));
    reactions.handle(ended("r1", "failed"));
    reactions.handle(ended("r2", "completed"));
    await reactions.idle();
    reactions.settled("r2", false);
    await reactions.idle();
    expect(ladder().sort()).toEqual(["m1:->seen", "m1:seen>failed", "m2:->seen", "m2:seen>failed"]);
  });

  test("a delivery outcome before the answer completed changes nothing; another surface shows nothing", async () => {
    const { reactions, run, admitted, ladder } = setup();
    run("r1", "m1");
    run("g1", "m9", "group");
    reactions.handle(admitted("r1"));
    reactions.handle(admitted("g1"));
    await reactions.idle();
    // A prompt's delivery (the run still waits) is not the answer's.
    reactions.settled("r1", true);
    await reactions.idle();
    expect(ladder()).toEqual(["m1:->seen"]);
  });

  test("a 429 pauses the channel's reactions for the wait it named, without a retry", async () => {
    const { reactions, run, admitted, ended, ladder, refusals, clock, logger } = setup();
    refusals.push(
      new SwitchboardError("platform_rate_limited", "Too Many Requests", {
        retryable: true,
        retryAfterMs: 5_000,
      }),
    );
    run("r1", "m1");
    reactions.handle(admitted("r1"));
    await reactions.idle();
    reactions.handle(ended("r1", "completed"));
    await reactions.idle();
    reactions.settled("r1", true);
    await reactions.idle();
    expect(ladder()).toEqual([]);
    expect(logger.records.filter((r) => r.event === "reaction.dropped")).toHaveLength(1);

    await clock.advance(5_000);
    run("r2", "m2");
    reactions.handle(admitted("r2"));
    await reactions.idle();
    expect(ladder()).toEqual(["m2:->seen"]);
  });
});

describe("the ladder after a restart (nothing remembered)", () => {
  test("a run admitted before the restart: its next status takes away every other one", async () => {
    const { reactions, run, ended, ladder } = setup();
    run("r1", "m1");
    reactions.handle(ended("r1", "completed"));
    await reactions.idle();
    reactions.settled("r1", true);
    await reactions.idle();
    expect(ladder()).toEqual(["m1:seen+waiting+failed>done"]);
  });

  test("the decision of an approval asked before the restart: 👀 takes ⏳ away, then ✅ takes 👀", async () => {
    const { reactions, run, admitted, ended, ladder, decisions } = setup();
    decisions.push({ runId: "r1", successorRunId: "r2" });
    run("r2", "m1");
    reactions.handle(admitted("r2"));
    await reactions.idle();
    reactions.handle(ended("r2", "completed"));
    await reactions.idle();
    reactions.settled("r2", true);
    await reactions.idle();
    expect(ladder()).toEqual(["m1:waiting+done+failed>seen", "m1:seen>done"]);
  });

  test("a message first admitted after the restart shows nothing before its 👀", async () => {
    const { reactions, run, admitted, ended, ladder, decisions } = setup();
    decisions.push({ runId: "r0", successorRunId: "r1" });
    run("r3", "m3");
    reactions.handle(admitted("r3"));
    await reactions.idle();
    reactions.handle(ended("r3", "failed"));
    await reactions.idle();
    expect(ladder()).toEqual(["m3:->seen", "m3:seen>failed"]);
  });
});

test("terminalStatus: what each ending shows", () => {
  expect(terminalStatus("completed")).toBe("delivering");
  expect(terminalStatus("awaiting_approval")).toBe("waiting");
  for (const state of ["failed", "timeout", "policy_stop"]) expect(terminalStatus(state)).toBe("failed");
  for (const state of ["interrupted", "superseded", "cancelled", "absorbed"])
    expect(terminalStatus(state)).toBeNull();
});
