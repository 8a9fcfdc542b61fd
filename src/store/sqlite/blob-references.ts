import type { Database } from "bun:sqlite";
import type { BlobReferences } from "../../runtime/blob-cleanup.ts";
import {
  type BlobReferenceSource,
  collectReferences,
  idsOfMessageParts,
  idsOfOutboxMedia,
} from "../blob-reference-sources.ts";

/**
 * Every table whose rows point at blobs. A new one adds a source here and in
 * ../postgres/blob-references.ts, with the same meaning.
 */
const SOURCES: ReadonlyArray<BlobReferenceSource<Record<string, unknown>>> = [
  {
    name: "inputs of unfinished runs",
    pinned: true,
    sql: `SELECT m.parts FROM messages m JOIN runs r ON r.id = m.run_id
          WHERE r.state IN ('queued', 'running', 'interrupt_requested') AND m.parts LIKE '%"blobId"%'`,
    ids: idsOfMessageParts,
  },
  {
    name: "messages of live conversations",
    pinned: false,
    sql: `SELECT m.parts FROM messages m
          WHERE m.parts LIKE '%"blobId"%' AND NOT EXISTS (
            SELECT 1 FROM conversation_settings s
            WHERE s.conversation_id = m.conversation_id AND json_extract(s.settings, '$.mediaReleased') = 1)`,
    ids: idsOfMessageParts,
  },
  {
    name: "files the outbox has yet to settle",
    pinned: true,
    sql: `SELECT media FROM outbox WHERE media IS NOT NULL AND state NOT IN ('delivered', 'cancelled')`,
    ids: idsOfOutboxMedia,
  },
];

/** Which blobs the rows point at. */
export function readBlobReferences(db: Database): Promise<BlobReferences> {
  return collectReferences(SOURCES, (sql) => db.query(sql).all() as Array<Record<string, unknown>>);
}

/** Blob ids the messages of one conversation point at. */
export function readConversationBlobIds(db: Database, conversationId: string): Set<string> {
  const rows = db
    .query(`SELECT parts FROM messages WHERE conversation_id = ? AND parts LIKE '%"blobId"%'`)
    .all(conversationId) as Array<Record<string, unknown>>;
  return new Set(rows.flatMap(idsOfMessageParts));
}
