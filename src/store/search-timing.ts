/**
 * When a message enters the history-search index, decided once for both engines: SQLite's
 * triggers and PostgreSQL's trigger functions are built from these conditions (SQL both
 * dialects read alike; `message` and `run` name a row, such as `new` or `m`).
 *
 * A user's input is indexed by the transaction that ends its run: the terminal commit that writes
 * the answer, or whatever else ends it (cancelled, failed, superseded, absorbed), for every input
 * the run consumed, coalesced ones included. Admission, the acknowledgement the platform waits
 * on, writes no index row. Every other message (answers, tool results) is indexed by the
 * transaction that writes it. An edit reindexes a message the index has and leaves one it does
 * not have yet to its run's end; a deleted message leaves the index whether or not it was in it.
 */

/** The role of a user's input: the one message kind indexed at its run's end. */
export const INPUT_ROLE = "user";

/**
 * `message` is indexed by the transaction that writes it: anything but an input. Inputs are
 * written only by admission, into a run that is new or still pending, never into one that has
 * ended, so the insert trigger checks the role alone (looking the run up on every admission cost
 * about 4% of admission throughput on SQLite).
 */
export function indexedWhenWritten(message: string): string {
  return `(${message}.role <> '${INPUT_ROLE}')`;
}

/** `message` belongs in the index now: indexed when written, or an input whose run has ended. */
export function searchableNow(message: string): string {
  return `(${indexedWhenWritten(message)} OR EXISTS (
    SELECT 1 FROM runs WHERE runs.id = ${message}.run_id AND runs.finish_seq IS NOT NULL))`;
}

/** An update from `before` to `after` of a run's row ends the run (its finish_seq is set). */
export function runEnds(before: string, after: string): string {
  return `${before}.finish_seq IS NULL AND ${after}.finish_seq IS NOT NULL`;
}

/** `message` is one of the inputs `run` consumed (coalesced inputs are written with its id). */
export function inputOf(message: string, run: string): string {
  return `${message}.run_id = ${run}.id AND ${message}.role = '${INPUT_ROLE}'`;
}
