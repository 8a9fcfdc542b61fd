import { describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { type OutboxRecord, targetKey } from "../../outbox/types.ts";
import { createDeliveryWorker } from "../../outbox/worker.ts";
import { commitAnswer, finalizeStream, insertRecords } from "../../src/store/outbox-writes.ts";
import { PostgresOutboxRepository, postgresOutboxSteps } from "../../src/store/postgres/outbox.ts";
import { openPostgresRuntimeStore, PostgresRuntimeStore } from "../../src/store/postgres/runtime-store.ts";
import { openMigratedPool } from "../../src/store/postgres/schema.ts";
import { runAsync } from "../../src/store/steps.ts";
import { silentLogger } from "../../src/util/log.ts";
import { admitRequest } from "../store/conformance.ts";
import { FakeClock } from "../support/fake-clock.ts";
import { createDatabase, withDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { type OutboxBackend, runOutboxRepositoryConformance } from "./repository-conformance.ts";
import { FakeAdapter } from "./support/fake-adapter.ts";
import { messageInsert } from "./support/records.ts";

const T0 = 1_700_000_000_000;

useTestServer();

/** A pool on `url` with the schema migrated, as one gateway process has it. */
const connect = openMigratedPool;

async function openPostgresOutbox(): Promise<OutboxBackend> {
  const db = await createDatabase({ migrated: true });
  let sql: SQL;
  try {
    sql = await connect(db.url);
  } catch (error) {
    await db.drop();
    throw error;
  }
  return {
    repo: new PostgresOutboxRepository(sql),
    transaction: (work) =>
      sql.begin((tx) => {
        const steps = postgresOutboxSteps(tx);
        return work({
          insert: (inserts, nowMs) => runAsync(insertRecords(inserts, nowMs), steps),
          finalize: (key, markdown, nowMs) => runAsync(finalizeStream(key, markdown, nowMs), steps),
          commitAnswer: (answer, nowMs) => runAsync(commitAnswer(answer, nowMs), steps),
        });
      }),
    countRows: async () => {
      const [row] = await sql<Array<{ n: string }>>`SELECT count(*) AS n FROM outbox`;
      return Number(row!.n);
    },
    close: async () => {
      await sql.close();
      await db.drop();
    },
  };
}

runOutboxRepositoryConformance("postgres", openPostgresOutbox);

/** Runs `fn` with two repositories on one fresh database: two pools, as two processes have. */
async function withTwoProcesses(
  fn: (a: PostgresOutboxRepository, b: PostgresOutboxRepository) => Promise<void>,
): Promise<void> {
  await withDatabase(async (url) => {
    const pools = [await connect(url), await connect(url)];
    try {
      await fn(new PostgresOutboxRepository(pools[0]!), new PostgresOutboxRepository(pools[1]!));
    } finally {
      await Promise.all(pools.map((pool) => pool.close()));
    }
  });
}

const pause = () => Bun.sleep(Math.random() * 3);

describe("postgres outbox: two processes on one database", () => {
  test("racing claims never send one record twice, nor two records of one chat at once", async () => {
    await withTwoProcesses(async (a, b) => {
      const targets = ["chat-1", "chat-2", "chat-3", "chat-4", "chat-5"];
      const perTarget = 8;
      const inserts = targets.flatMap((target) =>
        Array.from({ length: perTarget }, (_, i) => messageInsert(target, `${target}#${i + 1}`)),
      );
      await a.insert(inserts, T0);

      const claims = new Map<string, number>();
      const deliveries = new Map<string, number>();
      const sending = new Map<string, string>();
      const violations: string[] = [];
      const order = new Map<string, number[]>();
      const count = (map: Map<string, number>, id: string) => map.set(id, (map.get(id) ?? 0) + 1);
      const deliver = async (repo: PostgresOutboxRepository, queued: OutboxRecord) => {
        await pause();
        const record = await repo.markSending(queued.id, T0);
        if (!record) return;
        const lane = targetKey(record);
        count(claims, record.id);
        const other = sending.get(lane);
        if (other) violations.push(`${record.markdown} claimed while ${other} was being sent`);
        sending.set(lane, record.markdown);
        await pause();
        sending.delete(lane);
        // A third of first attempts fail and go back to pending, to be claimed again.
        if (record.attempts === 1 && Math.random() < 0.3) {
          expect(await repo.scheduleRetry(record.id, T0, "500", T0)).toBe(true);
          return;
        }
        order.set(record.target, [...(order.get(record.target) ?? []), record.ordinal]);
        expect(await repo.markDelivered(record.id, { messageIds: [record.id] }, T0)).toBe(true);
        count(deliveries, record.id);
      };
      const run = async (repo: PostgresOutboxRepository) => {
        const deadline = Date.now() + 20_000;
        while (deliveries.size < inserts.length && Date.now() < deadline) {
          const due = await repo.nextDeliverable(T0, { limit: targets.length, channels: ["telegram"] });
          if (due.length === 0) await Bun.sleep(1);
          await Promise.all(due.map((record) => deliver(repo, record)));
        }
      };
      await Promise.all([run(a), run(b)]);

      expect(violations).toEqual([]);
      expect(deliveries.size).toBe(inserts.length);
      expect([...deliveries.values()].every((n) => n === 1)).toBe(true);
      const ordinals = Array.from({ length: perTarget }, (_, i) => i + 1);
      for (const target of targets) expect(order.get(target)).toEqual(ordinals);
      const records = await b.list({ limit: 1000 });
      expect(records.every((r) => r.state === "delivered" && r.attempts === claims.get(r.id))).toBe(true);
      expect(records.some((r) => r.attempts > 1)).toBe(true);
    });
  }, 30_000);

  test("a claim from a stale read is refused: not yet due, or its chat is busy", async () => {
    await withTwoProcesses(async (a, b) => {
      const [a1, a2] = await a.insert([messageInsert("chat-a", "a1"), messageInsert("chat-a", "a2")], T0);
      const [stale] = await b.nextDeliverable(T0, { limit: 1, channels: ["telegram"] });
      expect(stale?.id).toBe(a1!);
      await a.markSending(a1!, T0);
      await a.scheduleRetry(a1!, T0 + 1000, "500", T0);
      // Pending again, but its retry is not due: the other process must not send it early.
      expect(await b.markSending(stale!.id, T0)).toBeNull();

      await a.markSending(a1!, T0 + 1000);
      await a.markFailed(a1!, "400 chat not found", T0 + 1000);
      expect(await b.markSending(a2!, T0 + 1000)).not.toBeNull();
      // An operator retries the failed head while the next answer is being sent.
      await a.retry(a1!, "operator:ann", T0 + 2000);
      expect(await a.nextDeliverable(T0 + 2000, { limit: 5, channels: ["telegram"] })).toEqual([]);
      expect(await a.markSending(a1!, T0 + 2000)).toBeNull();
      await b.markDelivered(a2!, { messageIds: ["2"] }, T0 + 2000);
      expect(
        (await a.nextDeliverable(T0 + 2000, { limit: 5, channels: ["telegram"] })).map((r) => r.id),
      ).toEqual([a1!]);
      expect(await a.markSending(a1!, T0 + 2000)).not.toBeNull();
    });
  });
});

describe("postgres outbox: text PostgreSQL cannot store", () => {
  test("a NUL in an answer is dropped instead of failing the commit, and the stream it ended is still delivered", async () => {
    await withDatabase(async (url) => {
      const sql = await connect(url);
      try {
        const repo = new PostgresOutboxRepository(sql);
        const answer = {
          runId: "run_nul",
          conversationId: "conv-nul",
          channel: "telegram" as const,
          account: "bot-1",
          target: "chat-nul",
          state: "completed" as const,
          text: "before\u0000after",
        };
        const stream = await repo.beginStream({ ...answer, markdown: "before\u0000" }, T0);
        expect(stream.live).toBe(true);
        await sql.begin((tx) => runAsync(commitAnswer(answer, T0 + 1), postgresOutboxSteps(tx)));
        const record = (await repo.show("run_nul:stream"))!;
        expect(record.markdown).toBe("beforeafter");
        expect(await repo.markDelivered(record.id, { messageIds: ["1"] }, T0 + 2, "before\u0000after")).toBe(
          true,
        );
      } finally {
        await sql.close();
      }
    });
  });
});

/** The runtime store and an outbox repository on one fresh database, each with its own pool. */
async function withStoreAndOutbox(
  fn: (opened: {
    store: Awaited<ReturnType<typeof openPostgresRuntimeStore>>;
    sql: SQL;
    outbox: PostgresOutboxRepository;
  }) => Promise<void>,
): Promise<void> {
  await withDatabase(async (url) => {
    const store = await openPostgresRuntimeStore(url);
    const sql = new SQL(url);
    try {
      await fn({ store, sql, outbox: new PostgresOutboxRepository(sql) });
    } finally {
      await store.close();
      await sql.close();
    }
  });
}

describe("postgres outbox: the terminal transaction", () => {
  test("the answer is enqueued inside the runtime store's terminal commit; a rollback leaves no record", async () => {
    await withStoreAndOutbox(async ({ store, sql, outbox }) => {
      const admitted = await store.admit(admitRequest("conv-1", "hello"));
      const owned = (await store.acquireRun({
        runId: admitted.runId,
        owner: "w",
        nowMs: T0,
        leaseMs: 60_000,
      }))!;
      const answer = {
        runId: admitted.runId,
        conversationId: "conv-1",
        channel: "telegram" as const,
        account: "bot-1",
        target: "chat-a",
        state: "completed" as const,
        text: "the answer",
      };
      const terminal = () =>
        store.commitTerminal({
          fence: owned.fence,
          state: "completed",
          assistantParts: [{ type: "text", text: "the answer" }],
          delivery: answer,
          nowMs: T0,
        });

      // The terminal event is written after the outbox record: failing it must take the record back.
      await sql.unsafe(`
          CREATE FUNCTION refuse_terminal() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN RAISE EXCEPTION 'ledger refused the terminal event'; END $$;
          CREATE TRIGGER refuse_terminal BEFORE INSERT ON events FOR EACH ROW
            WHEN (NEW.type = 'terminal') EXECUTE FUNCTION refuse_terminal();`);
      await expect(terminal()).rejects.toThrow("ledger refused the terminal event");
      expect(await outbox.list({})).toEqual([]);
      expect((await store.loadRun(admitted.runId))?.run.state).toBe("running");

      await sql.unsafe("DROP TRIGGER refuse_terminal ON events");
      await terminal();
      expect(await outbox.show(`${admitted.runId}:0`)).toMatchObject({
        state: "pending",
        markdown: "the answer",
        ordinal: 1,
      });
      expect((await store.loadRun(admitted.runId))?.run.state).toBe("completed");
    });
  });
});

describe("postgres outbox: a stream against its run's ending", () => {
  test("a stream that starts while its run is being ended without an owner waits for it, and stays off", async () => {
    await withStoreAndOutbox(async ({ store, sql, outbox }) => {
      const ending = await sql.reserve();
      try {
        const admitted = await store.admit(admitRequest("conv-1", "hello"));
        // Another transaction is ending the run (as a supersede does), not yet committed.
        await ending`BEGIN`;
        await ending`UPDATE runs SET state = 'superseded', finish_seq = nextval('run_finish_seqs')
          WHERE id = ${admitted.runId}`;
        let settled = false;
        const start = outbox
          .beginStream(
            {
              runId: admitted.runId,
              conversationId: "conv-1",
              channel: "telegram",
              account: "bot-1",
              target: "chat-a",
              markdown: "",
            },
            T0,
          )
          .finally(() => {
            settled = true;
          });
        await Bun.sleep(300);
        expect(settled).toBe(false);
        await ending`COMMIT`;
        expect(await start).toEqual({ live: false, reason: "answered" });
        expect(await outbox.show(`${admitted.runId}:stream`)).toBeNull();
      } finally {
        ending.release();
      }
    });
  });
});

describe("postgres outbox: the delivery worker", () => {
  test("answers to one chat are each delivered once, in order", async () => {
    await withDatabase(async (url) => {
      const sql = await connect(url);
      const clock = new FakeClock();
      const adapter = new FakeAdapter({ clock });
      const repo = new PostgresOutboxRepository(sql);
      const worker = createDeliveryWorker({
        repo,
        adapters: new Map([["telegram", adapter]]),
        clock,
        random: () => 0,
        logger: silentLogger,
      });
      try {
        const ids = await repo.insert(
          [messageInsert("chat-a", "one"), messageInsert("chat-a", "two")],
          clock.now(),
        );
        await worker.start();
        // Real queries take real time: poll instead of settling the fake clock.
        for (let i = 0; i < 500 && adapter.visible("chat-a").length < 2; i++) await Bun.sleep(10);
        expect(await worker.drain(5000)).toBe(true);

        expect(adapter.visible("chat-a")).toEqual(["one", "two"]);
        expect(adapter.callsOf("send").map((call) => call.text)).toEqual(["one", "two"]);
        for (const id of ids) {
          expect(await repo.show(id)).toMatchObject({ state: "delivered", attempts: 1 });
        }
      } finally {
        await worker.stop();
        await sql.close();
      }
    });
  });
});

describe("postgres: statement texts", () => {
  test("a reply's statements keep their texts, so a connection's prepared statements stop growing", async () => {
    await withDatabase(async (url) => {
      await (await connect(url)).close();
      // One connection: every statement below is prepared on the session pg_prepared_statements lists.
      const sql = new SQL(url, { adapter: "postgres", max: 1 });
      try {
        const store = new PostgresRuntimeStore(sql);
        const outbox = new PostgresOutboxRepository(sql);
        const reply = async (n: number) => {
          const nowMs = T0 + n * 1_000 + n;
          const admitted = await store.admit(admitRequest("conv-texts", `hello ${n}`, { nowMs }));
          const owned = (await store.acquireRun({
            runId: admitted.runId,
            owner: "w",
            nowMs,
            leaseMs: 30_000,
          }))!;
          await store.loadPromptContext(owned.run.id, { maxTurns: 40 });
          const delivery = {
            runId: owned.run.id,
            conversationId: "conv-texts",
            channel: "telegram" as const,
            account: "bot-1",
            target: "chat-texts",
            state: "completed" as const,
            text: `answer ${n}`,
          };
          await store.commitTerminal({
            fence: owned.fence,
            state: "completed",
            assistantParts: [{ type: "text", text: delivery.text }],
            delivery,
            nowMs: nowMs + 1,
          });
          const [head] = await outbox.nextDeliverable(nowMs + 2, { limit: 1, channels: ["telegram"] });
          expect(head?.runId).toBe(owned.run.id);
          await outbox.nextWakeAtMs(["telegram"], nowMs + 2);
          expect(await outbox.markSending(head!.id, nowMs + 3)).not.toBeNull();
          expect(await outbox.markDelivered(head!.id, { messageIds: [`m${n}`] }, nowMs + 4)).toBe(true);
        };
        const prepared = async () => {
          const [row] = await sql<
            Array<{ n: number }>
          >`SELECT count(*)::int AS n FROM pg_prepared_statements`;
          return row!.n;
        };
        for (let n = 1; n <= 3; n++) await reply(n);
        const settled = await prepared();
        for (let n = 4; n <= 10; n++) await reply(n);
        expect(await prepared()).toBe(settled);
      } finally {
        await sql.close();
      }
    });
  });
});
