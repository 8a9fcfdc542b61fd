import { BUTTONS_FIELD, decodeTarget, encodeTarget } from "../../../channels/matrix/index.ts";
import { type Fault, startMatrixEmulator } from "../../emulators/matrix/index.ts";
import { type ContractFault, type PlatformSide, runAdapterContract } from "../adapter-contract.ts";
import { matrixAdapter, memoryStateStore, shownMessages, sinceCovers } from "./helpers.ts";

const FAULTS: Record<ContractFault, Fault> = {
  rate_limited: { kind: "rate_limited", retryAfterMs: 7_000 },
  unavailable: { kind: "server_error", status: 502 },
  rejected: {
    kind: "matrix_error",
    status: 403,
    errcode: "M_FORBIDDEN",
    error: "You are not allowed to send here",
  },
  answer_lost: { kind: "answer_lost" },
};

await runAdapterContract({
  name: "matrix (client-server API, /sync)",
  async start() {
    const emulator = startMatrixEmulator();
    const alice = emulator.createUser("alice").userId;
    const roomId = emulator.createRoom(alice, { botJoined: true });
    const threadRoot = emulator.sendText(roomId, alice, "a thread to answer in");
    const state = memoryStateStore();
    const { adapter } = matrixAdapter(emulator, { state });
    const dmTarget = encodeTarget({ roomId });
    const platform: PlatformSide = {
      userId: alice,
      dmTarget,
      threadTarget: encodeTarget({ roomId, threadRoot }),
      showsReplies: true,
      uploadLimits: { maxFileBytes: emulator.maxUploadBytes },
      async write(text) {
        return { messageId: emulator.sendText(roomId, alice, text), delivery: null };
      },
      shown: (target) => shownMessages(emulator, target),
      reactions: (target, messageId) =>
        emulator
          .reactions(decodeTarget(target).roomId, messageId)
          .filter((r) => r.sender === emulator.bot.userId)
          .map((r) => r.key),
      async press(target, messageId, button) {
        const room = decodeTarget(target).roomId;
        if ("forgedData" in button) {
          // A client can post any content: a look-alike prompt of the user's own, reacted to.
          const fake = emulator.sendText(room, alice, "Approve?", {
            [BUTTONS_FIELD]: [{ label: "Approve", data: button.forgedData, key: "✅" }],
          });
          emulator.react(room, alice, fake, "✅");
          return;
        }
        const declared = (emulator.event(room, messageId)?.content[BUTTONS_FIELD] ?? []) as Array<{
          label: string;
          key: string;
        }>;
        const key = declared.find((b) => b.label === button.label)?.key;
        if (key === undefined) throw new Error(`message ${messageId} has no button "${button.label}"`);
        emulator.react(room, alice, messageId, key);
      },
      notices: () =>
        emulator
          .shown(roomId, emulator.bot.userId)
          .filter((m) => m.msgtype === "m.notice")
          .map((m) => m.body),
      fail(operation, fault) {
        emulator.failNext(operation === "send" ? "send" : "upload", FAULTS[fault]);
      },
      acknowledged: (written) => sinceCovers(emulator, state, roomId, written.messageId),
      uploadCalls: () => emulator.callsOf("upload").length,
    };
    return { adapter, platform, close: () => emulator.close() };
  },
});
