import { describe, expect, test } from "bun:test";
import { createSqliteScheduleRepository } from "../../src/store/sqlite/schedules.ts";
import { oneOff, runScheduleRepositoryConformance, T0 } from "./repository-conformance.ts";
import { openTestDatabase } from "./support/db.ts";

runScheduleRepositoryConformance("sqlite", async () => {
  const database = openTestDatabase();
  return {
    repo: createSqliteScheduleRepository(database.db),
    connect: async () => createSqliteScheduleRepository(database.connect()),
    close: async () => database.close(),
  };
});

describe("sqlite schedule repository", () => {
  test("the schema refuses a recurring schedule without a zone, and unreadable rows name the fix", async () => {
    const database = openTestDatabase();
    try {
      const repository = createSqliteScheduleRepository(database.db);
      expect(() =>
        database.db.exec(
          `INSERT INTO schedules (id, conversation_id, reply_target, channel, created_by, prompt, kind, cron,
             missed_policy, max_attempts, state, created_at_ms, updated_at_ms)
           VALUES ('x', 'c', 't', 'telegram', 'user', 'p', 'every', '0 9 * * *', 'once', 10, 'active', 0, 0)`,
        ),
      ).toThrow(/CHECK constraint failed/);
      await repository.insert(oneOff("a", T0), 20);
      database.db.exec("UPDATE schedules SET channel = 'carrier-pigeon' WHERE id = 'a'");
      await expect(repository.get("a")).rejects.toThrow(
        /Stored schedule a is not readable by this switchboard/,
      );
    } finally {
      database.close();
    }
  });
});
