import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStores } from "../../src/store/sqlite/index.ts";
import { openExistingDatabase } from "../../src/store/sqlite/operator.ts";
import { unplannedParameters } from "../../src/store/sqlite/plan-once.ts";
import { tempDir } from "../support/runtime.ts";

describe("unplannedParameters", () => {
  test("writes every positional parameter as an expression", () => {
    expect(unplannedParameters("SELECT * FROM t WHERE a = ? AND b IN (?, ?) ORDER BY c LIMIT ?3")).toBe(
      "SELECT * FROM t WHERE a = +? AND b IN (+?, +?) ORDER BY c LIMIT +?3",
    );
    expect(unplannedParameters("UPDATE t SET h = json_insert(h, '$[#]', json(?)) WHERE id=?")).toBe(
      "UPDATE t SET h = json_insert(h, '$[#]', json(+?)) WHERE id=+?",
    );
  });

  test("leaves question marks in literals, quoted names and comments alone", () => {
    const sql = `SELECT 'why?', 'it''s ?', "a?b", [c?], \`d?\` -- e?\n /* f? */ FROM t WHERE x = ?`;
    expect(unplannedParameters(sql)).toBe(
      `SELECT 'why?', 'it''s ?', "a?b", [c?], \`d?\` -- e?\n /* f? */ FROM t WHERE x = +?`,
    );
    expect(unplannedParameters("SELECT 1 -- trailing ?")).toBe("SELECT 1 -- trailing ?");
    expect(unplannedParameters("SELECT 'unterminated ?")).toBe("SELECT 'unterminated ?");
  });
});

describe("a switchboard database", () => {
  test("prepares its statements with unplanned parameters, which bind the same values", () => {
    const dir = tempDir();
    const file = join(dir.path, "s.sqlite");
    const stores = openSqliteStores(file);
    try {
      const statement = stores.db.query("SELECT ? AS a, ? AS b, ? AS c, ? AS d LIMIT ?");
      expect(statement.get("007", 7, new Uint8Array([1, 2]), null, 1)).toEqual({
        a: "007",
        b: 7,
        c: new Uint8Array([1, 2]),
        d: null,
      });
      expect(statement.toString()).toBe("SELECT +'007' AS a, +7 AS b, +x'0102' AS c, +NULL AS d LIMIT +1");
      expect(stores.db.prepare("SELECT ? AS v").get("x")).toEqual({ v: "x" });
      expect(stores.db.prepare("SELECT ? AS v").toString()).toBe("SELECT +NULL AS v");

      // A comparison with a written-out parameter still reads through its index.
      const plan = stores.db
        .query(
          `EXPLAIN QUERY PLAN SELECT * FROM runs WHERE conversation_id = ?
           AND state IN ('queued', 'running', 'interrupt_requested') ORDER BY queue_seq`,
        )
        .all("c") as Array<{ detail: string }>;
      expect(plan.map((p) => p.detail).join(" | ")).toContain(
        "USING INDEX runs_conversation_active (conversation_id=?)",
      );
    } finally {
      stores.close();
    }
    const existing = openExistingDatabase(file);
    try {
      expect(existing.query("SELECT count(*) AS n FROM runs WHERE id = ? LIMIT ?").toString()).toBe(
        "SELECT count(*) AS n FROM runs WHERE id = +NULL LIMIT +NULL",
      );
    } finally {
      existing.close();
      dir.cleanup();
    }
  });
});
