/**
 * Preloaded into the gateway (`bun --preload`) by `bench/reply-latency.ts --sql-trace`: counts and
 * times every SQL statement bun:sqlite runs, by its text, and writes the totals as JSON to the
 * file named by SWITCHBOARD_SQL_TRACE when the process is told to stop. Transactions' own BEGIN
 * and COMMIT are not statements here.
 */
import { Database, type Statement } from "bun:sqlite";
import { writeFileSync } from "node:fs";

export interface TracedStatement {
  sql: string;
  count: number;
  ms: number;
}

const totals = new Map<string, TracedStatement>();
const traced = new WeakSet<Statement>();

function record(sql: string, startedAt: number): void {
  const text = sql.replace(/\s+/g, " ").trim();
  const entry = totals.get(text) ?? { sql: text, count: 0, ms: 0 };
  entry.count += 1;
  entry.ms += performance.now() - startedAt;
  totals.set(text, entry);
}

/** bun caches a query's statement: each one is wrapped once, whoever asks for it again. */
function traceStatement(statement: Statement, sql: string): Statement {
  if (traced.has(statement)) return statement;
  traced.add(statement);
  for (const method of ["run", "get", "all", "values"] as const) {
    const original = statement[method] as (...args: unknown[]) => unknown;
    (statement as unknown as Record<string, unknown>)[method] = function (
      this: Statement,
      ...args: unknown[]
    ) {
      const startedAt = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        record(sql, startedAt);
      }
    };
  }
  return statement;
}

const prototype = Database.prototype as unknown as Record<
  string,
  (sql: string, ...rest: unknown[]) => unknown
>;
for (const method of ["query", "prepare"]) {
  const original = prototype[method]!;
  prototype[method] = function (this: Database, sql: string, ...rest: unknown[]) {
    return traceStatement(original.call(this, sql, ...rest) as Statement, sql);
  };
}

const out = process.env.SWITCHBOARD_SQL_TRACE;
if (out) {
  const write = () => writeFileSync(out, JSON.stringify([...totals.values()]));
  process.on("SIGTERM", write);
  process.on("beforeExit", write);
}
