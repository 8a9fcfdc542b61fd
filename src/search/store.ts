/**
 * The persistence of history search. src/store implements it on both engines (FTS5 on SQLite,
 * tsvector with a GIN index on PostgreSQL), indexing messages in the transactions that write
 * them; test/store/search-conformance.ts is its suite.
 */
import type { SearchQuery } from "./query.ts";

/** Which conversations a search or read may see. */
export type SearchScope =
  /** Conversations where this principal (`<channel>:<user id>`) had a turn: the default for the agent. */
  | { kind: "principal"; principal: string }
  /**
   * Every conversation in this room (`<channel>:<room key>`): a Slack channel with its threads, a
   * Telegram group with its topics, whoever wrote there. A DM is its own room.
   */
  | { kind: "room"; room: string }
  /** Only this conversation. */
  | { kind: "conversation"; conversationId: string }
  /** Every conversation (operators), optionally one. */
  | { kind: "all"; conversationId?: string };

export interface SearchHit {
  /** The message's id: what history_read takes. */
  ref: string;
  conversationId: string;
  runId: string;
  role: "user" | "assistant";
  atMs: number;
  /** The matching passage, matches in [brackets]. */
  snippet: string;
}

export interface HistoryMessage {
  ref: string;
  role: "user" | "assistant";
  atMs: number;
  runId: string;
  text: string;
}

export interface HistoryWindow {
  conversationId: string;
  /** Oldest first; the referenced message among them. */
  messages: HistoryMessage[];
}

export interface SearchStore {
  /** Best matches first, at most `limit`, only from conversations `scope` admits. Read-only. */
  searchHistory(request: { query: SearchQuery; scope: SearchScope; limit: number }): Promise<SearchHit[]>;

  /**
   * The message `ref` with up to `before` messages before and `after` after it in its conversation.
   * Null when it does not exist or `scope` does not admit its conversation: the two are the same
   * answer, so a reference from elsewhere cannot be told apart from a made-up one.
   */
  readHistory(request: {
    ref: string;
    scope: SearchScope;
    before: number;
    after: number;
  }): Promise<HistoryWindow | null>;
}
