import type { Database } from "bun:sqlite";
import { type Clock, systemClock } from "../../util/clock.ts";
import type { ExternalCommitWatch } from "../backend.ts";

/**
 * Calls `onCommit` within `intervalMs` of another connection committing to `db`'s file: the
 * operator CLI working on the database while the gateway runs (`outbox retry`, `schedules
 * resume`). The gateway's own writes wake its workers directly; only these need finding.
 *
 * `PRAGMA data_version` changes exactly when some other connection committed since the last
 * look, and reading it touches no table, so an idle gateway pays one cheap statement per interval.
 */
export function watchExternalCommits(
  db: Database,
  options: {
    intervalMs: number;
    onCommit: () => void;
    onError?: (error: unknown) => void;
    /** Times the checks. Default the system clock. */
    clock?: Clock;
  },
): ExternalCommitWatch {
  const query = db.query<{ data_version: number }, []>("PRAGMA data_version");
  const read = () => query.get()?.data_version ?? 0;
  let seen = read();
  const interval = (options.clock ?? systemClock).every(
    options.intervalMs,
    () => {
      try {
        const now = read();
        if (now === seen) return;
        seen = now;
        options.onCommit();
      } catch (error) {
        options.onError?.(error);
      }
    },
    { unref: true },
  );
  return {
    stop: () => interval.cancel(),
  };
}
