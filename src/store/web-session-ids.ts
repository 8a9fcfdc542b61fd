/**
 * Data migration "web-session-ids", shared by both engines (sqlite/web-session-ids.ts,
 * postgres/web-session-ids.ts). Before issue 38 the web chat keyed everything by the browser's
 * session id, the only key to a web user's transcript: conversation keys (`web:local:dm:<id>`),
 * principals (`web:<id>`, labelled `web:web:<id>`), ingress keys (`<id>:<client message id>`),
 * reply targets, and every copy of those in runs, events, messages, approvals, budgets and the
 * search tables. Now the web channel knows a user only by the id derived from the session id
 * (channels/web/user-id.ts). This rewrites every stored copy of a session id to that user id, and
 * `web:<session id>` (the old principal) to the bare user id, so `web:web:<id>` becomes
 * `web:<user id>` as new rows have it. It needs the gateway's key, so the gateway runs it at
 * start (src/gateway/web-user-ids.ts), once: in one transaction with the record that it ran.
 *
 * Session ids are found where the old code put them (DISCOVERY); the rewrite then visits every
 * text column of every table (a column added later is covered too), except the few below.
 */

/** The `switchboard_meta` key that records the migration ran (its value: what it changed, JSON). */
export const WEB_SESSION_IDS_MIGRATION = "web_session_ids_migrated";

/** What a session id looked like (channels/web/inbound.ts). */
const SESSION_ID = /^[A-Za-z0-9_-]{16,128}$/;

/** Tables never rewritten: the migration's own record and the gateway's keys hold no session id. */
export const UNTOUCHED_TABLES: ReadonlySet<string> = new Set(["switchboard_meta", "secrets"]);

/** Columns that hold lower-cased copies (the operator's conversation search, migration 19/17). */
export const LOWERCASED_COLUMNS: ReadonlySet<string> = new Set(["conversation_lookup.term"]);

/**
 * Where the old code stored a session id, each query answering one text column `v` and the prefix
 * before the id: every id stored anywhere is also in one of these (a conversation's key, an
 * input's receipt, a reply's target, a principal's usage or search row, a budget override).
 */
export const DISCOVERY: ReadonlyArray<{ sql: string; prefix: string; suffixAfterColon?: true }> = [
  { sql: "SELECT key AS v FROM conversation_keys WHERE key LIKE 'web:local:dm:%'", prefix: "web:local:dm:" },
  {
    sql: "SELECT key AS v FROM ingress_receipts WHERE source = 'web:local'",
    prefix: "",
    suffixAfterColon: true,
  },
  { sql: "SELECT target AS v FROM outbox WHERE channel = 'web'", prefix: "" },
  { sql: "SELECT reply_target AS v FROM schedules WHERE channel = 'web'", prefix: "" },
  { sql: "SELECT principal AS v FROM budget_usage WHERE principal LIKE 'web:web:%'", prefix: "web:web:" },
  {
    sql: "SELECT principal AS v FROM conversation_principals WHERE principal LIKE 'web:web:%'",
    prefix: "web:web:",
  },
  {
    sql: "SELECT scope AS v FROM budget_overrides WHERE scope LIKE 'user:web:web:%'",
    prefix: "user:web:web:",
  },
];

/** Pure: the session id a DISCOVERY row names, or null when it names none. */
export function sessionIdIn(value: unknown, source: (typeof DISCOVERY)[number]): string | null {
  if (typeof value !== "string" || !value.startsWith(source.prefix)) return null;
  let id = value.slice(source.prefix.length);
  if (source.suffixAfterColon) id = id.slice(0, Math.max(0, id.indexOf(":")));
  return SESSION_ID.test(id) ? id : null;
}

/** What one run of the migration changed (counts only: it never reports an id). */
export interface WebSessionMigration {
  /** Session ids found and rewritten. */
  sessions: number;
  /** Rows changed, over all tables. */
  rows: number;
  /** Tables that had at least one row changed. */
  tables: string[];
}

/**
 * A token of the session id alphabet, whole (not part of a longer one), with an optional `web:`
 * before it: the old principal id `web:<id>` becomes the bare user id.
 */
const TOKEN = /(?<![A-Za-z0-9_-])(web:)?([A-Za-z0-9_-]{16,128})(?![A-Za-z0-9_-])/g;

/** Pure: rewrites stored text, session ids to user ids. */
export class SessionIdRewriter {
  private readonly exact: Map<string, string>;
  private readonly lower: Map<string, string>;

  constructor(userIds: ReadonlyMap<string, string>) {
    this.exact = new Map(userIds);
    this.lower = new Map([...userIds].map(([session, user]) => [session.toLowerCase(), user.toLowerCase()]));
  }

  get size(): number {
    return this.exact.size;
  }

  /** The session ids, for a database-side filter. */
  sessionIds(): string[] {
    return [...this.exact.keys()];
  }

  /**
   * The text with every session id replaced by its user id (`web:<session id>` by the bare user
   * id); null when it holds none. In a lower-cased column only lower-cased copies are replaced,
   * by the lower-cased user id; elsewhere a lower-cased copy is too, after the exact ones.
   */
  rewrite(text: string, lowercased = false): string | null {
    let changed = false;
    const out = text.replace(TOKEN, (match, _web: string | undefined, token: string) => {
      const id = this.userIdOf(token, lowercased);
      if (id === undefined) return match;
      changed = true;
      return id;
    });
    return changed ? out : null;
  }

  private userIdOf(token: string, lowercased: boolean): string | undefined {
    if (lowercased) return this.lower.get(token);
    return this.exact.get(token) ?? this.lower.get(token);
  }
}

/**
 * The rewriter of the session ids that the rows of the DISCOVERY queries name (`found[i]`: the
 * rows of `DISCOVERY[i]`), asking `userIdOf` once for each id, in the order they are found.
 */
export function rewriterOf(
  found: ReadonlyArray<ReadonlyArray<{ v: unknown }>>,
  userIdOf: (sessionId: string) => string,
): SessionIdRewriter {
  const userIds = new Map<string, string>();
  DISCOVERY.forEach((source, i) => {
    for (const row of found[i] ?? []) {
      const sessionId = sessionIdIn(row.v, source);
      if (sessionId !== null && !userIds.has(sessionId)) userIds.set(sessionId, userIdOf(sessionId));
    }
  });
  return new SessionIdRewriter(userIds);
}

/**
 * The text columns of a row of `table` (`columns[n]` read as `c<n>` of `row`) that hold a session
 * id, rewritten: each as its index in `columns` and its new text.
 */
export function rewrittenColumns(
  row: Readonly<Record<string, unknown>>,
  table: string,
  columns: readonly string[],
  rewriter: SessionIdRewriter,
): Array<[number, string]> {
  const values: Array<[number, string]> = [];
  columns.forEach((column, n) => {
    const value = row[`c${n}`];
    if (typeof value !== "string") return;
    const rewritten = rewriter.rewrite(value, LOWERCASED_COLUMNS.has(`${table}.${column}`));
    if (rewritten !== null) values.push([n, rewritten]);
  });
  return values;
}
