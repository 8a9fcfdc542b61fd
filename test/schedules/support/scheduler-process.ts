/**
 * One scheduler instance in its own process, for the multi-instance test: opens its own
 * connection to the database file, runs the service with real time until `stopAtMs`, and prints
 * one JSON line per dispatch.
 * Usage: bun scheduler-process.ts <db file> <owner> <stopAtMs>
 */
import { Database } from "bun:sqlite";
import { createScheduleService } from "../../../schedules/service.ts";
import { createSqliteScheduleRepository } from "../../../src/store/sqlite/schedules.ts";
import { systemClock } from "../../../src/util/clock.ts";

const [file, owner, stopAt] = process.argv.slice(2);
if (!file || !owner || !stopAt) throw new Error("usage: scheduler-process.ts <db file> <owner> <stopAtMs>");

const db = new Database(file, { strict: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA busy_timeout = 3000");

const lines: string[] = [];
const service = createScheduleService({
  repository: createSqliteScheduleRepository(db),
  clock: systemClock,
  owner,
  limits: { minIntervalMs: 1000 },
  dispatch: async (request) => {
    // A little jitter so the two processes interleave their claims and settles.
    await Bun.sleep(Math.random() * 15);
    lines.push(JSON.stringify({ owner, key: request.idempotencyKey, atMs: Date.now() }));
    return { status: "ok", runId: `run_${owner}_${lines.length}` };
  },
  onEvent: (event) => {
    if (event.type === "store-error" || event.type === "settle-refused") {
      lines.push(
        JSON.stringify({ owner, event: event.type, detail: String((event as { error?: unknown }).error) }),
      );
    }
  },
});

await service.start();
await Bun.sleep(Math.max(0, Number(stopAt) - Date.now()));
await service.stop();
db.close();
process.stdout.write(lines.map((line) => `${line}\n`).join(""));
