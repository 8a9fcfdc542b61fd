import {
  commitAnswerDeliverySync,
  finalizeStreamRecordSync,
  insertOutboxRecordsSync,
} from "../../src/store/sqlite/outbox.ts";
import { runOutboxRepositoryConformance } from "./repository-conformance.ts";
import { OutboxDb } from "./support/outbox-db.ts";

runOutboxRepositoryConformance("sqlite", async () => {
  const db = new OutboxDb();
  // The terminal commit's connection; the repository has its own, as in the gateway.
  const conn = db.connect();
  return {
    repo: db.repository(),
    async transaction(work) {
      conn.exec("BEGIN IMMEDIATE");
      try {
        const result = await work({
          insert: async (inserts, nowMs) => insertOutboxRecordsSync(conn, inserts, nowMs),
          finalize: async (key, markdown, nowMs) => finalizeStreamRecordSync(conn, key, markdown, nowMs),
          commitAnswer: async (answer, nowMs) => commitAnswerDeliverySync(conn, answer, nowMs),
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
