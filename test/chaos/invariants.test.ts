/**
 * The chaos invariants against hand-made snapshots: a healthy one passes, and each way of breaking
 * a promise is caught by the invariant meant for it.
 */
import { describe, expect, test } from "bun:test";
import { txnIdFor } from "../../channels/matrix/keys.ts";
import type { FakeLlmRequest } from "../support/llm/fake-llm-server.ts";
import { checkInvariants, type InvariantName } from "./invariants.ts";
import type { LeaseRow } from "./leases.ts";
import {
  type BotSend,
  type ChatMessage,
  type OutboxRow,
  type RunRow,
  readModelLog,
  type SentInput,
  type Snapshot,
} from "./snapshot.ts";

const GROUP = "tg:-5001";
const DM = "tg:1001";
/** The default Telegram bot's account (its bot id), and the support bot's. */
const DEFAULT_BOT = "123456789";
const SUPPORT_BOT = "222222222";

/** What the Telegram emulator records of the default bot's messages in `chats` (keyed `tg:<chat id>`). */
function sendsOf(chats: Record<string, ChatMessage[]>, account = DEFAULT_BOT): BotSend[] {
  return Object.entries(chats).flatMap(([chat, messages]) =>
    messages.map((m) => ({
      channel: "telegram",
      account,
      chatId: chat.split(":")[1]!,
      messageId: m.id,
      text: m.text,
    })),
  );
}

function run(id: string, inputs: string[], extra: Partial<RunRow> = {}): RunRow {
  return {
    id,
    conversationId: "conv_group",
    queueSeq: Number(id.replace(/\D/g, "")),
    state: "completed",
    absorbedInto: null,
    acquisitions: 1,
    steps: 1,
    inputTexts: inputs.map((i) => `${i} hello`),
    inputMessageIds: inputs.map((i) => `msg_${i}`),
    answerText: `a-${inputs.at(-1)} words`,
    ...extra,
  };
}

function record(runId: string, marker: string, extra: Partial<OutboxRow> = {}): OutboxRow {
  return {
    id: `obx_${runId}`,
    key: `${runId}:0`,
    runId,
    state: "delivered",
    kind: "message",
    markdown: `a-${marker} words`,
    chat: GROUP,
    channel: "telegram",
    everAmbiguous: false,
    firstAmbiguousAtMs: null,
    resolvedByPlatformStatus: false,
    chunks: 1,
    receiptIds: [`m_${marker}`],
    lastError: null,
    ...((extra.channel ?? "telegram") === "telegram" ? { account: DEFAULT_BOT } : {}),
    ...extra,
  };
}

function sent(id: string, extra: Partial<SentInput> = {}): SentInput {
  return {
    id,
    place: "tg-group",
    channel: "telegram",
    updateKey: `u_${id}`,
    chat: GROUP,
    expect: "answer",
    ordered: true,
    ...((extra.channel ?? "telegram") === "telegram" ? { account: DEFAULT_BOT } : {}),
    ...extra,
  };
}

/** Two queued answers in a group, a schedule in a DM and one ignored message: everything kept. */
function healthy(): Snapshot {
  const snapshot: Omit<Snapshot, "botSends" | "accountChats"> = {
    sent: [
      sent("q00001"),
      sent("q00002"),
      sent("i00003", { expect: "ignored" }),
      sent("s00004", { place: "tg-dm-alice", chat: DM, expect: "schedule", ordered: false }),
      sent("t00005", { place: "tg-dm-alice", chat: DM, ordered: false }),
      sent("p00006", { place: "tg-dm-alice", chat: DM, ordered: false, speaker: "alice" }),
    ],
    receipts: [
      { channel: "telegram", account: DEFAULT_BOT, key: "u_q00001", runId: "run1", outcome: "admitted" },
      { channel: "telegram", account: DEFAULT_BOT, key: "u_q00002", runId: "run2", outcome: "admitted" },
      { channel: "telegram", account: DEFAULT_BOT, key: "u_s00004", runId: null, outcome: "command:in" },
      { channel: "telegram", account: DEFAULT_BOT, key: "u_t00005", runId: "run4", outcome: "admitted" },
      { channel: "telegram", account: DEFAULT_BOT, key: "u_p00006", runId: "run5", outcome: "admitted" },
    ],
    runs: [
      run("run1", ["q00001"]),
      run("run2", ["q00002"]),
      run("run3", ["s00004"], {
        conversationId: "conv_dm",
        inputTexts: ["[Scheduled prompt sch_1] s00004 stretch"],
      }),
      run("run4", ["t00005"], {
        conversationId: "conv_dm",
        steps: 2,
        answerText: 'a-t00005 done: slowly appended "t00005"',
      }),
      run("run5", ["p00006"], { conversationId: "conv_dm", state: "awaiting_approval", answerText: "" }),
      run("run6", [], { conversationId: "conv_dm", answerText: 'a-p00006 done: appended "p00006"' }),
    ],
    outbox: [
      record("run1", "q00001"),
      record("run2", "q00002"),
      record("run3", "s00004", { chat: DM }),
      {
        ...record("notice_x", "none", { chat: DM }),
        key: "notice:telegram:1:u_s00004",
        markdown: "Scheduled sch_1 (once, first run Mon 2026-11-30 09:17 UTC).",
        receiptIds: ["m_notice"],
      },
      record("run4", "t00005", { chat: DM, markdown: 'a-t00005 done: slowly appended "t00005"' }),
      {
        ...record("run5", "none", { chat: DM }),
        id: "obx_prompt",
        key: "approval:ap_1:prompt",
        markdown: '🔐 Approval needed: **notes_append_note**\n```json\n{\n  "text": "p00006"\n}\n```',
        receiptIds: ["m_prompt"],
      },
      {
        ...record("run5", "none", { chat: DM }),
        id: "obx_outcome",
        key: "approval:ap_1:outcome",
        markdown: '✅ Approved by Alice: notes_append_note\n{\n  "text": "p00006"\n}',
        receiptIds: ["m_prompt"],
      },
      record("run6", "p00006", { chat: DM, markdown: 'a-p00006 done: appended "p00006"' }),
    ],
    schedules: [{ id: "sch_1", prompt: "s00004 stretch", state: "completed" }],
    occurrences: [{ scheduleId: "sch_1", scheduledForMs: 1, state: "dispatched", runId: "run3" }],
    botMessages: {
      [GROUP]: [
        { id: "m_q00001", text: "a-q00001 words" },
        { id: "m_q00002", text: "a-q00002 words" },
      ],
      [DM]: [
        { id: "m_notice", text: "Scheduled sch_1 (once, first run Mon 2026-11-30 09:17 UTC)." },
        { id: "m_s00004", text: "a-s00004 words" },
        { id: "m_t00005", text: 'a-t00005 done: slowly appended "t00005"' },
        { id: "m_prompt", text: '✅ Approved by Alice: notes_append_note\n{\n  "text": "p00006"\n}' },
        { id: "m_p00006", text: 'a-p00006 done: appended "p00006"' },
      ],
    },
    modelRequests: [
      "q00001 hello",
      "q00002 hello",
      "[Scheduled prompt sch_1] s00004 stretch",
      "t00005 hello",
      '{"text":"t00005","ms":300}',
      "p00006 hello",
      '{"text":"p00006"}',
    ],
    housekeepingCalls: 0,
    modelSawText: "q00001 hello q00002 hello s00004 stretch t00005 hello p00006 hello",
    unconfirmedUpdates: [],
    unansweredWebhooks: [],
    whatsappAccepted: [],
    matrixTxns: [],
    approvals: [
      {
        id: "ap_1",
        runId: "run5",
        toolName: "notes_append_note",
        input: '{"text":"p00006"}',
        state: "approved",
        successorRunId: "run6",
      },
    ],
    approvalResponses: [{ runId: "run6", approvalId: "ap_1" }],
    spawns: [],
    api: [],
    children: [],
    childResultKeys: [],
    toolEffects: ["begin t00005", "end t00005", "p00006"],
    tombstones: [],
    purgeLeftovers: [],
    modelRequestLog: [],
    media: [],
    pairings: [
      {
        user: "telegram:1004",
        codesIssued: 1,
        codesShown: ["ABCDEFGH", "ABCDEFGH"],
        grants: 1,
        redemptions: ["approved", "already approved"],
      },
    ],
  };
  return {
    ...snapshot,
    botSends: sendsOf(snapshot.botMessages),
    accountChats: [
      { channel: "telegram", name: "default", account: DEFAULT_BOT, chatIds: ["-5001", "1001"] },
      { channel: "telegram", name: "support", account: SUPPORT_BOT, chatIds: ["-5101", "1001"] },
    ],
  };
}

function violated(snapshot: Snapshot): InvariantName[] {
  return [...new Set(checkInvariants(snapshot).violations.map((v) => v.invariant))];
}

describe("chaos invariants", () => {
  test("a healthy run has no violations", () => {
    expect(checkInvariants(healthy()).violations).toEqual([]);
  });

  test("a message that was never admitted", () => {
    const s = healthy();
    s.receipts = s.receipts.filter((r) => r.key !== "u_q00002");
    expect(violated(s)).toContain("admitted");
  });

  test("an ignorable message that reached the model", () => {
    const s = healthy();
    s.modelSawText += " i00003 chatter";
    expect(violated(s)).toEqual(["admitted"]);
  });

  test("a run left running, and an input held by two runs", () => {
    const running = healthy();
    running.runs[1]!.state = "running";
    expect(violated(running)).toContain("one-terminal-run");
    const twice = healthy();
    twice.runs.push(run("run9", ["q00001"], { state: "cancelled", answerText: "" }));
    expect(violated(twice)).toContain("one-terminal-run");
  });

  test("absorbed into nothing, superseded with no successor", () => {
    const absorbed = healthy();
    absorbed.runs[0] = { ...absorbed.runs[0]!, state: "absorbed", absorbedInto: "run_gone" };
    absorbed.outbox = absorbed.outbox.filter((r) => r.runId !== "run1");
    expect(violated(absorbed)).toContain("one-terminal-run");
    const superseded = healthy();
    superseded.runs[1] = { ...superseded.runs[1]!, state: "superseded" };
    superseded.outbox = superseded.outbox.filter((r) => r.runId !== "run2");
    superseded.botMessages[GROUP] = superseded.botMessages[GROUP]!.slice(0, 1);
    expect(violated(superseded)).toContain("one-terminal-run");
  });

  test("an answer shown twice, one never delivered, one with no record", () => {
    const twice = healthy();
    twice.botMessages[GROUP]!.push({ id: "m_dup", text: "a-q00002 words" });
    expect(violated(twice)).toContain("delivered-once");
    const pending = healthy();
    pending.outbox[1]!.state = "pending";
    expect(violated(pending)).toContain("delivered-once");
    const missing = healthy();
    missing.outbox = missing.outbox.filter((r) => r.runId !== "run2");
    expect(violated(missing)).toContain("delivered-once");
  });

  test("an ambiguous record may be shown once but not twice", () => {
    const once = healthy();
    once.outbox[1] = { ...once.outbox[1]!, state: "ambiguous", everAmbiguous: true };
    expect(checkInvariants(once).violations).toEqual([]);
    expect(checkInvariants(once).ambiguousRecords).toBe(1);
    const twice = healthy();
    twice.outbox[1] = { ...twice.outbox[1]!, state: "ambiguous", everAmbiguous: true };
    twice.botMessages[GROUP]!.push({ id: "m_dup", text: "a-q00002 words" });
    expect(violated(twice)).toEqual(["delivered-once"]);
  });

  test("a notice is found by its text even when the chat shows it without markup", () => {
    const s = healthy();
    s.outbox[3]!.markdown = "Scheduled *sch_1* (once).";
    s.botMessages[DM]![0]!.text = "Scheduled sch_1 (once).";
    expect(checkInvariants(s).violations).toEqual([]);
    s.botMessages[DM]!.push({ id: "m_notice2", text: "Scheduled sch_1 (once)." });
    expect(violated(s)).toEqual(["delivered-once"]);
  });

  test("a superseded run's answer in the chat", () => {
    const s = healthy();
    s.runs.push(run("run0", ["q00000"], { state: "superseded", answerText: "" }));
    s.botMessages[GROUP]!.unshift({ id: "m_leak", text: "a-q00000 partial" });
    expect(violated(s)).toEqual(["superseded-silent"]);
    // Once is tolerated when its stream record was ambiguous (an orphaned live preview).
    s.outbox.push(
      record("run0", "q00000", { kind: "stream", key: "run0:stream", markdown: "", everAmbiguous: true }),
    );
    expect(checkInvariants(s).violations).toEqual([]);
  });

  test("a duplicate that reached the model, and a call for no run", () => {
    const duplicate = healthy();
    duplicate.modelRequests.push("q00002 hello");
    expect(violated(duplicate)).toEqual(["model-calls"]);
    const resumed = healthy();
    resumed.modelRequests.push("q00002 hello");
    resumed.runs[1]!.acquisitions = 2;
    expect(checkInvariants(resumed).violations).toEqual([]);
    expect(checkInvariants(resumed).repeatedModelCalls).toBe(1);
    const stray = healthy();
    stray.modelRequests.push("q00077 never admitted");
    expect(violated(stray)).toEqual(["model-calls"]);
  });

  test("compaction calls are counted apart; a streamed call for no input still counts", () => {
    const request = (lastUserText: string, stream: boolean) =>
      ({ lastUserText, stream, messages: [] }) as unknown as FakeLlmRequest;
    const log = readModelLog([
      request("Write the summary now.", false),
      request("q00001 hello", true),
      request("hello without an id", true),
    ]);
    expect(log.housekeepingCalls).toBe(1);
    expect(log.modelRequests).toEqual(["q00001 hello", "hello without an id"]);
    const s = healthy();
    s.modelRequests.push(...log.modelRequests.slice(1));
    expect(checkInvariants(s).violations).toEqual([
      expect.objectContaining({ invariant: "model-calls", subject: "request #7" }),
    ]);
  });

  test("a call right after a tool result answers the input its tool call names", () => {
    const afterTool = {
      lastUserText: "q00009 a newer message",
      stream: false,
      messages: [
        { role: "user", content: "q00009 a newer message" },
        {
          role: "assistant",
          tool_calls: [{ id: "c1", function: { name: "x", arguments: '{"text":"p00006"}' } }],
        },
        { role: "tool", content: "appended" },
      ],
    } as unknown as FakeLlmRequest;
    expect(readModelLog([afterTool]).modelRequests).toEqual(['{"text":"p00006"}']);
  });

  test("a schedule that fired twice or never", () => {
    const twice = healthy();
    twice.occurrences.push({ scheduleId: "sch_1", scheduledForMs: 2, state: "dispatched", runId: "run3" });
    expect(violated(twice)).toEqual(["schedule-fired-once"]);
    const never = healthy();
    never.occurrences = [];
    never.schedules[0]!.state = "active";
    expect(violated(never)).toContain("schedule-fired-once");
    const doubled = healthy();
    doubled.schedules.push({ id: "sch_2", prompt: "s00004 stretch", state: "completed" });
    expect(violated(doubled)).toEqual(["schedule-fired-once"]);
  });

  test("answers out of order in a queue chat", () => {
    const s = healthy();
    s.botMessages[GROUP]!.reverse();
    expect(violated(s)).toEqual(["order"]);
  });

  test("a tool call that ran twice, a claimed effect that never ended, a lost effect not called unknown", () => {
    const twice = healthy();
    twice.toolEffects.push("begin t00005");
    expect(violated(twice)).toEqual(["tool-effect-once"]);
    const claimed = healthy();
    claimed.toolEffects = claimed.toolEffects.filter((l) => l !== "end t00005");
    expect(violated(claimed)).toEqual(["tool-effect-once"]);
    const unknown = healthy();
    unknown.toolEffects = unknown.toolEffects.filter((l) => l !== "end t00005");
    unknown.runs[3]!.answerText = "a-t00005 done: outcome unknown: the gateway restarted";
    unknown.outbox[4]!.markdown = unknown.runs[3]!.answerText;
    unknown.botMessages[DM]![2]!.text = unknown.runs[3]!.answerText;
    expect(checkInvariants(unknown).violations).toEqual([]);
  });

  test("an idempotent tool call may run once more after a crash, not twice more", () => {
    const idempotent = () => JSON.parse(JSON.stringify(healthy()).replaceAll("t00005", "r00005")) as Snapshot;
    const again = idempotent();
    again.toolEffects.push("begin r00005", "end r00005");
    expect(checkInvariants(again).violations).toEqual([]);
    const thrice = idempotent();
    thrice.toolEffects.push("begin r00005", "begin r00005");
    expect(violated(thrice)).toEqual(["tool-effect-once"]);
    const lost = idempotent();
    lost.toolEffects = lost.toolEffects.filter((l) => l !== "end r00005");
    expect(violated(lost)).toEqual(["tool-effect-once"]);
  });

  test("a command (/stop, /export) that left no command receipt", () => {
    const s = healthy();
    s.sent.push(sent("c00007", { expect: "command", updateKey: "u_c00007" }));
    expect(violated(s)).toEqual(["admitted"]);
    s.receipts.push({ channel: "telegram", key: "u_c00007", runId: null, outcome: "command:stop" });
    expect(checkInvariants(s).violations).toEqual([]);
  });

  test("a run stopped after a tool step may have made its next call without recording it, once", () => {
    const stopped = healthy();
    stopped.modelRequests.push('{"text":"t00005","ms":300}');
    stopped.runs[3]!.state = "interrupted";
    expect(violated(stopped).filter((name) => name === "model-calls")).toEqual([]);
    stopped.modelRequests.push('{"text":"t00005","ms":300}');
    expect(violated(stopped)).toContain("model-calls");
  });

  test("a resumed tool run may call the model once more per acquisition, not more", () => {
    const resumed = healthy();
    resumed.modelRequests.push('{"text":"t00005","ms":300}');
    expect(violated(resumed)).toEqual(["model-calls"]);
    resumed.runs[3]!.acquisitions = 2;
    expect(checkInvariants(resumed).violations).toEqual([]);
  });

  test("an approval decided twice, an effect without approval or run twice, a prompt shown twice", () => {
    const decidedTwice = healthy();
    decidedTwice.approvalResponses.push({ runId: "run7", approvalId: "ap_1" });
    expect(violated(decidedTwice)).toEqual(["approval-decided-once"]);
    const ranTwice = healthy();
    ranTwice.toolEffects.push("p00006");
    expect(violated(ranTwice)).toEqual(["tool-effect-once"]);
    const denied = healthy();
    denied.approvals[0]!.state = "denied";
    expect(violated(denied)).toEqual(["tool-effect-once"]);
    const promptTwice = healthy();
    promptTwice.botMessages[DM]!.push({ id: "m_prompt2", text: '🔐 Approval needed\n"text": "p00006"' });
    expect(violated(promptTwice)).toEqual(["delivered-once"]);
    // A prompt resolved as delivered without a message id: its decision goes out as a new message.
    const asMessage = healthy();
    asMessage.outbox[5] = { ...asMessage.outbox[5]!, everAmbiguous: true, receiptIds: [] };
    asMessage.outbox[6] = { ...asMessage.outbox[6]!, receiptIds: ["m_outcome"] };
    asMessage.botMessages[DM]!.push({
      id: "m_outcome",
      text: "✅ Approved by Alice: notes_append_note (ap_1)",
    });
    expect(checkInvariants(asMessage).violations).toEqual([]);
    expect(checkInvariants(asMessage).outcomesAsMessages).toBe(1);
    expect(checkInvariants(healthy()).outcomesAsMessages).toBe(0);
    // Its decision not shown at all is no longer a known gap but a violation.
    asMessage.outbox[6] = {
      ...asMessage.outbox[6]!,
      state: "failed",
      receiptIds: [],
      lastError: "record approval:ap_1:prompt has no message to edit (delivered)",
    };
    expect(violated(asMessage)).toEqual(["delivered-once"]);
    const noSuccessor = healthy();
    noSuccessor.approvals[0]!.successorRunId = null;
    expect(violated(noSuccessor)).toContain("approval-decided-once");
  });

  test("a purged message that reappears, is shown to the model after the purge, or leaves rows", () => {
    const forgotten = () => {
      const s = healthy();
      s.sent.push(
        sent("f00010", { place: "tg-dm-carol", chat: "tg:1003", expect: "purged", forgetAtMs: 100 }),
      );
      s.tombstones = [{ conversationId: "conv_carol", purgedAtMs: 150 }];
      s.modelRequests.push("f00010 hello");
      s.modelRequestLog = [{ atMs: 120, text: "f00010 hello" }];
      s.outbox.push({
        ...record("run_gone", "f00010"),
        markdown: "",
        receiptIds: [],
        conversationId: "conv_carol",
      });
      return s;
    };
    expect(checkInvariants(forgotten()).violations).toEqual([]);
    const reappeared = forgotten();
    reappeared.runs.push(run("run8", ["f00010"], { conversationId: "conv_fresh" }));
    expect(violated(reappeared)).toContain("purged-stays-gone");
    const shownAfter = forgotten();
    shownAfter.modelRequestLog.push({ atMs: 900, text: "in flight: f00010 hello" });
    expect(checkInvariants(shownAfter).violations).toEqual([]);
    shownAfter.modelRequestLog.push({ atMs: 1_200, text: "history: f00010 hello" });
    expect(violated(shownAfter)).toEqual(["purged-stays-gone"]);
    const leftover = forgotten();
    leftover.purgeLeftovers = [{ conversationId: "conv_carol", table: "messages", rows: 2 }];
    expect(violated(leftover)).toEqual(["purged-stays-gone"]);
    const kept = forgotten();
    kept.outbox.at(-1)!.markdown = "a-f00010 words";
    expect(violated(kept)).toContain("purged-stays-gone");
    const never = forgotten();
    never.tombstones = [];
    expect(violated(never)).toEqual(["purged-stays-gone"]);
  });

  test("pairing: a second code, a second grant, a second redemption that approved", () => {
    const secondCode = healthy();
    secondCode.pairings[0]!.codesIssued = 2;
    secondCode.pairings[0]!.codesShown.push("ZZZZZZZZ");
    expect(violated(secondCode)).toEqual(["pairing-once"]);
    const twice = healthy();
    twice.pairings[0]!.redemptions = ["approved", "approved"];
    expect(violated(twice)).toEqual(["pairing-once"]);
    const noGrant = healthy();
    noGrant.pairings[0]!.grants = 0;
    expect(violated(noGrant)).toEqual(["pairing-once"]);
    const diedMidCall = healthy();
    diedMidCall.pairings[0]!.redemptions = ["unknown", "already approved", "already approved"];
    expect(checkInvariants(diedMidCall).violations).toEqual([]);
  });

  test("a photo answered but never fetched, a voice note answered without its transcript", () => {
    const s = healthy();
    s.media = [{ id: "q00001", kind: "photo", downloadsCompleted: 1, modelSawIt: true }];
    expect(checkInvariants(s).violations).toEqual([]);
    s.media = [{ id: "q00001", kind: "photo", downloadsCompleted: 0, modelSawIt: true }];
    expect(violated(s)).toEqual(["media-fetched"]);
    s.media = [{ id: "q00002", kind: "voice", downloadsCompleted: 1, modelSawIt: false }];
    expect(violated(s)).toEqual(["media-fetched"]);
  });

  test("an update Telegram still holds, a webhook WhatsApp is still redelivering", () => {
    const s = healthy();
    s.unconfirmedUpdates = [42];
    expect(violated(s)).toEqual(["settled"]);
    const w = healthy();
    w.unansweredWebhooks = [7];
    expect(violated(w)).toEqual(["settled"]);
  });

  test("a WhatsApp send the platform accepted is settled by its status: delivered, never ambiguous", () => {
    const WA = "wa:15550001001";
    const s = healthy();
    s.sent.push(sent("q00007", { place: "wa-dm-alice", channel: "whatsapp", chat: WA }));
    s.receipts.push({ channel: "whatsapp", key: "u_q00007", runId: "run7", outcome: "admitted" });
    s.runs.push(run("run7", ["q00007"], { conversationId: "conv_wa" }));
    s.outbox.push(
      record("run7", "q00007", {
        chat: WA,
        channel: "whatsapp",
        chunks: 2,
        resolvedByPlatformStatus: true,
        receiptIds: ["wamid.1", "wamid.2"],
      }),
    );
    s.botMessages[WA] = [
      { id: "wamid.1", text: "a-q00007 words" },
      { id: "wamid.2", text: "more" },
    ];
    s.modelRequests.push("q00007 hello");
    s.whatsappAccepted = [
      { callbackData: "run7:0#0", atMs: 1_000 },
      { callbackData: "run7:0#1", atMs: 1_010 },
    ];
    expect(checkInvariants(s).violations).toEqual([]);
    expect(checkInvariants(s).resolvedByPlatformStatus).toBe(1);

    const ambiguous = structuredClone(s);
    Object.assign(ambiguous.outbox.at(-1)!, { everAmbiguous: true, firstAmbiguousAtMs: 9_000 });
    expect(violated(ambiguous)).toEqual(["status-settles"]);
    const stuck = structuredClone(s);
    stuck.outbox.at(-1)!.state = "ambiguous";
    expect(violated(stuck)).toEqual(["status-settles"]);
    // Only its first chunk reached WhatsApp: the rest was never sent, so an operator may decide it.
    const partial = structuredClone(ambiguous);
    partial.whatsappAccepted = [{ callbackData: "run7:0#0", atMs: 1_000 }];
    expect(checkInvariants(partial).violations).toEqual([]);
    // Ambiguous before WhatsApp had it (the send never arrived), then retried by the operator.
    const retried = structuredClone(ambiguous);
    retried.outbox.at(-1)!.firstAmbiguousAtMs = 500;
    expect(checkInvariants(retried).violations).toEqual([]);
  });

  test("a Matrix send is retried under its txnId: never ambiguous, its receipt the transaction's event, shown once", () => {
    const MX = "mx:!room1:emulator.test";
    const s = healthy();
    s.sent.push(sent("q00007", { place: "mx-dm-alice", channel: "matrix", chat: MX }));
    s.receipts.push({ channel: "matrix", key: "u_q00007", runId: "run7", outcome: "admitted" });
    s.runs.push(run("run7", ["q00007"], { conversationId: "conv_mx" }));
    s.outbox.push(
      record("run7", "q00007", { chat: MX, channel: "matrix", chunks: 2, receiptIds: ["$e1", "$e2"] }),
    );
    s.botMessages[MX] = [
      { id: "$e1", text: "a-q00007 words" },
      { id: "$e2", text: "more" },
    ];
    s.modelRequests.push("q00007 hello");
    // The first chunk's send was killed after the homeserver stored it, and sent again: deduped.
    s.matrixTxns = [
      { txnId: txnIdFor("run7:0#0"), eventId: "$e1", repeats: 1 },
      { txnId: txnIdFor("run7:0#1"), eventId: "$e2", repeats: 0 },
    ];
    expect(checkInvariants(s).violations).toEqual([]);
    expect(checkInvariants(s).matrixRetriedSameTxn).toBe(1);

    const ambiguous = structuredClone(s);
    ambiguous.outbox.at(-1)!.everAmbiguous = true;
    expect(violated(ambiguous)).toEqual(["matrix-once"]);
    const stuck = structuredClone(s);
    stuck.outbox.at(-1)!.state = "ambiguous";
    expect(violated(stuck)).toEqual(["matrix-once"]);
    // Retried under a new txnId: a second event, and the receipt names it, not the first one's.
    const fresh = structuredClone(s);
    fresh.matrixTxns.push({ txnId: "sb.other", eventId: "$e3", repeats: 0 });
    fresh.outbox.at(-1)!.receiptIds = ["$e3", "$e2"];
    fresh.botMessages[MX]!.push({ id: "$e3", text: "a-q00007 words" });
    expect(violated(fresh)).toContain("matrix-once");
    expect(checkInvariants(fresh).violations.filter((v) => v.invariant === "matrix-once")).toHaveLength(2);
    // A chunk no transaction made.
    const missing = structuredClone(s);
    missing.matrixTxns = missing.matrixTxns.slice(0, 1);
    expect(violated(missing)).toEqual(["matrix-once"]);
  });

  /** healthy() plus a waited spawn in the group: its child answered, and the result was answered. */
  function withSpawn(): Snapshot {
    const s = healthy();
    const result =
      "[Result of child agent helper (handle ag_1), finished. Its task was: h00008 alpha]\n\ny00008 found";
    s.sent.push(sent("g00008", { expect: "spawn" }));
    s.spawns.push({ id: "g00008", childId: "h00008", resultId: "y00008", wait: true, chat: GROUP });
    s.receipts.push({ channel: "telegram", key: "u_g00008", runId: "run7", outcome: "admitted" });
    s.runs.push(
      run("run7", ["g00008"], { answerText: "" }),
      run("run8", ["h00008"], { conversationId: "conv_child", answerText: "y00008 found" }),
      run("run9", [], { inputTexts: [result], answerText: "a-y00008 words" }),
    );
    s.outbox.push(record("run9", "y00008"));
    s.botMessages[GROUP]!.push({ id: "m_y00008", text: "a-y00008 words" });
    s.modelRequests.push("g00008 hello", "h00008 hello", result);
    s.children.push({
      handle: "ag_1",
      parentRunId: "run7",
      toolCallId: "call_1",
      conversationId: "conv_child",
      task: "h00008 alpha",
      state: "delivered",
      resultRunId: "run9",
    });
    s.childResultKeys.push("child-result:ag_1");
    return s;
  }

  test("a spawn with one child and one result answered once has no violations", () => {
    expect(checkInvariants(withSpawn()).violations).toEqual([]);
  });

  test("child-once: a second child for one spawn, two results, a lost result, a result answered twice", () => {
    const twoChildren = withSpawn();
    twoChildren.children.push({ ...twoChildren.children[0]!, handle: "ag_2", conversationId: "conv_child2" });
    expect(violated(twoChildren)).toEqual(["child-once"]);
    const twoResults = withSpawn();
    twoResults.childResultKeys.push("child-result:ag_1");
    expect(violated(twoResults)).toEqual(["child-once"]);
    const cancelledWithResult = withSpawn();
    cancelledWithResult.children[0]!.state = "cancelled";
    expect(violated(cancelledWithResult)).toEqual(["child-once"]);
    const running = withSpawn();
    running.children[0]!.state = "running";
    running.childResultKeys = [];
    expect(violated(running)).toEqual(["child-once"]);
    const answeredTwice = withSpawn();
    answeredTwice.botMessages[GROUP]!.push({ id: "m_y00008b", text: "a-y00008 words" });
    expect(violated(answeredTwice)).toContain("child-once");
    const childSpoke = withSpawn();
    childSpoke.outbox.push(record("run8", "none", { markdown: "y00008 found" }));
    expect(violated(childSpoke)).toContain("delivered-once");
  });

  /** healthy() plus an api message (asked twice, one run) and a proactive send (asked twice, one record). */
  function withApi(): Snapshot {
    const s = healthy();
    s.runs.push(run("run10", ["k00010"], { conversationId: "conv_api" }));
    s.outbox.push(record("run10", "k00010", { chat: "api:x", channel: "api", receiptIds: [] }), {
      ...record("api_send", "k00011", { chat: DM }),
      id: "obx_send",
      key: "api-send:chaos-k00011",
    });
    s.botMessages[DM]!.push({ id: "m_k00011", text: "a-k00011 words" });
    s.modelRequests.push("k00010 hello");
    const answered = { outcome: "admitted", runId: "run10" };
    s.api.push(
      {
        id: "k00010",
        kind: "message",
        key: "chaos-k00010",
        answers: [answered, { ...answered, outcome: "duplicate" }],
        errors: [],
      },
      {
        id: "k00011",
        kind: "send",
        key: "chaos-k00011",
        chat: DM,
        answers: [
          { outcome: "enqueued", outboxId: "obx_send", state: "pending" },
          { outcome: "duplicate", outboxId: "obx_send", state: "delivered" },
        ],
        errors: [],
      },
    );
    return s;
  }

  test("api messages and sends repeated with their keys, one run and one record each: no violations", () => {
    expect(checkInvariants(withApi()).violations).toEqual([]);
  });

  test("api-once: a repeat answered with another run, a second run holding it, a conflict, a lost record", () => {
    const otherRun = withApi();
    otherRun.api[0]!.answers[1]!.runId = "run11";
    expect(violated(otherRun)).toEqual(["api-once"]);
    const twoRuns = withApi();
    twoRuns.runs.push(run("run11", ["k00010"], { conversationId: "conv_api", answerText: "" }));
    expect(violated(twoRuns)).toContain("api-once");
    const conflict = withApi();
    conflict.api[1]!.errors.push("409 idempotency_conflict");
    expect(violated(conflict)).toEqual(["api-once"]);
    const lost = withApi();
    lost.outbox = lost.outbox.filter((r) => r.id !== "obx_send");
    lost.botMessages[DM] = lost.botMessages[DM]!.filter((m) => m.id !== "m_k00011");
    expect(violated(lost)).toEqual(["api-once"]);
    const shownTwice = withApi();
    shownTwice.botMessages[DM]!.push({ id: "m_k00011b", text: "a-k00011 words" });
    expect(violated(shownTwice)).toEqual(["delivered-once"]);
  });

  test("edit-once and deleted-unanswered: an edit answered as first written or twice, a deleted message answered", () => {
    const s = healthy();
    s.sent.push(
      sent("q00020", { expect: "edited", correctedTo: "e00020" }),
      sent("q00021", { expect: "withdrawn" }),
    );
    s.runs.push(
      run("run20", ["q00020"], { state: "cancelled", answerText: "" }),
      run("run21", ["e00020"]),
      run("run22", ["q00021"], { state: "cancelled", answerText: "" }),
    );
    s.outbox.push(record("run21", "e00020"));
    s.botMessages[GROUP]!.push({ id: "m_e00020", text: "a-e00020 words" });
    s.modelRequests.push("e00020 hello");
    expect(checkInvariants(s).violations).toEqual([]);

    const asFirstWritten = structuredClone(s);
    asFirstWritten.botMessages[GROUP]!.push({ id: "m_q00020", text: "a-q00020 words" });
    expect(violated(asFirstWritten)).toEqual(["edit-once"]);
    const twice = structuredClone(s);
    twice.botMessages[GROUP]!.push({ id: "m_e00020b", text: "a-e00020 words" });
    expect(violated(twice)).toContain("edit-once");
    // Edited at a random moment: as first written, as corrected, or both once each; never twice, never not at all.
    const anyTime = structuredClone(s);
    anyTime.sent.find((i) => i.id === "q00020")!.editedAnyTime = true;
    anyTime.runs.find((r) => r.id === "run20")!.state = "completed";
    anyTime.runs.find((r) => r.id === "run20")!.answerText = "a-q00020 words";
    anyTime.outbox.push(record("run20", "q00020"));
    const group = anyTime.botMessages[GROUP]!;
    group.splice(
      group.findIndex((m) => m.id === "m_e00020"),
      0,
      { id: "m_q00020", text: "a-q00020 words" },
    );
    anyTime.modelRequests.push("q00020 hello");
    expect(checkInvariants(anyTime).violations).toEqual([]);
    const anyTimeTwice = structuredClone(anyTime);
    anyTimeTwice.botMessages[GROUP]!.push({ id: "m_e00020c", text: "a-e00020 words" });
    expect(violated(anyTimeTwice)).toContain("edit-once");
    const anyTimeNever = structuredClone(anyTime);
    anyTimeNever.botMessages[GROUP] = anyTimeNever.botMessages[GROUP]!.filter(
      (m) => !/[qe]00020/.test(m.text),
    );
    expect(violated(anyTimeNever)).toContain("edit-once");
    const answered = structuredClone(s);
    answered.runs.find((r) => r.id === "run22")!.state = "completed";
    answered.modelRequests.push("q00021 hello");
    expect(violated(answered)).toContain("deleted-unanswered");
  });

  describe("same-account: two Telegram bots", () => {
    const SUPPORT_DM = "tg@support:1001";
    /** Alice also talks to the support bot: the same chat id and update key as with the default bot. */
    function withSupport(): Snapshot {
      const s = healthy();
      s.sent.push(
        sent("q00030", {
          place: "sup-dm-alice",
          chat: SUPPORT_DM,
          account: SUPPORT_BOT,
          updateKey: "u_q00001",
        }),
      );
      s.receipts.push({
        channel: "telegram",
        account: SUPPORT_BOT,
        key: "u_q00001",
        runId: "run30",
        outcome: "admitted",
      });
      s.runs.push(run("run30", ["q00030"], { conversationId: "conv_support" }));
      s.outbox.push(record("run30", "q00030", { chat: SUPPORT_DM, account: SUPPORT_BOT }));
      s.botMessages[SUPPORT_DM] = [{ id: "m_q00030", text: "a-q00030 words" }];
      s.botSends.push(...sendsOf({ [SUPPORT_DM]: s.botMessages[SUPPORT_DM]! }, SUPPORT_BOT));
      s.modelRequests.push("q00030 hello");
      return s;
    }

    test("each bot answering what it received has no violations", () => {
      expect(checkInvariants(withSupport()).violations).toEqual([]);
    });

    test("a reply through the wrong bot", () => {
      // The record leaves through the default bot, which shows the answer in its own DM with Alice.
      const wrong = withSupport();
      wrong.outbox.at(-1)!.account = DEFAULT_BOT;
      wrong.botSends.at(-1)!.account = DEFAULT_BOT;
      expect(violated(wrong)).toEqual(["same-account"]);
      expect(checkInvariants(wrong).violations.map((v) => v.subject)).toEqual([
        "obx_run30 (run30:0)",
        "telegram message m_q00030 in chat 1001",
      ]);
      // The record names the right bot, yet the platform shows the default bot sending it.
      const shown = withSupport();
      shown.botSends.at(-1)!.account = DEFAULT_BOT;
      expect(violated(shown)).toEqual(["same-account"]);
      // An approval prompt for a support input, sent by the default bot.
      const prompt = withSupport();
      prompt.botSends.push({
        channel: "telegram",
        account: DEFAULT_BOT,
        chatId: "1001",
        messageId: "m_prompt30",
        text: 'Approval needed: notes_append_note {"text": "q00030"}',
      });
      expect(violated(prompt)).toEqual(["same-account"]);
    });

    test("the right bot, but in another chat", () => {
      const s = withSupport();
      s.botSends.at(-1)!.chatId = "-5101";
      expect(violated(s)).toEqual(["same-account"]);
    });

    test("a bot writing in a chat it is not a member of, or a bot the gateway does not have", () => {
      const outsider = withSupport();
      outsider.botSends.push({
        channel: "telegram",
        account: DEFAULT_BOT,
        chatId: "-5101",
        messageId: "m_x",
        text: "hello",
      });
      expect(violated(outsider)).toEqual(["same-account"]);
      const unknown = withSupport();
      unknown.botSends.push({
        channel: "telegram",
        account: "999",
        chatId: "1001",
        messageId: "m_y",
        text: "hi",
      });
      expect(violated(unknown)).toEqual(["same-account"]);
    });

    test("an update the other bot recorded is not this one's receipt", () => {
      const s = withSupport();
      s.receipts = s.receipts.filter((r) => r.account !== SUPPORT_BOT);
      expect(violated(s)).toContain("admitted");
    });
  });
});

describe("lease-expired: no lease held by a dead process past its expiry", () => {
  const at = 1_000_000;
  const withLeases = (rows: LeaseRow[], gatewayLockHolders: string[] = []): Snapshot => ({
    ...healthy(),
    leases: { readAtMs: at, rows, gatewayLockHolders },
  });
  const lease = (extra: Partial<LeaseRow>): LeaseRow => ({
    table: "runs",
    id: "run9",
    owner: "gw_live",
    state: "running",
    expiresAtMs: at + 20_000,
    ...extra,
  });

  test("a live owner's lease, and the one active gateway's lock: no violations", () => {
    const s = withLeases(
      [lease({}), lease({ table: "schedule_occurrences", id: "sch_9@5", state: "claimed" })],
      ["4242@2026-12-06 15:00:00"],
    );
    expect(checkInvariants(s).violations).toEqual([]);
  });

  test("a run or claim held past its expiry, an ended run still leased, a dead session's gateway lock", () => {
    expect(violated(withLeases([lease({ expiresAtMs: at - 1 })]))).toEqual(["lease-expired"]);
    expect(
      violated(
        withLeases([
          lease({ table: "schedule_occurrences", id: "sch_9@5", state: "claimed", expiresAtMs: at - 30_000 }),
        ]),
      ),
    ).toEqual(["lease-expired"]);
    expect(violated(withLeases([lease({ state: "completed" })]))).toEqual(["lease-expired"]);
    expect(violated(withLeases([lease({ expiresAtMs: null })]))).toEqual(["lease-expired"]);
    expect(violated(withLeases([], ["4242@a", "4343@b"]))).toEqual(["lease-expired"]);
  });
});
