import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { join } from "node:path";
import { openSqliteBackend } from "../../src/store/sqlite/backend.ts";
import { readProcStat } from "../../src/store/sqlite/claim-holder.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { watchExternalCommits } from "../../src/store/sqlite/external-commits.ts";
import { MIGRATIONS, openSqliteStores } from "../../src/store/sqlite/index.ts";
import { tempDir } from "../support/runtime.ts";
import { runStoreConformance } from "./conformance.ts";

runStoreConformance("sqlite", async () => {
  const dir = tempDir();
  const stores = openSqliteStores(join(dir.path, "s.sqlite"));
  return {
    store: stores.runtime,
    outbox: stores.outbox,
    schedules: stores.schedules,
    ingressOutcome: async (source, key) =>
      (
        stores.db
          .query("SELECT outcome FROM ingress_receipts WHERE source = ? AND key = ?")
          .get(source, key) as {
          outcome: string;
        } | null
      )?.outcome ?? null,
    rowsOf: async (conversationId) => {
      const tables = stores.db
        .query(
          "SELECT m.name AS name FROM sqlite_master m WHERE m.type = 'table' AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'conversation_id')",
        )
        .all() as Array<{ name: string }>;
      const counts: Record<string, number> = {};
      for (const { name } of tables) {
        counts[name] = (
          stores.db
            .query(`SELECT count(*) AS n FROM ${name} WHERE conversation_id = ?`)
            .get(conversationId) as {
            n: number;
          }
        ).n;
      }
      return counts;
    },
    close: async () => {
      stores.close();
      dir.cleanup();
    },
  };
});

describe("sqlite schema versioning", () => {
  test("refuses a newer schema and a partial one with a clear error", () => {
    const dir = tempDir();
    try {
      const newer = join(dir.path, "newer.sqlite");
      openSqliteStores(newer).close();
      const raw = new Database(newer);
      raw.exec("UPDATE switchboard_meta SET value = '999' WHERE key = 'schema_version'");
      raw.close();
      expect(() => openSqliteStores(newer)).toThrow(/schema version 999, newer than this switchboard/);

      const partial = join(dir.path, "partial.sqlite");
      const p = new Database(partial);
      p.exec("CREATE TABLE runs (id TEXT)");
      p.close();
      expect(() => openSqliteStores(partial)).toThrow(/no switchboard schema version/);

      const reopened = openDatabase({ filename: join(dir.path, "ok.sqlite"), migrations: MIGRATIONS });
      reopened.close();
      const again = openDatabase({ filename: join(dir.path, "ok.sqlite"), migrations: MIGRATIONS });
      const version = again
        .query("SELECT value FROM switchboard_meta WHERE key = 'schema_version'")
        .get() as {
        value: string;
      };
      expect(Number(version.value)).toBe(MIGRATIONS.length);
      expect((again.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
      again.close();
    } finally {
      dir.cleanup();
    }
  });
});

describe("migration 6: admission receipts move onto the input message", () => {
  test("an input admitted before the upgrade is still a duplicate after it, and a changed one a conflict", async () => {
    const dir = tempDir();
    try {
      const file = join(dir.path, "v5.sqlite");
      const v5 = openDatabase({ filename: file, migrations: MIGRATIONS.slice(0, 5) });
      v5.exec(`
        INSERT INTO conversations (id, version, last_seq, created_at_ms) VALUES ('c1', 1, 1, 1);
        INSERT INTO runs (queue_seq, id, conversation_id, state, priority, policy, input_message_ids,
          assistant_message_id, context, created_at_ms)
          VALUES (1, 'run_1', 'c1', 'queued', 'normal', 'queue', '["msg_1"]', 'msg_a', 'null', 1);
        INSERT INTO messages (id, conversation_id, run_id, role, parts, status, created_at_ms)
          VALUES ('msg_1', 'c1', 'run_1', 'user', '[{"type":"text","text":"hi"}]', 'complete', 1);
        INSERT INTO admissions (conversation_id, idempotency_key, fingerprint, run_id, input_message_id, created_at_ms)
          VALUES ('c1', 'k1', 'fp-1', 'run_1', 'msg_1', 1);
      `);
      v5.close();

      const stores = openSqliteStores(file);
      const request = {
        conversation: { id: "c1" },
        idempotencyKey: "k1",
        fingerprint: "fp-1",
        parts: [{ type: "text" as const, text: "hi" }],
        context: null,
        policy: "queue" as const,
        coalescePending: false,
        proposedIds: { runId: "run_2", messageId: "msg_2" },
        nowMs: 2,
      };
      const again = await stores.runtime.admit(request);
      expect(again).toMatchObject({ outcome: "duplicate", runId: "run_1", inputMessageId: "msg_1" });
      await expect(stores.runtime.admit({ ...request, fingerprint: "fp-2" })).rejects.toMatchObject({
        code: "idempotency_conflict",
      });
      const tables = stores.db.query("SELECT name FROM sqlite_master WHERE name = 'admissions'").all();
      expect(tables).toEqual([]);
      stores.close();
    } finally {
      dir.cleanup();
    }
  });
});

describe("migration 7: ambiguous records hold their chat until a given time", () => {
  test("a record already ambiguous keeps holding its chat until an operator decides", async () => {
    const dir = tempDir();
    try {
      const file = join(dir.path, "v6.sqlite");
      const v6 = openDatabase({ filename: file, migrations: MIGRATIONS.slice(0, 6) });
      const row = (id: string, ordinal: number, state: string) =>
        `('${id}', '${id}:0', '${id}', 'conv', 'telegram', 'bot', 'chat', ${ordinal}, 'message', '${id}', 1,
          '${state}', 1, 5, '[]', 5, 5)`;
      v6.exec(`
        INSERT INTO outbox (id, key, run_id, conversation_id, channel, account, target, ordinal, kind,
          markdown, final, state, attempts, next_attempt_at_ms, history, created_at_ms, updated_at_ms)
        VALUES ${row("run_old", 1, "ambiguous")}, ${row("run_next", 2, "pending")};
      `);
      v6.close();

      const stores = openSqliteStores(file);
      const later = Date.UTC(2030, 0, 1);
      expect(await stores.outbox.nextDeliverable(later, { limit: 5, channels: ["telegram"] })).toEqual([]);
      expect(await stores.outbox.nextWakeAtMs(["telegram"], later)).toBeNull();
      stores.close();
    } finally {
      dir.cleanup();
    }
  });
});

describe("migration 8: the event ledger is stored by rowid", () => {
  test("events written before the upgrade are read in order after it, and new ones follow them", async () => {
    const dir = tempDir();
    try {
      const file = join(dir.path, "v7.sqlite");
      const v7 = openDatabase({ filename: file, migrations: MIGRATIONS.slice(0, 7) });
      const event = (conversation: string, seq: number) =>
        `('${conversation}', ${seq}, 'admission', '${JSON.stringify({ type: "admission", conversationId: conversation, seq, durable: true })}', ${seq})`;
      v7.exec(`
        INSERT INTO conversations (id, version, last_seq, created_at_ms) VALUES ('c1', 2, 2, 1), ('c2', 1, 1, 1);
        INSERT INTO events (conversation_id, seq, type, payload, at_ms)
          VALUES ${event("c2", 1)}, ${event("c1", 2)}, ${event("c1", 1)};
      `);
      v7.close();

      const stores = openSqliteStores(file);
      expect((await stores.runtime.readEvents("c1", 0, 10)).map((e) => e.seq)).toEqual([1, 2]);
      expect((await stores.runtime.readEvents("c2", 0, 10)).map((e) => e.seq)).toEqual([1]);
      const admitted = await stores.runtime.admit({
        conversation: { id: "c1" },
        idempotencyKey: "k1",
        fingerprint: "fp-1",
        parts: [{ type: "text", text: "hi" }],
        context: null,
        policy: "queue",
        coalescePending: false,
        proposedIds: { runId: "run_1", messageId: "msg_1" },
        nowMs: 3,
      });
      expect(admitted.outcome).toBe("admitted");
      expect((await stores.runtime.readEvents("c1", 1, 10)).map((e) => [e.seq, e.type])).toEqual([
        [2, "admission"],
        [3, "admission"],
      ]);
      const plan = stores.db
        .query(
          "EXPLAIN QUERY PLAN SELECT payload FROM events WHERE conversation_id = ? AND seq > ? ORDER BY seq",
        )
        .all("c1", 0) as Array<{ detail: string }>;
      expect(plan.map((p) => p.detail).join("; ")).toContain("USING INDEX events_conversation");
      expect(() =>
        stores.db.exec(
          "INSERT INTO events (conversation_id, seq, type, payload, at_ms) VALUES ('c1', 3, 'x', '{}', 4)",
        ),
      ).toThrow(/UNIQUE/);
      stores.close();
    } finally {
      dir.cleanup();
    }
  });
});

describe("migration 9: schedules belong to their chat", () => {
  test("a schedule takes the key its conversation holds; one of a conversation left by /new keeps none", async () => {
    const dir = tempDir();
    try {
      const file = join(dir.path, "v8.sqlite");
      const v8 = openDatabase({ filename: file, migrations: MIGRATIONS.slice(0, 8) });
      const row = (id: string, conversation: string) =>
        `INSERT INTO schedules (id, conversation_id, reply_target, channel, created_by, prompt, kind, at_ms,
           missed_policy, max_attempts, state, next_at_ms, due_at_ms, created_at_ms, updated_at_ms)
         VALUES ('${id}', '${conversation}', 't', 'telegram', 'user', 'p', 'at', 5, 'once', 3, 'active', 5, 5, 1, 1);`;
      v8.exec(`
        INSERT INTO conversation_keys (key, conversation_id, generation, updated_at_ms) VALUES ('tg:dm:1', 'c_now', 2, 1);
        ${row("sch_kept", "c_now")}
        ${row("sch_left", "c_before_new")}
      `);
      v8.close();
      const stores = openSqliteStores(file);
      try {
        expect((await stores.schedules.get("sch_kept"))?.chatKey).toBe("tg:dm:1");
        expect((await stores.schedules.get("sch_left"))?.chatKey).toBeNull();
        expect((await stores.schedules.listByChat("tg:dm:1", ["active"])).map((s) => s.id)).toEqual([
          "sch_kept",
        ]);
      } finally {
        stores.close();
      }
    } finally {
      dir.cleanup();
    }
  });
});

describe("the gateway's claim on a SQLite file", () => {
  const claimOf = (pid: number, heartbeatAtMs: number, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ pid, host: hostname(), startedAtMs: heartbeatAtMs, heartbeatAtMs, ...extra });
  const readClaim = (file: string): { pid: number; heartbeatAtMs: number } | null => {
    const db = new Database(file, { readonly: true });
    const row = db.query("SELECT value FROM switchboard_meta WHERE key = 'gateway'").get() as {
      value: string;
    } | null;
    db.close();
    return row ? (JSON.parse(row.value) as { pid: number; heartbeatAtMs: number }) : null;
  };
  const claimHolder = (file: string): number | null => readClaim(file)?.pid ?? null;
  const plant = (file: string, value: string) => {
    const db = new Database(file);
    db.query(
      "INSERT INTO switchboard_meta (key, value) VALUES ('gateway', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    ).run(value);
    db.close();
  };

  /** A child that exits at once under a parent that never reaps it: a zombie for as long as `sleep 30` runs. */
  async function spawnZombie(): Promise<{ zombiePid: number; parent: Bun.Subprocess }> {
    const parent = Bun.spawn(["sh", "-c", "sleep 0.3 & echo $!; exec sleep 30"], { stdout: "pipe" });
    const reader = parent.stdout.getReader();
    const { value } = await reader.read();
    reader.releaseLock();
    const zombiePid = Number(new TextDecoder().decode(value).trim());
    for (let i = 0; i < 100 && readProcStat(zombiePid)?.state !== "Z"; i++) await Bun.sleep(10);
    expect(readProcStat(zombiePid)?.state).toBe("Z");
    return { zombiePid, parent };
  }

  test("a live gateway's fresh claim refuses a second one; a dead, zombie, reused or silent one's does not", async () => {
    const dir = tempDir();
    const live = Bun.spawn(["sleep", "30"]);
    const dead = Bun.spawn(["true"]);
    await dead.exited;
    const { zombiePid, parent } = await spawnZombie();
    const liveStart = readProcStat(live.pid)?.start;
    expect(liveStart).toBeNumber();
    try {
      const now = Date.now();
      const cases: Array<[string, string, boolean]> = [
        ["live and fresh", claimOf(live.pid, now, { procStart: liveStart }), true],
        ["live but silent for a minute", claimOf(live.pid, now - 60_000, { procStart: liveStart }), false],
        [
          "its pid reused by another process",
          claimOf(live.pid, now, { procStart: (liveStart ?? 0) - 1 }),
          false,
        ],
        ["a zombie with a fresh heartbeat", claimOf(zombiePid, now, { procStart: 1 }), false],
        ["dead", claimOf(dead.pid, now), false],
        ["unreadable", "not json", false],
      ];
      for (const [name, value, refused] of cases) {
        const file = join(dir.path, `${name}.sqlite`);
        openSqliteStores(file).close();
        plant(file, value);
        const backend = openSqliteBackend(file);
        const began = Date.now();
        const taking = backend.becomeActiveGateway({ onLost: () => {} });
        if (refused) {
          await expect(taking).rejects.toThrow(`Another switchboard gateway (pid ${live.pid}`);
        } else {
          await taking;
          expect(claimHolder(file)).toBe(process.pid);
          // Judged at once: no waiting for the heartbeat to go stale.
          expect(Date.now() - began).toBeLessThan(2000);
        }
        await backend.close();
        // Closing gives the file up; a refused start leaves the other's claim alone.
        expect(claimHolder(file)).toBe(refused ? live.pid : null);
      }
    } finally {
      live.kill();
      parent.kill();
      dir.cleanup();
    }
  });

  test("a holder that cannot be judged (another host) is waited for: a stale heartbeat is taken, a beating one refuses", async () => {
    const dir = tempDir();
    try {
      const quiet = join(dir.path, "quiet.sqlite");
      openSqliteStores(quiet).close();
      // Last beat 8.5 s ago: stale 1.5 s from now.
      plant(
        quiet,
        JSON.stringify({ pid: 4242, host: "elsewhere", startedAtMs: 0, heartbeatAtMs: Date.now() - 8500 }),
      );
      const waiting = openSqliteBackend(quiet);
      const began = Date.now();
      await waiting.becomeActiveGateway({ onLost: () => {} });
      expect(Date.now() - began).toBeGreaterThanOrEqual(1000);
      expect(claimHolder(quiet)).toBe(process.pid);
      await waiting.close();

      const beating = join(dir.path, "beating.sqlite");
      openSqliteStores(beating).close();
      const beat = () =>
        plant(
          beating,
          JSON.stringify({ pid: 4242, host: "elsewhere", startedAtMs: 0, heartbeatAtMs: Date.now() }),
        );
      beat();
      const timer = setInterval(beat, 300);
      const refused = openSqliteBackend(beating);
      try {
        await expect(refused.becomeActiveGateway({ onLost: () => {} })).rejects.toThrow(
          "Another switchboard gateway (pid 4242 on elsewhere)",
        );
      } finally {
        clearInterval(timer);
        await refused.close();
      }
      expect(readClaim(beating)?.pid).toBe(4242);
    } finally {
      dir.cleanup();
    }
  }, 20_000);
});

describe("external commit watch", () => {
  test("reports another connection's commit once, and never the watching connection's own", async () => {
    const dir = tempDir();
    const file = join(dir.path, "watched.sqlite");
    const stores = openSqliteStores(file);
    let commits = 0;
    const watch = watchExternalCommits(stores.db, { intervalMs: 20, onCommit: () => commits++ });
    try {
      stores.db.exec("CREATE TABLE own_writes (x)");
      stores.db.exec("INSERT INTO own_writes VALUES (1)");
      await Bun.sleep(100);
      expect(commits).toBe(0);

      const operator = new Database(file);
      operator.exec("INSERT INTO own_writes VALUES (2)");
      operator.close();
      await Bun.sleep(100);
      expect(commits).toBe(1);
      await Bun.sleep(100);
      expect(commits).toBe(1);
    } finally {
      watch.stop();
      stores.close();
      dir.cleanup();
    }
  });
});

describe("the delivery worker's outbox queries", () => {
  test("read only open records, never every record a channel ever had", async () => {
    const dir = tempDir();
    const stores = openSqliteStores(join(dir.path, "s.sqlite"));
    try {
      const issued: string[] = [];
      const query = stores.db.query.bind(stores.db);
      stores.db.query = ((sql: string) => {
        issued.push(sql);
        return query(sql);
      }) as typeof stores.db.query;
      await stores.outbox.nextDeliverable(1, { limit: 4, channels: ["telegram", "discord"] });
      await stores.outbox.nextWakeAtMs(["telegram", "discord"], 1);
      expect(issued.length).toBe(2);
      for (const sql of issued) {
        const plan = (query(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map(
          (p) => p.detail,
        );
        const reads = plan.filter((detail) => /^(SCAN|SEARCH) (outbox|o)\b/.test(detail));
        expect(reads.length).toBeGreaterThan(0);
        // Each read of the table goes through the open-records index or fetches one record by its ordinal.
        for (const detail of reads) expect(detail).toMatch(/outbox_open_by_target|ordinal=\?/);
      }
    } finally {
      stores.close();
      dir.cleanup();
    }
  });
});
