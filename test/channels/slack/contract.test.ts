import { createSlackAdapter } from "../../../channels/slack/adapter.ts";
import {
  type BlockActionsBody,
  postEvent,
  postInteraction,
  type SlackBlock,
  type SlackEmulator,
  type SlackFault,
  startSlackEmulator,
} from "../../emulators/slack/index.ts";
import { recordingLogger } from "../../support/logger.ts";
import {
  type ContractFault,
  type ContractHarness,
  type PlatformSide,
  runAdapterContract,
} from "../adapter-contract.ts";
import { serveRoutes } from "./helpers.ts";

const alice = { id: "U0ALICE", name: "alice" };
const SIGNING_SECRET = "contract-signing-secret";
const REQUEST_TIMEOUT_MS = 300;
/** Slack's documented upload limit; the emulator does not enforce one. */
const SLACK_MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;
const FILE_METHODS = ["files.getUploadURLExternal", "files.completeUploadExternal"];

const FAULTS: Record<ContractFault, SlackFault> = {
  rate_limited: { kind: "rate_limited", retryAfterSeconds: 7 },
  unavailable: { kind: "server_error", status: 500 },
  // Slack refuses with HTTP 200 and `ok: false`.
  rejected: { kind: "platform_error", error: "channel_not_found" },
  answer_lost: { kind: "hang", afterEffect: true },
};

type Element = { type?: string; action_id?: string; value?: string; text?: { text?: string } };

/** The buttons of a message's `actions` blocks, by row, as label and value. */
function buttonsOf(blocks: SlackBlock[] | undefined): Array<Array<{ label: string; data: string }>> {
  return (blocks ?? [])
    .filter((block) => block.type === "actions")
    .map((block) =>
      (block.elements as Element[]).map((e) => ({ label: e.text?.text ?? "", data: e.value ?? "" })),
    );
}

/** "<channel>" or "<channel>:<thread ts>", the adapter's reply target. */
function placeOf(target: string): { channel: string; threadTs: string | undefined } {
  const [channel = "", threadTs] = target.split(":");
  return { channel, threadTs };
}

/** How presses and events reach the adapter: over the Socket Mode connection, or POSTed to its route. */
type Transport = { mode: "socket" } | { mode: "http"; url: string };

function slackSide(emulator: SlackEmulator, transport: Transport): PlatformSide {
  const botMessages = (target: string) => {
    const { channel, threadTs } = placeOf(target);
    return emulator
      .messages(channel)
      .filter((m) => m.user === emulator.identity.botUserId && m.threadTs === threadTs);
  };
  const pressBody = (target: string, messageId: string, label: string, forged = false): BlockActionsBody => {
    const { channel } = placeOf(target);
    if (forged) return emulator.blockAction(channel, messageId, alice, label, { forged: true });
    const message = botMessages(target).find((m) => m.ts === messageId);
    const actionId = (message?.blocks ?? [])
      .flatMap((block) => (block.type === "actions" ? (block.elements as Element[]) : []))
      .find((e) => e.text?.text === label)?.action_id;
    if (actionId === undefined) throw new Error(`message ${messageId} has no button "${label}"`);
    return emulator.blockAction(channel, messageId, alice, actionId);
  };
  return {
    userId: alice.id,
    dmTarget: `D${alice.id.slice(1)}`,
    threadTarget: "C0CONTRACT1:1700000000.000100",
    // Slack's only reply is the thread: `replyTo` is not shown.
    showsReplies: false,
    uploadLimits: { maxFileBytes: SLACK_MAX_UPLOAD_BYTES },
    async write(text) {
      const payload = emulator.events.dm({ user: alice.id, text });
      const messageId = String(payload.event.ts);
      if (transport.mode === "socket") return { messageId, delivery: emulator.pushEvent(payload) };
      const statuses: number[] = [];
      void postEvent(transport.url, payload, {
        signingSecret: SIGNING_SECRET,
        onAttempt: ({ outcome }) => statuses.push("status" in outcome ? outcome.status : 0),
      });
      return { messageId, delivery: statuses };
    },
    reactions: (target, messageId) => emulator.reactions(target.split(":")[0]!, messageId),
    shown(target) {
      return botMessages(target).map((m) => {
        const buttons = buttonsOf(m.blocks);
        return {
          receiptIds: [m.ts, ...(m.files ?? []).map((f) => `file:${f.id}`)],
          text: m.text,
          ...(buttons.length > 0 ? { buttons } : {}),
          ...(m.files ? { files: m.files.map((f) => ({ name: f.filename, bytes: f.bytes })) } : {}),
        };
      });
    },
    async press(target, messageId, button) {
      const body =
        "forgedData" in button
          ? pressBody(target, messageId, button.forgedData, true)
          : pressBody(target, messageId, button.label);
      if (transport.mode === "socket") emulator.pushInteraction(body);
      else await postInteraction(transport.url, body, { signingSecret: SIGNING_SECRET });
    },
    notices: () => emulator.ephemeralMessages(alice.id).map((m) => m.text),
    ...(transport.mode === "http"
      ? {
          async pressUnsigned(target, messageId, label) {
            const body = pressBody(target, messageId, label);
            return (await postInteraction(transport.url, body, { signingSecret: "not-the-signing-secret" }))
              .status;
          },
        }
      : {}),
    fail(operation, fault) {
      emulator.failNext(
        operation === "send" ? "chat.postMessage" : "files.getUploadURLExternal",
        FAULTS[fault],
      );
    },
    acknowledged(written) {
      if (transport.mode === "socket")
        return emulator.envelope(written.delivery as string)?.state === "acked";
      return (written.delivery as number[]).some((status) => status >= 200 && status < 300);
    },
    uploadCalls: () => emulator.calls().filter((call) => FILE_METHODS.includes(call.method)).length,
  };
}

await runAdapterContract({
  name: "slack (Socket Mode)",
  async start(): Promise<ContractHarness> {
    // An envelope not acked comes again after 100 ms, as Slack's redelivery does after a few seconds.
    const emulator = startSlackEmulator({ redeliveryDelayMs: 100 });
    const adapter = createSlackAdapter(
      {
        mode: "socket",
        botToken: emulator.botToken,
        appToken: emulator.appToken,
        apiUrl: emulator.apiUrl,
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
      },
      { logger: recordingLogger() },
    );
    return { adapter, platform: slackSide(emulator, { mode: "socket" }), close: () => emulator.close() };
  },
});

await runAdapterContract({
  name: "slack (Events API over HTTP)",
  cases: "receive",
  async start(): Promise<ContractHarness> {
    const emulator = startSlackEmulator();
    const adapter = createSlackAdapter(
      {
        mode: "http",
        botToken: emulator.botToken,
        signingSecret: SIGNING_SECRET,
        apiUrl: emulator.apiUrl,
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
      },
      { logger: recordingLogger() },
    );
    const server = serveRoutes(adapter.routes());
    return {
      adapter,
      platform: slackSide(emulator, { mode: "http", url: `${server.url}/slack/events` }),
      async close() {
        await server.stop();
        await emulator.close();
      },
    };
  },
});
