import type { Database } from "bun:sqlite";

/*
 * SQLite 3.54 (bun 1.4's) lets the query planner read the value bound to `LIMIT ?`, and to
 * `column = ?` in a statement with a join or an ORDER BY, and marks the statement to be prepared
 * again when that value is cleared. bun clears a statement's bindings each time it binds new
 * ones, so every run of such a statement parsed and planned it again: 10 to 90 µs, several times
 * its own work (the outbox worker's heads query, the conversation's active runs, the prompt's
 * turns). Written `+?`, a parameter is an expression the planner leaves alone; its value, its
 * affinity and the index a comparison uses are the same.
 */

/** `sql` with each `?` or `?NNN` parameter outside literals, quoted names and comments as `+?`. */
export function unplannedParameters(sql: string): string {
  let out = "";
  let i = 0;
  while (i < sql.length) {
    const skipped = SKIPPED.find(([open]) => sql.startsWith(open, i));
    if (skipped) {
      const end = sql.indexOf(skipped[1], i + skipped[0].length);
      const stop = end === -1 ? sql.length : end + skipped[1].length;
      out += sql.slice(i, stop);
      i = stop;
    } else {
      out += sql[i] === "?" ? "+?" : sql[i];
      i += 1;
    }
  }
  return out;
}

/** Spans copied as they are, by what opens and closes them. A doubled quote reads as two spans. */
const SKIPPED: ReadonlyArray<readonly [open: string, close: string]> = [
  ["'", "'"],
  ['"', '"'],
  ["`", "`"],
  ["[", "]"],
  ["--", "\n"],
  ["/*", "*/"],
];

/** Past this many distinct statements the rewrites are forgotten (IN lists vary in length). */
const MAX_REMEMBERED = 2048;

/**
 * Makes `db` prepare every statement with unplanned parameters (see above). Statements are
 * rewritten once and remembered, so a cached statement costs a map lookup more.
 */
export function planOnce(db: Database): void {
  const query = db.query.bind(db);
  const prepare = db.prepare.bind(db);
  const rewritten = new Map<string, string>();
  const rewrite = (sql: string): string => {
    let plain = rewritten.get(sql);
    if (plain === undefined) {
      if (rewritten.size >= MAX_REMEMBERED) rewritten.clear();
      plain = unplannedParameters(sql);
      rewritten.set(sql, plain);
    }
    return plain;
  };
  db.query = ((sql: string) => query(rewrite(sql))) as typeof db.query;
  db.prepare = ((sql: string, ...rest: unknown[]) =>
    (prepare as (sql: string, ...rest: unknown[]) => ReturnType<typeof db.prepare>)(
      rewrite(sql),
      ...rest,
    )) as typeof db.prepare;
}
