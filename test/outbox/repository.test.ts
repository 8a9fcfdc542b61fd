import { commitAnswer, finalizeStream, insertRecords } from "../../src/store/outbox-writes.ts";
import { sqliteOutboxSteps } from "../../src/store/sqlite/outbox.ts";
import { runSync } from "../../src/store/steps.ts";
import { runOutboxRepositoryConformance } from "./repository-conformance.ts";
import { OutboxDb } from "./support/outbox-db.ts";

runOutboxRepositoryConformance("sqlite", async () => {
  const db = new OutboxDb();
  // The terminal commit's connection; the repository has its own, as in the gateway.
  const conn = db.connect();
  const steps = sqliteOutboxSteps(conn);
  return {
    repo: db.repository(),
    async transaction(work) {
      conn.exec("BEGIN IMMEDIATE");
      try {
        const result = await work({
          insert: async (inserts, nowMs) => runSync(insertRecords(inserts, nowMs), steps),
          finalize: async (key, markdown, nowMs) => runSync(finalizeStream(key, markdown, nowMs), steps),
          commitAnswer: async (answer, nowMs) => runSync(commitAnswer(answer, nowMs), steps),
        });
        conn.exec("COMMIT");
        return result;
      } catch (error) {
        conn.exec("ROLLBACK");
        throw error;
      }
    },
    countRows: async () => (conn.query("SELECT count(*) AS n FROM outbox").get() as { n: number }).n,
    close: async () => db.close(),
  };
});
