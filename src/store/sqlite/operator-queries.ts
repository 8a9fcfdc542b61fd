import type { Database, SQLQueryBindings } from "bun:sqlite";
import type { ScheduleRepository } from "../../../schedules/types.ts";
import type { OperatorQueries } from "../../operator/queries.ts";
import { operatorQueries } from "../operator-queries.ts";
import { placeholders } from "./database.ts";

/** Operator queries over switchboard's SQLite database and its schedule repository. */
export function createSqliteOperatorQueries(stores: {
  db: Database;
  schedules: ScheduleRepository;
}): OperatorQueries {
  const { db } = stores;
  return operatorQueries(
    {
      param: (n) => `?${n}`,
      all: (sql, params) => {
        try {
          return Promise.resolve(db.query(sql).all(...(params as SQLQueryBindings[])));
        } catch (error) {
          return Promise.reject(error);
        }
      },
      anyOf: (column, values) => ({
        condition: `${column} IN (${placeholders(values.length)})`,
        params: [...values],
      }),
    },
    stores.schedules,
  );
}
