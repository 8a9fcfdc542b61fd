import type { Database } from "bun:sqlite";
import type { BlobReferences } from "../../runtime/blob-cleanup.ts";
import {
  blobReferenceSources,
  collectReferences,
  idsOfMessageParts,
  idsOfOutboxMedia,
} from "../blob-reference-sources.ts";

const SOURCES = blobReferenceSources("json_extract(s.settings, '$.mediaReleased') = 1");

/** Which blobs the rows point at. */
export function readBlobReferences(db: Database): Promise<BlobReferences> {
  return collectReferences(SOURCES, (sql) => db.query(sql).all() as Array<Record<string, unknown>>);
}

/** Blob ids the messages of one conversation point at, and the files its outbox records send. */
export function readConversationBlobIds(db: Database, conversationId: string): Set<string> {
  const rows = db
    .query(`SELECT parts FROM messages WHERE conversation_id = ? AND parts LIKE '%"blobId"%'`)
    .all(conversationId) as Array<Record<string, unknown>>;
  const files = db
    .query(`SELECT media FROM outbox WHERE conversation_id = ? AND media IS NOT NULL`)
    .all(conversationId) as Array<Record<string, unknown>>;
  return new Set([...rows.flatMap(idsOfMessageParts), ...files.flatMap(idsOfOutboxMedia)]);
}
