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
    const c = sql[i]!;
    const close = CLOSERS[c];
    if (close !== undefined) {
      const end = sql.indexOf(close, i + 1);
      const stop = end === -1 ? sql.length : end + close.length;
      out += sql.slice(i, stop);
      i = stop;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      const stop = end === -1 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop;
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      const stop = end === -1 ? sql.length : end + 2;
      out += sql.slice(i, stop);
      i = stop;
    } else {
      out += c === "?" ? "+?" : c;
      i += 1;
    }
  }
  return out;
}

/** What ends a literal or quoted name that starts with the key. A doubled quote reads as two. */
const CLOSERS: Readonly<Record<string, string>> = { "'": "'", '"': '"', "`": "`", "[": "]" };

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
