/**
 * Slack's assistant threads through the real adapter (Bolt's Assistant) and the emulator, over
 * Socket Mode and the Events API: prompts when a thread starts, "is thinking…" from admission to
 * the answer, the title from the first message, and a clean fallback when the app lacks the
 * feature.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createSlackAdapter, type SlackAdapter } from "../../../channels/slack/adapter.ts";
import {
  MAX_THINKING_MS,
  MAX_TITLE_CHARS,
  STATUS_REFRESH_MS,
  THINKING_STATUS,
  threadTitle,
} from "../../../channels/slack/assistant.ts";
import { DEFAULT_ASSISTANT_PROMPTS } from "../../../channels/slack/config.ts";
import type { IngressOutcome } from "../../../channels/types.ts";
import {
  type EventCallbackBody,
  postEvent,
  type SlackEmulator,
  startSlackEmulator,
} from "../../emulators/slack/index.ts";
import { FakeClock, settle } from "../../support/fake-clock.ts";
import { recordingIngress, recordingLogger, serveRoutes } from "./helpers.ts";

const signingSecret = "test-signing-secret-assistant-0123";
const ALICE = "U0ALICE";
const DM = "D0ALICE";

interface Side {
  emulator: SlackEmulator;
  adapter: SlackAdapter;
  ingress: ReturnType<typeof recordingIngress>;
  logger: ReturnType<typeof recordingLogger>;
  /** Delivers one event as the transport does and resolves once Slack would count it acknowledged. */
  deliver(body: EventCallbackBody): Promise<void>;
  stop(): Promise<void>;
}

const sides: Side[] = [];
afterEach(async () => {
  for (const side of sides.splice(0)) await side.stop();
});

async function startSide(
  transport: "socket" | "http",
  options: {
    feature?: boolean;
    prompts?: Array<{ title: string; message: string }>;
    decide?: () => IngressOutcome | Promise<IngressOutcome>;
    clock?: FakeClock;
  } = {},
): Promise<Side> {
  const emulator = startSlackEmulator({ assistantThreads: options.feature ?? true, redeliveryDelayMs: 2000 });
  const logger = recordingLogger();
  const common = {
    botToken: emulator.botToken,
    apiUrl: emulator.apiUrl,
    requestTimeoutMs: 2000,
    ...(options.prompts ? { assistantPrompts: options.prompts } : {}),
  };
  const adapter = createSlackAdapter(
    transport === "socket"
      ? { mode: "socket", appToken: emulator.appToken, ...common }
      : { mode: "http", signingSecret, ...common },
    { logger, ...(options.clock ? { clock: options.clock } : {}) },
  );
  // As ingress does: the first message of each conversation (each thread's) began it.
  const begun = new Set<string>();
  const ingress = recordingIngress(
    options.decide ??
      ((message) => {
        const startsConversation = !begun.has(message.conversationKey);
        begun.add(message.conversationKey);
        return { kind: "admitted", runId: "run_1", conversationId: "conv_1", startsConversation };
      }),
  );
  await adapter.start(ingress);
  const server = transport === "http" ? serveRoutes(adapter.routes()) : null;
  const side: Side = {
    emulator,
    adapter,
    ingress,
    logger,
    async deliver(body) {
      if (server === null) {
        const envelopeId = emulator.pushEvent(body);
        await emulator.waitFor(() => emulator.envelope(envelopeId)?.state === "acked", 3000, "the ack");
      } else {
        const result = await postEvent(`${server.url}/slack/events`, body, { signingSecret, maxRetries: 0 });
        expect(result.status).toBe(200);
      }
    },
    async stop() {
      await adapter.stop();
      await server?.stop();
      await emulator.close();
    },
  };
  sides.push(side);
  return side;
}

/** Opens a thread in Alice's DM with the app; its ts. */
async function openThread(side: Side): Promise<string> {
  const started = side.emulator.events.assistantThreadStarted({ user: ALICE, channel: DM });
  await side.deliver(started);
  return (started.event.assistant_thread as { thread_ts: string }).thread_ts;
}

const say = (side: Side, threadTs: string, text: string) =>
  side.deliver(side.emulator.events.dm({ user: ALICE, channel: DM, text, threadTs }));

const answer = (side: Side, threadTs: string, text: string) =>
  side.adapter.send(`${DM}:${threadTs}`, { text, format: "plain", idempotencyKey: `k-${text}` });

describe("threadTitle", () => {
  test("the first message's text, markup reduced, whitespace collapsed", () => {
    expect(threadTitle("  Plan   my\nday  ")).toBe("Plan my day");
    expect(threadTitle("ask <@U0BOB> about <https://example.com|the page>")).toBe("ask about the page");
    expect(threadTitle("see <https://example.com>")).toBe("see https://example.com");
    expect(threadTitle(" \n ")).toBeNull();
  });

  test("long text is cut at a word, within the limit, with an ellipsis", () => {
    const title = threadTitle("word ".repeat(40))!;
    expect(title.length).toBeLessThanOrEqual(MAX_TITLE_CHARS);
    expect(title).toEndWith("word…");
  });
});

for (const transport of ["socket", "http"] as const) {
  describe(`assistant threads (${transport === "socket" ? "Socket Mode" : "Events API over HTTP"})`, () => {
    test("a thread started gets the configured suggested prompts; the event reaches no ingress", async () => {
      const prompts = [{ title: "Plan", message: "Plan my day" }];
      const side = await startSide(transport, { prompts });
      const threadTs = await openThread(side);
      const thread = await side.emulator.waitFor(
        () => side.emulator.assistantThread(DM, threadTs)?.suggestedPrompts,
        2000,
        "the suggested prompts",
      );
      expect(thread.prompts).toEqual(prompts);
      expect(side.ingress.messages).toHaveLength(0);
      await side.deliver(
        side.emulator.events.assistantThreadContextChanged({ user: ALICE, channel: DM, threadTs }),
      );
      expect(side.ingress.messages).toHaveLength(0);
    }, 10_000);

    test("a message: an ordinary input; status set, answer in the thread, status cleared, title from the first message", async () => {
      const side = await startSide(transport);
      const threadTs = await openThread(side);
      await say(side, threadTs, "Plan my day around three meetings");
      expect(side.ingress.messages).toHaveLength(1);
      expect(side.ingress.messages[0]).toMatchObject({
        replyTarget: `${DM}:${threadTs}`,
        surface: "dm",
        text: "Plan my day around three meetings",
      });
      const thread = await side.emulator.waitFor(
        () => {
          const t = side.emulator.assistantThread(DM, threadTs);
          return t?.status === THINKING_STATUS && t.title !== undefined && t;
        },
        2000,
        "the thinking status and the title",
      );
      expect(thread.title).toBe("Plan my day around three meetings");
      expect(thread.suggestedPrompts?.prompts).toEqual([...DEFAULT_ASSISTANT_PROMPTS]);

      await answer(side, threadTs, "Here is your plan");
      const reply = side.emulator.messages(DM).find((m) => m.text === "Here is your plan");
      expect(reply?.threadTs).toBe(threadTs);
      await side.adapter.stop(); // waits for the assistant calls under way
      expect(side.emulator.assistantThread(DM, threadTs)?.statusCalls).toEqual([THINKING_STATUS, ""]);
      expect(side.emulator.assistantThread(DM, threadTs)?.status).toBe("");
    }, 10_000);

    test("a follow-up keeps the first title; a message ingress did not admit shows no status", async () => {
      let outcome: IngressOutcome = {
        kind: "admitted",
        runId: "run_1",
        conversationId: "conv_1",
        startsConversation: true,
      };
      const side = await startSide(transport, { decide: () => outcome });
      const threadTs = await openThread(side);
      await say(side, threadTs, "first question");
      await answer(side, threadTs, "first answer");
      outcome = { kind: "admitted", runId: "run_2", conversationId: "conv_1" };
      await say(side, threadTs, "second question");
      await answer(side, threadTs, "second answer");
      outcome = { kind: "ignored", reason: "user not allowed" };
      await say(side, threadTs, "not taken");
      await side.adapter.stop();
      const thread = side.emulator.assistantThread(DM, threadTs);
      expect(thread?.title).toBe("first question");
      expect(side.emulator.calls("assistant.threads.setTitle")).toHaveLength(1);
      expect(thread?.statusCalls).toEqual([THINKING_STATUS, "", THINKING_STATUS, ""]);
    }, 10_000);

    test("the title is decided by ingress, not by memory: after a restart, a thread is named by the message that began its conversation and by no later one", async () => {
      // The threads started before this adapter did (no assistant_thread_started seen here).
      const side = await startSide(transport);
      const begunBefore = "1700000001.000100";
      const begunNow = "1700000002.000100";
      await say(side, begunNow, "first words after the restart");
      await say(side, begunNow, "second words");
      await side.adapter.stop();
      expect(side.emulator.assistantThread(DM, begunNow)?.title).toBe("first words after the restart");
      expect(side.emulator.calls("assistant.threads.setTitle")).toHaveLength(1);

      let outcome: IngressOutcome = { kind: "admitted", runId: "run_1", conversationId: "conv_1" };
      const later = await startSide(transport, { decide: () => outcome });
      await say(later, begunBefore, "a follow-up after the restart");
      outcome = { kind: "duplicate", runId: "run_0", conversationId: "conv_1" };
      await say(later, begunBefore, "a redelivered first message");
      await later.adapter.stop();
      expect(later.emulator.calls("assistant.threads.setTitle")).toHaveLength(0);
      expect(later.emulator.assistantThread(DM, begunBefore)?.statusCalls).toEqual([THINKING_STATUS]);
    }, 10_000);

    test("a run that ends without a message (its status reaction turns ⚠️) clears the status", async () => {
      const side = await startSide(transport);
      const threadTs = await openThread(side);
      const message = side.emulator.events.dm({ user: ALICE, channel: DM, text: "this fails", threadTs });
      await side.deliver(message);
      await side.adapter.react(`${DM}:${threadTs}`, String(message.event.ts), "failed", []);
      await side.adapter.stop();
      expect(side.emulator.assistantThread(DM, threadTs)?.statusCalls).toEqual([THINKING_STATUS, ""]);
    }, 10_000);

    test("an answer sent while ingress is still returning: no status is set after it; the title still is", async () => {
      let side: Side | undefined;
      let threadTs = "";
      side = await startSide(transport, {
        decide: async () => {
          await answer(side!, threadTs, "a quick answer");
          return { kind: "admitted", runId: "run_1", conversationId: "conv_1", startsConversation: true };
        },
      });
      threadTs = await openThread(side);
      await say(side, threadTs, "quick one");
      await side.adapter.stop();
      const thread = side.emulator.assistantThread(DM, threadTs);
      expect(thread?.statusCalls).toEqual([]);
      expect(thread?.title).toBe("quick one");
    }, 10_000);

    test("a hanging setStatus delays neither the acknowledgement nor the answer", async () => {
      const side = await startSide(transport);
      const threadTs = await openThread(side);
      side.emulator.failNext("assistant.threads.setStatus", { kind: "hang" });
      const before = performance.now();
      await say(side, threadTs, "still answered");
      await answer(side, threadTs, "answered anyway");
      expect(performance.now() - before).toBeLessThan(1000);
      expect(side.emulator.messages(DM).some((m) => m.text === "answered anyway")).toBe(true);
    }, 10_000);

    test("feature off: prompts, status and title are refused once, logged once at warn, then not tried; answers go through", async () => {
      const side = await startSide(transport, { feature: false });
      const threadTs = await openThread(side);
      await say(side, threadTs, "hello without the feature");
      await answer(side, threadTs, "answer without the feature");
      await say(side, threadTs, "again");
      await answer(side, threadTs, "second answer");
      await side.adapter.stop();
      expect(side.ingress.messages.map((m) => m.text)).toEqual(["hello without the feature", "again"]);
      expect(
        side.emulator
          .messages(DM)
          .filter((m) => m.threadTs === threadTs)
          .map((m) => m.text),
      ).toEqual(["answer without the feature", "second answer"]);
      const assistantCalls = side.emulator.calls().filter((c) => c.method.startsWith("assistant.threads."));
      expect(assistantCalls).toHaveLength(1);
      expect(assistantCalls[0]?.error).toBe("missing_scope");
      const warnings = side.logger.records.filter((r) => r.event === "slack.assistant_unavailable");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: "warn", slackError: "missing_scope", team: "T0EMULATED" });
      expect(String(warnings[0]?.hint)).toContain("assistant:write");
      expect(side.logger.lines.join("\n")).not.toContain(side.emulator.botToken);
    }, 10_000);
  });
}

describe("assistant thread status over a long run (fake clock, Socket Mode)", () => {
  const statusCalls = (side: Side, threadTs: string) =>
    side.emulator.assistantThread(DM, threadTs)?.statusCalls ?? [];

  test("the status is set again every STATUS_REFRESH_MS while the run works, and no more once answered", async () => {
    const clock = new FakeClock();
    const side = await startSide("socket", { clock });
    const threadTs = await openThread(side);
    await say(side, threadTs, "a long job");
    await side.emulator.waitFor(() => statusCalls(side, threadTs).length === 1, 2000, "the first status");
    await clock.advance(STATUS_REFRESH_MS);
    await side.emulator.waitFor(() => statusCalls(side, threadTs).length === 2, 2000, "the refreshed status");
    await clock.advance(STATUS_REFRESH_MS);
    await side.emulator.waitFor(() => statusCalls(side, threadTs).length === 3, 2000, "the second refresh");
    await answer(side, threadTs, "done at last");
    await clock.advance(STATUS_REFRESH_MS * 3);
    await settle();
    await side.adapter.stop();
    expect(statusCalls(side, threadTs)).toEqual([THINKING_STATUS, THINKING_STATUS, THINKING_STATUS, ""]);
  }, 10_000);

  test("a run whose end is never heard of stops being refreshed after MAX_THINKING_MS", async () => {
    const clock = new FakeClock();
    const side = await startSide("socket", { clock });
    const threadTs = await openThread(side);
    await say(side, threadTs, "never ends");
    await side.emulator.waitFor(() => statusCalls(side, threadTs).length === 1, 2000, "the first status");
    for (let elapsed = 0; elapsed < MAX_THINKING_MS + 3 * STATUS_REFRESH_MS; elapsed += STATUS_REFRESH_MS) {
      await clock.advance(STATUS_REFRESH_MS);
      await settle();
    }
    await side.adapter.stop();
    const refreshes = Math.floor(MAX_THINKING_MS / STATUS_REFRESH_MS);
    expect(statusCalls(side, threadTs).length).toBeLessThanOrEqual(1 + refreshes);
    expect(statusCalls(side, threadTs).length).toBeGreaterThanOrEqual(refreshes);
    expect(statusCalls(side, threadTs).every((status) => status === THINKING_STATUS)).toBe(true);
  }, 10_000);
});
