/**
 * Slack's assistant threads end to end, through a real gateway process (Bolt over Socket Mode,
 * then the Events API over HTTP) and the Slack emulator: a thread started gets the configured
 * suggested prompts; a message in it is an ordinary input, shows "is thinking…" while its run
 * works, is answered in the thread through the outbox, clears the status and names the thread.
 * Each thread is its own conversation: under `supersede`, a message in one thread neither
 * interrupts another thread's answer nor sees its history, and an edit corrects its own thread.
 * Without the Agents & AI Apps feature the answer still comes, with one warning in the log.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { THINKING_STATUS } from "../../channels/slack/assistant.ts";
import { postEvent, type SlackEmulator, startSlackEmulator } from "../emulators/slack/index.ts";
import type { EventCallbackBody } from "../emulators/slack/types.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";

const dir = tempDir("switchboard-e2e-slack-assistant-");
const ALICE = "U0ALICE";
const DM = "D0ALICE";
const SIGNING_SECRET = "e2e-slack-assistant-signing-secret-01";
const PROMPTS = [
  { title: "Plan my day", message: "Plan my day around my meetings" },
  { title: "What can you do?", message: "What can you do?" },
];
let llm: FakeLlmServer;

beforeAll(() => {
  llm = startFakeLlmServer();
});
beforeEach(() => llm.reset());
afterAll(async () => {
  await llm.stop();
  dir.cleanup();
});

type Transport = "socket" | "http";

function env(transport: Transport, slack: SlackEmulator, name: string): Record<string, string> {
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    dbFile: `${name}.sqlite`,
    configFile: `${name}.json`,
    surfaces: { "slack:dm": { inputPolicy: "supersede", delivery: "terminal", edits: "ignore" } },
    extra: {
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_API_URL: `${slack.url}/api`,
      SLACK_ALLOWED_USERS: ALICE,
      SLACK_ASSISTANT_PROMPTS: JSON.stringify(PROMPTS),
      ...(transport === "socket"
        ? { SLACK_APP_TOKEN: slack.appToken }
        : { SLACK_SIGNING_SECRET: SIGNING_SECRET }),
    },
  });
}

async function deliver(
  transport: Transport,
  slack: SlackEmulator,
  gateway: GatewayProcess,
  body: EventCallbackBody,
): Promise<void> {
  if (transport === "socket") {
    const envelopeId = slack.pushEvent(body);
    await slack.waitFor(() => slack.envelope(envelopeId)?.state === "acked", 10_000, "the ack");
    return;
  }
  const result = await postEvent(`${gateway.url}/slack/events`, body, {
    signingSecret: SIGNING_SECRET,
    maxRetries: 0,
  });
  expect(result.status).toBe(200);
}

const botRepliesIn = (slack: SlackEmulator, threadTs: string) =>
  slack.messages(DM).filter((m) => m.user === slack.identity.botUserId && m.threadTs === threadTs);

for (const transport of ["socket", "http"] as const) {
  const label = transport === "socket" ? "Socket Mode" : "Events API over HTTP";

  describe(`assistant threads end to end (${label})`, () => {
    let slack: SlackEmulator;
    let gateway: GatewayProcess;
    beforeAll(async () => {
      slack = startSlackEmulator();
      gateway = await startGatewayProcess(env(transport, slack, `${transport}-on`));
    }, GATEWAY_START_TIMEOUT_MS);
    afterAll(async () => {
      await gateway?.kill("SIGTERM");
      await slack?.close();
    }, GATEWAY_STOP_TIMEOUT_MS);

    test("a thread started gets the configured suggested prompts", async () => {
      const started = slack.events.assistantThreadStarted({ user: ALICE, channel: DM });
      const threadTs = (started.event.assistant_thread as { thread_ts: string }).thread_ts;
      await deliver(transport, slack, gateway, started);
      const shown = await slack.waitFor(
        () => slack.assistantThread(DM, threadTs)?.suggestedPrompts,
        10_000,
        "the suggested prompts",
      );
      expect(shown.prompts).toEqual(PROMPTS);
      expect(llm.requests().length).toBe(0);
    }, 20_000);

    test("a message: status set while the run works, answer in the thread, status cleared, title from the first message", async () => {
      llm.setRules([
        {
          match: { lastUserContains: "plan the offsite" },
          reply: { kind: "text", text: "Here is the offsite plan", chunks: 4, chunkDelayMs: 150 },
        },
      ]);
      const started = slack.events.assistantThreadStarted({ user: ALICE, channel: DM });
      const threadTs = (started.event.assistant_thread as { thread_ts: string }).thread_ts;
      await deliver(transport, slack, gateway, started);
      await deliver(
        transport,
        slack,
        gateway,
        slack.events.dm({ user: ALICE, channel: DM, threadTs, text: "Please plan the offsite for May" }),
      );
      // While the model is still answering, the thread shows the status and its new title.
      const working = await slack.waitFor(
        () => {
          const thread = slack.assistantThread(DM, threadTs);
          return thread?.status === THINKING_STATUS && thread.title !== undefined && thread;
        },
        10_000,
        "the thinking status and the title",
      );
      expect(botRepliesIn(slack, threadTs)).toHaveLength(0);
      expect(working.title).toBe("Please plan the offsite for May");

      const reply = await slack.waitFor(
        () => botRepliesIn(slack, threadTs).find((m) => m.text === "Here is the offsite plan"),
        15_000,
        "the answer in the thread",
      );
      expect(reply.threadTs).toBe(threadTs);
      const thread = await slack.waitFor(
        () => {
          const t = slack.assistantThread(DM, threadTs);
          return t?.statusCalls.length === 2 && t;
        },
        10_000,
        "the status cleared",
      );
      expect(thread.statusCalls).toEqual([THINKING_STATUS, ""]);
      expect(thread.status).toBe("");
      expect(llm.requestsContaining("plan the offsite").length).toBe(1);

      // A follow-up in the same thread keeps the first title.
      await deliver(
        transport,
        slack,
        gateway,
        slack.events.dm({ user: ALICE, channel: DM, threadTs, text: "and a second question" }),
      );
      await slack.waitFor(
        () => botRepliesIn(slack, threadTs).find((m) => m.text === "echo: and a second question"),
        15_000,
        "the follow-up's answer",
      );
      expect(slack.assistantThread(DM, threadTs)?.title).toBe("Please plan the offsite for May");
      expect(
        slack.calls("assistant.threads.setTitle").filter((c) => c.params.thread_ts === threadTs),
      ).toHaveLength(1);
    }, 40_000);

    test("each thread is its own conversation: no interrupting, no shared history, edits in their thread", async () => {
      llm.setRules([
        {
          match: { lastUserContains: "long answer in thread one" },
          reply: { kind: "text", text: "the whole long answer", chunks: 6, chunkDelayMs: 150 },
        },
        {
          match: { lastUserContains: "slow question in thread two" },
          reply: { kind: "text", text: "never finished", chunks: 10, chunkDelayMs: 200 },
        },
      ]);
      const open = async () => {
        const started = slack.events.assistantThreadStarted({ user: ALICE, channel: DM });
        await deliver(transport, slack, gateway, started);
        return (started.event.assistant_thread as { thread_ts: string }).thread_ts;
      };
      const one = await open();
      const two = await open();
      await deliver(
        transport,
        slack,
        gateway,
        slack.events.dm({ user: ALICE, channel: DM, threadTs: one, text: "a long answer in thread one" }),
      );
      await slack.waitFor(
        () => llm.requestsContaining("long answer in thread one").length === 1,
        10_000,
        "thread one's model call",
      );
      // Under supersede this would end thread one's run if the threads shared a conversation.
      const slow = slack.events.dm({
        user: ALICE,
        channel: DM,
        threadTs: two,
        text: "a slow question in thread two",
      });
      await deliver(transport, slack, gateway, slow);
      await slack.waitFor(
        () => llm.requestsContaining("slow question in thread two").length === 1,
        10_000,
        "thread two's model call",
      );
      // An edit of thread two's message while it is answered restarts thread two's run only.
      await deliver(
        transport,
        slack,
        gateway,
        slack.events.messageChanged({
          channel: DM,
          channelType: "im",
          user: ALICE,
          ts: String(slow.event.ts),
          threadTs: two,
          previousText: "a slow question in thread two",
          newText: "a corrected question in thread two",
        }),
      );
      await slack.waitFor(
        () => botRepliesIn(slack, two).find((m) => m.text === "echo: a corrected question in thread two"),
        15_000,
        "the corrected answer in thread two",
      );
      await slack.waitFor(
        () => botRepliesIn(slack, one).find((m) => m.text === "the whole long answer"),
        15_000,
        "thread one's whole answer",
      );
      expect(botRepliesIn(slack, one).map((m) => m.text)).toEqual(["the whole long answer"]);
      expect(botRepliesIn(slack, two).map((m) => m.text)).toEqual([
        "echo: a corrected question in thread two",
      ]);
      const corrected = llm.requestsContaining("corrected question in thread two");
      expect(corrected).toHaveLength(1);
      const history = JSON.stringify(corrected[0]!.messages);
      expect(history).not.toContain("thread one");
      // Each thread is titled from its own first message.
      expect(slack.assistantThread(DM, one)?.title).toBe("a long answer in thread one");
      expect(slack.assistantThread(DM, two)?.title).toBe("a slow question in thread two");
    }, 40_000);

    test("a redelivered message and one from a user not allowed: no second answer, no status, no title", async () => {
      llm.setRules([
        {
          match: { lastUserContains: "only once please" },
          reply: { kind: "text", text: "echo: only once please", chunks: 4, chunkDelayMs: 100 },
        },
      ]);
      const started = slack.events.assistantThreadStarted({ user: ALICE, channel: DM });
      const threadTs = (started.event.assistant_thread as { thread_ts: string }).thread_ts;
      await deliver(transport, slack, gateway, started);
      const message = slack.events.dm({ user: ALICE, channel: DM, threadTs, text: "only once please" });
      await deliver(transport, slack, gateway, message);
      await slack.waitFor(
        () => botRepliesIn(slack, threadTs).find((m) => m.text === "echo: only once please"),
        15_000,
        "the answer",
      );
      await deliver(transport, slack, gateway, message);

      const strangerDm = "D0MALLORY";
      const strangerStarted = slack.events.assistantThreadStarted({ user: "U0MALLORY", channel: strangerDm });
      const strangerTs = (strangerStarted.event.assistant_thread as { thread_ts: string }).thread_ts;
      await deliver(transport, slack, gateway, strangerStarted);
      await deliver(
        transport,
        slack,
        gateway,
        slack.events.dm({ user: "U0MALLORY", channel: strangerDm, threadTs: strangerTs, text: "let me in" }),
      );
      // The acknowledgements came after ingress decided, and a status would follow admission at once.
      await slack.waitFor(
        () => slack.assistantThread(DM, threadTs)?.statusCalls.length === 2,
        10_000,
        "the first message's status set and cleared",
      );
      expect(llm.requestsContaining("only once please")).toHaveLength(1);
      expect(llm.requestsContaining("let me in")).toHaveLength(0);
      expect(botRepliesIn(slack, threadTs)).toHaveLength(1);
      expect(slack.assistantThread(DM, threadTs)?.statusCalls).toEqual([THINKING_STATUS, ""]);
      const stranger = slack.assistantThread(strangerDm, strangerTs);
      expect(stranger?.statusCalls ?? []).toEqual([]);
      expect(stranger?.title).toBeUndefined();
    }, 40_000);
  });

  describe(`assistant threads without the feature (${label})`, () => {
    let slack: SlackEmulator;
    let gateway: GatewayProcess;
    beforeAll(async () => {
      slack = startSlackEmulator({ assistantThreads: false });
      gateway = await startGatewayProcess(env(transport, slack, `${transport}-off`));
    }, GATEWAY_START_TIMEOUT_MS);
    afterAll(async () => {
      await gateway?.kill("SIGTERM");
      await slack?.close();
    }, GATEWAY_STOP_TIMEOUT_MS);

    test("no error reaches the user, every answer is delivered, the log has one warning", async () => {
      const started = slack.events.assistantThreadStarted({ user: ALICE, channel: DM });
      const threadTs = (started.event.assistant_thread as { thread_ts: string }).thread_ts;
      await deliver(transport, slack, gateway, started);
      for (const text of ["first without the feature", "second without the feature"]) {
        await deliver(
          transport,
          slack,
          gateway,
          slack.events.dm({ user: ALICE, channel: DM, threadTs, text }),
        );
        await slack.waitFor(
          () => botRepliesIn(slack, threadTs).find((m) => m.text === `echo: ${text}`),
          15_000,
          `the answer to "${text}"`,
        );
      }
      expect(botRepliesIn(slack, threadTs).map((m) => m.text)).toEqual([
        "echo: first without the feature",
        "echo: second without the feature",
      ]);
      expect(slack.ephemeralMessages()).toEqual([]);
      const refused = slack.calls().filter((c) => c.method.startsWith("assistant.threads."));
      expect(refused.map((c) => c.error)).toEqual(["missing_scope"]);
      const warnings = gateway.events().filter((e) => e.event === "slack.assistant_unavailable");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: "warn", slackError: "missing_scope" });
    }, 40_000);
  });
}
