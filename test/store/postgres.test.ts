import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { SQL } from "bun";
import type { SwitchboardError } from "../../src/errors.ts";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import type { DurableEvent } from "../../src/runtime/events.ts";
import type { AdmitRequest, Fence } from "../../src/runtime/store.ts";
import type { MessagePart, TerminalRunState } from "../../src/runtime/types.ts";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import {
  openPostgresRuntimeStore,
  type PostgresRuntimeStore,
} from "../../src/store/postgres/runtime-store.ts";
import { MIGRATIONS, migrate, schemaVersion } from "../../src/store/postgres/schema.ts";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";
import { adminConnection, createDatabase, withDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";
import { admitRequest, runStoreConformance } from "./conformance.ts";

const T0 = 1_700_000_000_000;
/** A copy of the migrated template: the tests that check the migration itself start empty. */
const MIGRATED = { migrated: true };

useTestServer();

/** Runs `fn` with two stores on one fresh database: two connection pools, as two processes have. */
async function withTwoProcesses(
  fn: (a: PostgresRuntimeStore, b: PostgresRuntimeStore) => Promise<void>,
): Promise<void> {
  await withDatabase(async (url) => {
    const [a, b] = await Promise.all([openPostgresRuntimeStore(url), openPostgresRuntimeStore(url)]);
    try {
      await fn(a, b);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, MIGRATED);
}

test("the PostgreSQL test server is reachable", async () => {
  await adminConnection();
});

runStoreConformance("postgres", async () => {
  const db = await createDatabase(MIGRATED);
  try {
    const backend = await openPostgresBackend(db.url);
    const sql = new SQL(db.url, { adapter: "postgres", max: 1 });
    return {
      store: backend.runtime,
      outbox: backend.outbox,
      schedules: backend.schedules,
      ingressOutcome: async (source, key) => {
        const [row] = await sql<Array<{ outcome: string }>>`
          SELECT outcome FROM ingress_receipts WHERE source = ${source} AND key = ${key}`;
        return row?.outcome ?? null;
      },
      rowsOf: async (conversationId) => {
        const tables = await sql<Array<{ table_name: string }>>`
          SELECT table_name FROM information_schema.columns
          WHERE table_schema = current_schema() AND column_name = 'conversation_id'`;
        const counts: Record<string, number> = {};
        for (const { table_name: name } of tables) {
          const [row] = await sql.unsafe<Array<{ n: string }>>(
            `SELECT count(*) AS n FROM ${name} WHERE conversation_id = $1`,
            [conversationId],
          );
          counts[name] = Number(row!.n);
        }
        return counts;
      },
      close: async () => {
        await sql.close();
        await backend.close();
        await db.drop();
      },
    };
  } catch (error) {
    await db.drop();
    throw error;
  }
});

const step = (n: number) => ({
  step: n,
  model: "m",
  finishReason: "stop",
  usage: {},
  startedAtMs: T0,
  finishedAtMs: T0,
});

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe("postgres: two processes on one database", () => {
  test("concurrent admissions into one conversation all commit, with gapless versions and seqs", async () => {
    await withTwoProcesses(async (a, b) => {
      const results = await Promise.all(
        range(40).map((i) => (i % 2 === 0 ? a : b).admit(admitRequest("c", `k${i}`))),
      );
      expect(results.every((r) => r.outcome === "admitted")).toBe(true);
      const versions = results.map((r) => r.version).sort((x, y) => x - y);
      const seqs = results.flatMap((r) => (r.outcome === "duplicate" ? [] : [r.seq])).sort((x, y) => x - y);
      expect(versions).toEqual(range(40));
      expect(seqs).toEqual(range(40));
      const events = await a.readEvents("c", 0, 100);
      expect(events.map((e) => e.seq)).toEqual(range(40));
      const runs = await b.listActiveRuns("c");
      expect(runs.length).toBe(40);
      expect(new Set(runs.map((r) => r.queueSeq)).size).toBe(40);
      // Runs queue in the order their admissions committed, which the ledger records.
      expect(runs.map((r) => r.id)).toEqual(events.map((e) => e.runId));
    });
  });

  test("one idempotency key from both at once: exactly one admitted, the other a duplicate of it", async () => {
    await withTwoProcesses(async (a, b) => {
      for (const key of ["k1", "k2", "k3", "k4", "k5"]) {
        const [x, y] = await Promise.all([a.admit(admitRequest("c", key)), b.admit(admitRequest("c", key))]);
        expect([x.outcome, y.outcome].sort()).toEqual(["admitted", "duplicate"]);
        expect(x.runId).toBe(y.runId);
        expect(x.inputMessageId).toBe(y.inputMessageId);
      }
      expect((await a.listActiveRuns("c")).length).toBe(5);
    });
  });

  test("one ingress identity from both at once into different conversations: admitted once", async () => {
    await withTwoProcesses(async (a, b) => {
      const ingress = { source: "telegram:bot", key: "update:7", payload: { replyTarget: "chat:1" } };
      const [x, y] = await Promise.all([
        a.admit(admitRequest("c1", "k", { ingress })),
        b.admit(admitRequest("c2", "k", { ingress })),
      ]);
      expect([x.outcome, y.outcome].sort()).toEqual(["admitted", "duplicate"]);
      expect(x.runId).toBe(y.runId);
      const active = [...(await a.listActiveRuns("c1")), ...(await a.listActiveRuns("c2"))];
      expect(active.map((r) => r.id)).toEqual([x.runId]);
    });
  });

  test("racing acquireRun: exactly one wins, and the stale owner's fenced writes are refused", async () => {
    await withTwoProcesses(async (a, b) => {
      const admitted = await a.admit(admitRequest("c", "a"));
      const first = await Promise.all([
        a.acquireRun({ runId: admitted.runId, owner: "wa", nowMs: T0, leaseMs: 100 }),
        b.acquireRun({ runId: admitted.runId, owner: "wb", nowMs: T0, leaseMs: 100 }),
      ]);
      expect(first.filter((r) => r !== null).length).toBe(1);
      const stale = first.find((r) => r !== null)!;
      expect(stale.fence.fencingToken).toBe(1);

      // The owner's lease lapsed: both processes race to take the run over.
      const takeover = await Promise.all([
        a.acquireRun({ runId: admitted.runId, owner: "wa2", nowMs: T0 + 500, leaseMs: 1000 }),
        b.acquireRun({ runId: admitted.runId, owner: "wb2", nowMs: T0 + 500, leaseMs: 1000 }),
      ]);
      const winners = takeover.filter((r) => r !== null);
      expect(winners.length).toBe(1);
      const winner = winners[0]!;
      expect(winner.fence.fencingToken).toBe(2);

      for (const store of [a, b]) {
        await expect(
          store.checkpoint({
            fence: stale.fence,
            assistantParts: [{ type: "text", text: "stale" }],
            step: step(0),
            joinedInputIds: [],
            nowMs: T0 + 600,
          }),
        ).rejects.toMatchObject({ code: "fence_lost" });
        await expect(
          store.commitTerminal({
            fence: stale.fence,
            state: "completed",
            assistantParts: [],
            nowMs: T0 + 600,
          }),
        ).rejects.toMatchObject({ code: "fence_lost" });
        expect(await store.renewLease(stale.fence, T0 + 600, 1000)).toBe(false);
        await expect(store.assertFence(stale.fence)).rejects.toMatchObject({ code: "fence_lost" });
      }

      const commits = await Promise.allSettled([
        a.commitTerminal({ fence: winner.fence, state: "completed", assistantParts: [], nowMs: T0 + 700 }),
        b.commitTerminal({ fence: winner.fence, state: "completed", assistantParts: [], nowMs: T0 + 700 }),
      ]);
      expect(commits.filter((c) => c.status === "fulfilled").length).toBe(1);
      const view = await a.loadRun(admitted.runId);
      expect(view?.run).toMatchObject({ state: "completed", fencingToken: 2, steps: 0 });
      const terminal = (await b.readEvents("c", 0, 100)).filter((e) => e.type === "terminal");
      expect(terminal.length).toBe(1);
    });
  });

  test("a renewal racing a takeover either keeps the lease or loses the run, never both", async () => {
    await withTwoProcesses(async (a, b) => {
      for (const key of ["r1", "r2", "r3", "r4", "r5"]) {
        const admitted = await a.admit(admitRequest(key, key));
        const owner = await a.acquireRun({ runId: admitted.runId, owner: "wa", nowMs: T0, leaseMs: 100 });
        const [renewed, taken] = await Promise.all([
          a.renewLease(owner!.fence, T0 + 100, 1000),
          b.acquireRun({ runId: admitted.runId, owner: "wb", nowMs: T0 + 150, leaseMs: 1000 }),
        ]);
        expect(renewed !== (taken !== null)).toBe(true);
      }
    });
  });

  test("committed events reach in-process listeners in seq order; a rolled-back admission publishes none", async () => {
    await withTwoProcesses(async (a, b) => {
      const seen: DurableEvent[] = [];
      a.onCommitted((events) => seen.push(...events));
      await Promise.all(range(30).map((i) => (i % 3 === 0 ? b : a).admit(admitRequest("c", `k${i}`))));
      const local = seen.map((e) => e.seq);
      expect(local).toEqual([...local].sort((x, y) => x - y));
      expect(local.length).toBe(20);

      const before = seen.length;
      await expect(a.admit({ ...admitRequest("c", "k1"), fingerprint: "changed" })).rejects.toMatchObject({
        code: "idempotency_conflict",
      });
      expect(seen.length).toBe(before);
    });
  });

  test("purge racing an admission into a new conversation: never runs under a tombstone", async () => {
    await withTwoProcesses(async (a, b) => {
      for (const conversation of ["p1", "p2", "p3", "p4", "p5"]) {
        const [admitted, purged] = await Promise.allSettled([
          a.admit(admitRequest(conversation, "k")),
          b.purgeConversation(conversation, { nowMs: T0 }),
        ]);
        const runs = await a.listActiveRuns(conversation);
        if (purged.status === "fulfilled" && purged.value.outcome === "purged") {
          expect(admitted).toMatchObject({ status: "rejected", reason: { code: "conversation_purged" } });
          expect(runs).toEqual([]);
          expect(await a.loadConversation(conversation)).toBeNull();
        } else {
          expect(purged).toMatchObject({ status: "fulfilled", value: { outcome: "active" } });
          expect(admitted.status).toBe("fulfilled");
          expect(runs.length).toBe(1);
        }
      }
    });
  });

  test("saveSummary from both at once: one saves, the other conflicts", async () => {
    await withTwoProcesses(async (a, b) => {
      const save = (store: PostgresRuntimeStore, text: string) =>
        store.saveSummary({ conversationId: "c", text, throughFinishSeq: 3, expectedVersion: 0, nowMs: T0 });
      const results = await Promise.all([save(a, "a"), save(b, "b")]);
      expect(results.map((r) => r.outcome).sort()).toEqual(["conflict", "saved"]);
      expect(results.find((r) => r.outcome === "conflict")).toEqual({
        outcome: "conflict",
        actualVersion: 1,
      });
    });
  });
});

/**
 * One scripted session over every OperatorRuntimeStore method, recorded step by step. Ids the stores make
 * up (`conv_…`, `msg_…`) are numbered in order of appearance. Message orders are left out, and
 * only whether a next page exists counts: PostgreSQL draws them from a sequence, which may skip
 * values. The two backends' records can then be compared as they are.
 */
async function recordSession(store: OperatorRuntimeStore): Promise<unknown[]> {
  const record: unknown[] = [];
  const ids = new Map<string, string>();
  const normalize = (value: unknown): unknown =>
    JSON.parse(
      JSON.stringify(value, (key, v) =>
        key === "order" ? undefined : key === "nextAfterOrder" ? v !== null : v,
      ).replace(
        /\b(conv|msg)_[0-9a-z]{23}\b/g,
        (id) => ids.get(id) ?? (ids.set(id, `<id${ids.size}>`).get(id) as string),
      ),
    );
  const step = async <T>(name: string, action: () => Promise<T>): Promise<T> => {
    try {
      const result = await action();
      record.push([name, normalize(result ?? null)]);
      return result;
    } catch (error) {
      const { code, message } = error as SwitchboardError;
      record.push([name, normalize({ code, message })]);
      throw error;
    }
  };
  // A refused step is recorded by `step`; the session goes on.
  const ignore = () => null;
  let n = 0;
  const admit = (conversationId: string, key: string, overrides: Partial<AdmitRequest> = {}) => {
    n += 1;
    return step(`admit ${key}`, () =>
      store.admit({
        conversation: { id: conversationId },
        idempotencyKey: key,
        fingerprint: `fp-${key}`,
        parts: [{ type: "text", text: key }],
        context: { n },
        policy: "queue",
        coalescePending: false,
        proposedIds: { runId: `run-${n}`, messageId: `in-${n}` },
        nowMs: T0 + n,
        ...overrides,
      }),
    );
  };
  const acquire = (runId: string, owner: string, nowMs: number, leaseMs = 1000) =>
    step(`acquire ${runId}`, () => store.acquireRun({ runId, owner, nowMs, leaseMs }));
  const checkpoint = (fence: Fence, parts: MessagePart[], stepNo: number, costUsd?: number) =>
    step(`checkpoint ${fence.runId}`, () =>
      store.checkpoint({
        fence,
        assistantParts: parts,
        step: {
          step: stepNo,
          model: "m",
          finishReason: "stop",
          usage: { inputTokens: 3, outputTokens: 2, ...(costUsd ? { costUsd } : {}) },
          startedAtMs: T0,
          finishedAtMs: T0 + 7,
        },
        joinedInputIds: [],
        nowMs: T0 + 10,
      }),
    );
  const finish = (fence: Fence, state: TerminalRunState, parts: MessagePart[], error?: string) =>
    step(`terminal ${fence.runId}`, () =>
      store.commitTerminal({
        fence,
        state,
        assistantParts: parts,
        nowMs: T0 + 20,
        ...(error ? { error } : {}),
      }),
    );
  const ingress = (key: string, replyTarget: string) => ({
    source: "chat:acct",
    key,
    payload: { replyTarget },
  });

  // Coalescing, injection and absorption.
  const a = await admit("c1", "a", { ingress: ingress("100", "t1") });
  await admit("c1", "b", { coalescePending: true });
  const ownA = (await acquire(a.runId, "w", T0))!;
  const inject = await admit("c1", "inj", { policy: "inject" });
  await step("prompt a", () => store.loadPromptContext(a.runId, { maxTurns: 5 }));
  const joined: MessagePart[] = [
    { type: "joined-input", messageId: inject.inputMessageId },
    { type: "text", text: "answer a" },
  ];
  await checkpoint(ownA.fence, joined, 0, 0.5);
  await finish(ownA.fence, "completed", joined);

  // Interrupt-next, supersede, stop requests and an interrupted answer.
  const urgent = await admit("c1", "urgent", { policy: "interrupt-next" });
  await admit("c1", "later");
  const ownUrgent = (await acquire(urgent.runId, "w", T0 + 30))!;
  await admit("c1", "replace", { policy: "supersede", coalescePending: true });
  await step("stop urgent", () => store.requestStop(urgent.runId, "interrupted", T0 + 31));
  await checkpoint(ownUrgent.fence, [{ type: "text", text: "partial" }], 0);
  await finish(ownUrgent.fence, "interrupted", [{ type: "text", text: "partial" }], "stopped");
  await step("active", () => store.listActiveRuns("c1"));
  await step("scan", () => store.scanRecoverable({ afterQueueSeq: 0, limit: 10 }));

  // Release, lease expiry, resumption and usage totals.
  const acquireNext = (name: string, nowMs: number) =>
    step(name, () => store.acquireNext({ conversationId: "c1", owner: "w", nowMs, leaseMs: 1000 }));
  const first = (await acquireNext("next", T0 + 40)).acquired!;
  const next = first.run;
  await step("release", () => store.releaseRun(first.fence, T0 + 41));
  const dead = (await acquire(next.id, "dead", T0 + 42, 10_000))!;
  await acquireNext("busy", T0 + 43);
  await step("expire", () => store.expireLeases({ exceptOwner: "w", nowMs: T0 + 44 }));
  await step("stale renew", () => store.renewLease(first.fence, T0 + 45, 1000));
  const resumed = (await acquire(next.id, "w", T0 + 45))!;
  await checkpoint(dead.fence, [], 0).catch(ignore);
  await step("renew", () => store.renewLease(resumed.fence, T0 + 46, 1000));
  await checkpoint(resumed.fence, [{ type: "text", text: "one" }], 0, 0.25);
  await checkpoint(resumed.fence, [{ type: "text", text: "one two" }], 1);
  await finish(resumed.fence, "completed", [{ type: "text", text: "one two" }]);
  await finish(resumed.fence, "failed", []).catch(ignore);
  await admit("c1", "a", { fingerprint: "other" }).catch(ignore);
  await admit("c1", "b");
  await admit("c2", "x", { ingress: ingress("100", "t1") });

  // Ledger, paging, compaction and summaries.
  await step("events", () => store.readEvents("c1", 0, 1000));
  await step("events after 3", () => store.readEvents("c1", 3, 2));
  let cursor = 0;
  for (let page = 0; page < 4; page += 1) {
    const listed = await step(`messages page ${page}`, () =>
      store.listMessages("c1", { afterOrder: cursor, limit: 3 }),
    );
    if (listed.nextAfterOrder === null) break;
    cursor = listed.nextAfterOrder;
  }
  const candidates = await step("candidates", () =>
    store.loadCompactionCandidates("c1", { keepTurns: 1, maxTurns: 10 }),
  );
  const through = candidates.turns.at(-1)!.finishSeq;
  const save = (label: string, expectedVersion: number, throughFinishSeq: number) =>
    step(label, () =>
      store.saveSummary({
        conversationId: "c1",
        text: label,
        throughFinishSeq,
        expectedVersion,
        nowMs: T0 + 50,
      }),
    );
  await save("save", 0, through);
  await save("stale save", 0, through + 1);
  await save("no advance", 1, through);
  await step("candidates after", () => store.loadCompactionCandidates("c1", { keepTurns: 0, maxTurns: 10 }));
  const last = await admit("c1", "last");
  await step("prompt last", () => store.loadPromptContext(last.runId, { maxTurns: 10 }));
  await step("prompt unknown", () => store.loadPromptContext("nope", { maxTurns: 1 })).catch(ignore);
  await step("load last", () => store.loadRun(last.runId));
  await step("load unknown", () => store.loadRun("nope"));
  await step("head", () => store.loadConversation("c1"));

  // Conversation keys, ingress claims, settings.
  const keyed = await step("resolve", () => store.resolveConversationKey("key-a", T0));
  await step("resolve again", () => store.resolveConversationKey("key-a", T0 + 1));
  await step("admit by key", () =>
    store.admit({
      conversation: { key: "key-a" },
      idempotencyKey: "kk",
      fingerprint: "fp",
      parts: [{ type: "text", text: "by key" }],
      context: null,
      policy: "queue",
      coalescePending: false,
      ingress: ingress("101", "t2"),
      proposedIds: { runId: "run-key", messageId: "in-key" },
      nowMs: T0 + 60,
    }),
  );
  await step("rotate", () => store.rotateConversationKey("key-a", T0 + 61));
  await step("resolve rotated", () => store.resolveConversationKey("key-a", T0 + 62));
  await step("head by key", () => store.loadConversation(keyed));
  await step("claim", () =>
    store.claimIngress({
      source: "chat:acct",
      key: "102",
      outcome: "command",
      payload: { replyTarget: "t1" },
      nowMs: T0 + 63,
    }),
  );
  await step("claim again", () =>
    store.claimIngress({ source: "chat:acct", key: "102", outcome: "command", payload: {}, nowMs: T0 + 64 }),
  );
  await step("claim admitted", () =>
    store.claimIngress({ source: "chat:acct", key: "100", outcome: "command", payload: {}, nowMs: T0 + 65 }),
  );
  await admit("c3", "claimed", { ingress: ingress("102", "t1") });
  await step("latest ingress", () => store.latestIngressPerTarget("chat:acct", 10));
  await step("latest ingress, one", () => store.latestIngressPerTarget("chat:acct", 1));
  await step("settings none", () => store.loadConversationSettings("c1"));
  await step("settings save", () => store.saveConversationSettings("c1", { timezone: "Asia/Tokyo" }, T0));
  await step("settings merge", () => store.saveConversationSettings("c1", {}, T0 + 1));
  await step("settings", () => store.loadConversationSettings("c1"));

  // Stopping, purging and the tombstone.
  await step("stop queued", () => store.requestStop(last.runId, "interrupted", T0 + 70));
  await step("stop ended", () => store.requestStop(last.runId, "interrupted", T0 + 71));
  await step("stop unknown", () => store.requestStop("nope", "interrupted", T0 + 71));
  await step("purge stale", () => store.purgeConversation("c1", { expectedVersion: 1, nowMs: T0 + 72 }));
  await step("purge active", () => store.purgeConversation("c3", { nowMs: T0 + 72 }));
  await step("purge", () => store.purgeConversation("c1", { nowMs: T0 + 73 }));
  await step("purge again", () => store.purgeConversation("c1", { nowMs: T0 + 74 }));
  await step("purge unknown stale", () => store.purgeConversation("zz", { expectedVersion: 5, nowMs: T0 }));
  await step("unknown head", () => store.loadConversation("zz"));
  await step("purge unknown", () => store.purgeConversation("zz", { nowMs: T0 }));
  await admit("c1", "again").catch(ignore);
  await step("purged run", () => store.loadRun(a.runId));
  await step("purged events", () => store.readEvents("c1", 0, 10));
  await step("latest ingress after purge", () => store.latestIngressPerTarget("chat:acct", 10));
  await step("claim purged identity", () =>
    store.claimIngress({ source: "chat:acct", key: "100", outcome: "ignored", payload: {}, nowMs: T0 + 75 }),
  );
  return record;
}

describe("postgres matches sqlite", () => {
  test("a session over every method records the same results on both backends", async () => {
    const dir = tempDir();
    const sqlite = openSqliteStores(join(dir.path, "s.sqlite"));
    try {
      const expected = await recordSession(sqlite.runtime);
      await withDatabase(async (url) => {
        const store = await openPostgresRuntimeStore(url);
        try {
          const actual = await recordSession(store);
          for (let i = 0; i < expected.length; i += 1) expect(actual[i]).toEqual(expected[i]);
          expect(actual.length).toBe(expected.length);
        } finally {
          await store.close();
        }
      }, MIGRATED);
    } finally {
      sqlite.close();
      dir.cleanup();
    }
  });
});

describe("postgres schema versioning", () => {
  test("a database with a newer recorded schema version is refused with a clear error", async () => {
    await withDatabase(async (url) => {
      await (await openPostgresRuntimeStore(url)).close();
      const raw = new SQL(url);
      await raw`UPDATE switchboard_meta SET value = '999' WHERE key = 'schema_version'`;
      await raw.close();
      const refused = openPostgresRuntimeStore(url);
      await expect(refused).rejects.toMatchObject({ code: "schema_unsupported" });
      await expect(refused).rejects.toThrow(
        `has schema version 999, newer than this switchboard (${MIGRATIONS.length})`,
      );
    });
  });

  test("a database with tables but no schema version is refused", async () => {
    await withDatabase(async (url) => {
      const raw = new SQL(url);
      await raw`CREATE TABLE runs (id TEXT)`;
      await raw.close();
      await expect(openPostgresRuntimeStore(url)).rejects.toThrow(
        /has tables but no switchboard schema version/,
      );
    });
  });

  test("processes opening a new database together migrate it once; reopening changes nothing", async () => {
    await withDatabase(async (url) => {
      const stores = await Promise.all([1, 2, 3].map(() => openPostgresRuntimeStore(url)));
      await Promise.all(stores.map((s) => s.close()));
      const raw = new SQL(url);
      try {
        await migrate(raw);
        expect(await schemaVersion(raw)).toBe(MIGRATIONS.length);
        expect(MIGRATIONS.map((m) => m.version)).toEqual(range(MIGRATIONS.length));
      } finally {
        await raw.close();
      }
    });
  });
});
