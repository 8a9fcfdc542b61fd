import type { SQL } from "bun";
import type { ScheduleRepository } from "../../../schedules/types.ts";
import type { OperatorQueries } from "../../operator/queries.ts";
import { operatorQueries } from "../operator-queries.ts";

/** Operator queries over switchboard's PostgreSQL database and its schedule repository. */
export function createPostgresOperatorQueries(stores: {
  sql: SQL;
  schedules: ScheduleRepository;
}): OperatorQueries {
  const { sql } = stores;
  return operatorQueries(
    {
      param: (n, type) => `$${n}::${type}`,
      all: async (text, params) => (await sql.unsafe(text, [...params])) as unknown[],
      anyOf: (column, values) => ({ condition: `${column} = ANY($1::text[])`, params: [values] }),
    },
    stores.schedules,
  );
}
