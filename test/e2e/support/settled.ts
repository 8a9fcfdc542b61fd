import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { eventually } from "./gateway-process.ts";

/** Run states that still have work to do (see the runs_active index). */
const ACTIVE_RUN_STATES = "('queued', 'running', 'interrupt_requested')";
/** Outbox states the sender will still act on; delivered, failed, ambiguous and cancelled wait for nobody. */
const OPEN_OUTBOX_STATES = "('pending', 'sending')";
const OPEN_WORK_SQL = `SELECT
  (SELECT count(*) FROM runs WHERE state IN ${ACTIVE_RUN_STATES}) AS "activeRuns",
  (SELECT count(*) FROM outbox WHERE state IN ${OPEN_OUTBOX_STATES}) AS "openReplies"`;

/** What a gateway still has to do: runs not yet ended and replies not yet sent. */
export interface OpenWork {
  activeRuns: number;
  openReplies: number;
}

/**
 * What the gateway on `database` still has to do: a SQLite file path, or a PostgreSQL URL
 * (`postgres://…`).
 */
export async function openWork(database: string): Promise<OpenWork> {
  if (/^postgres(ql)?:\/\//.test(database)) {
    const sql = new SQL(database, { max: 1 });
    try {
      const [row] = (await sql.unsafe(OPEN_WORK_SQL)) as Array<Record<keyof OpenWork, number | string>>;
      return { activeRuns: Number(row?.activeRuns), openReplies: Number(row?.openReplies) };
    } finally {
      await sql.close();
    }
  }
  const db = new Database(database, { readonly: true });
  try {
    return db.query(OPEN_WORK_SQL).get() as OpenWork;
  } finally {
    db.close();
  }
}

/**
 * Waits until the gateway on `database` (a SQLite file path or a PostgreSQL URL) has nothing left
 * to do: every run ended and no reply pending or being sent. A "nothing more was sent" check made
 * after this cannot be early, since a second answer or a resend needs an active run or an open
 * outbox record first; waiting for this replaces sleeping "long enough for a duplicate to show".
 * Not for a chat held behind an ambiguous reply: its later replies stay pending.
 */
export async function waitUntilSettled(database: string, timeoutMs = 15_000): Promise<void> {
  await eventually(
    async () => {
      const work = await openWork(database);
      return work.activeRuns === 0 && work.openReplies === 0;
    },
    timeoutMs,
    `the gateway on ${database.replace(/\/\/[^@/]*@/, "//")} to end every run and send every reply`,
  );
}

/** The id and state of the one outbox record whose Markdown is `markdown`, in the SQLite file `dbPath`. */
export function outboxRecordOf(dbPath: string, markdown: string): { id: string; state: string } {
  const db = new Database(dbPath, { readonly: true });
  try {
    const row = db.query("SELECT id, state FROM outbox WHERE markdown = ?").get(markdown);
    if (row === null) throw new Error(`no outbox record with the Markdown "${markdown}" in ${dbPath}`);
    return row as { id: string; state: string };
  } finally {
    db.close();
  }
}
