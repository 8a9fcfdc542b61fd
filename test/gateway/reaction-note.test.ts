import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { IngressDecision } from "../../src/gateway/ingress-decision.ts";
import { noteReaction, type ReactionNoteDeps } from "../../src/gateway/reaction-note.ts";
import { readReactions } from "../../src/state/slots.ts";
import type { StateStore } from "../../src/state/store.ts";
import { openSqliteStores, type SqliteStores } from "../../src/store/sqlite/index.ts";
import { systemClock } from "../../src/util/clock.ts";
import { recordingLogger } from "../support/logger.ts";
import { tempDir } from "../support/runtime.ts";

/**
 * A reaction noted on its conversation's `reactions` slot, on a real SQLite store: retried when
 * another change lands in between, applied once when redelivered after a crash, refused for a
 * user ingress would not read.
 */

const SOURCE = "whatsapp:100";
const KEY = "wa:100:dm:15551230001";
const EMPTY: IngressDecision = { kind: "ignore", reason: "empty" };
let dir: { path: string; cleanup: () => void };
let stores: SqliteStores;

beforeEach(() => {
  dir = tempDir("switchboard-reaction-note-");
  stores = openSqliteStores(join(dir.path, "s.sqlite"));
});
afterEach(async () => {
  await stores.close();
  dir.cleanup();
});

const reactionMessage = (updateKey: string, emoji: string | null, messageId = "wamid.reply1") => ({
  channel: "whatsapp" as const,
  account: "100",
  updateKey,
  principal: { id: "15551230001", name: "Alice", isBot: false },
  conversationKey: KEY,
  replyTarget: "15551230001",
  surface: "dm" as const,
  text: "",
  addressedToBot: true,
  attachments: [],
  receivedAtMs: 1_700_000_000_000,
  reaction: { emoji, messageId, excerpt: "Here is the plan. ".repeat(10) },
});

function deps(overrides: Partial<ReactionNoteDeps> = {}): ReactionNoteDeps {
  return {
    store: stores.runtime,
    state: stores.runtime,
    clock: systemClock,
    logger: recordingLogger(),
    ...overrides,
  };
}

const slot = async () => {
  const conversationId = await stores.runtime.resolveConversationKey(KEY, Date.now());
  return (await stores.runtime.loadState(conversationId)).reactions;
};

describe("noteReaction", () => {
  test("keeps the reaction with an excerpt of at most 80 characters; a later one by the same person replaces it", async () => {
    expect(await noteReaction(reactionMessage("reaction:w1", "👍"), SOURCE, EMPTY, deps())).toMatchObject({
      kind: "noted",
    });
    const first = readReactions({ reactions: (await slot())! }).items;
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({
      key: "reaction:w1",
      emoji: "👍",
      by: { id: "15551230001", name: "Alice" },
    });
    expect(first[0]!.excerpt).toHaveLength(80);
    expect(first[0]!.excerpt!.endsWith("…")).toBe(true);
    await noteReaction(reactionMessage("reaction:w2", null), SOURCE, EMPTY, deps());
    const after = await slot();
    expect(after?.version).toBe(2);
    expect(readReactions({ reactions: after! }).items.map((r) => [r.key, r.emoji])).toEqual([
      ["reaction:w2", null],
    ]);
  });

  test("a change that lands between its read and its save is kept: the save is tried again on the new version", async () => {
    const real = stores.runtime;
    let interfered = false;
    const racing: StateStore = {
      loadState: (id) => real.loadState(id),
      saveState: async (request) => {
        if (!interfered) {
          interfered = true;
          await noteReaction(reactionMessage("reaction:other", "🎉", "wamid.reply2"), SOURCE, EMPTY, deps());
        }
        return real.saveState(request);
      },
    };
    expect(
      await noteReaction(reactionMessage("reaction:w1", "👍"), SOURCE, EMPTY, deps({ state: racing })),
    ).toMatchObject({ kind: "noted" });
    const after = await slot();
    expect(after?.version).toBe(2);
    expect(readReactions({ reactions: after! }).items.map((r) => r.key)).toEqual([
      "reaction:other",
      "reaction:w1",
    ]);
  });

  test("redelivered after a crash between the save and the record: the slot is not changed again, and the record is made", async () => {
    const crashing = {
      ...deps(),
      store: {
        loadIngressReceipt: stores.runtime.loadIngressReceipt.bind(stores.runtime),
        resolveConversationKey: stores.runtime.resolveConversationKey.bind(stores.runtime),
        claimIngress: async () => {
          throw new Error("killed before the record");
        },
      },
    };
    await expect(noteReaction(reactionMessage("reaction:w1", "👍"), SOURCE, EMPTY, crashing)).rejects.toThrow(
      "killed before the record",
    );
    expect((await slot())?.version).toBe(1);
    expect(await noteReaction(reactionMessage("reaction:w1", "👍"), SOURCE, EMPTY, deps())).toMatchObject({
      kind: "noted",
    });
    expect((await slot())?.version).toBe(1);
    expect(await noteReaction(reactionMessage("reaction:w1", "👍"), SOURCE, EMPTY, deps())).toEqual({
      kind: "duplicate",
    });
    expect(await stores.runtime.loadIngressReceipt(SOURCE, "reaction:w1")).toMatchObject({
      outcome: "noted",
    });
  });

  test("a reaction ingress would not read (off the allowlist, pairing, a bot) is refused and writes nothing", async () => {
    const decisions: IngressDecision[] = [
      { kind: "ignore", reason: "user not allowed" },
      { kind: "pair" },
      { kind: "ignore", reason: "from a bot" },
    ];
    for (const [i, decision] of decisions.entries()) {
      const result = await noteReaction(reactionMessage(`reaction:x${i}`, "👍"), SOURCE, decision, deps());
      expect(result.kind).toBe("refused");
      expect(await stores.runtime.loadIngressReceipt(SOURCE, `reaction:x${i}`)).toBeNull();
    }
    expect(await slot()).toBeUndefined();
  });
});
