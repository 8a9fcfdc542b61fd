import type { SQL } from "bun";
import type { BlobReferences } from "../../runtime/blob-cleanup.ts";
import {
  type BlobReferenceSource,
  collectReferences,
  idsOfMessageParts,
  idsOfOutboxMedia,
} from "../blob-reference-sources.ts";

/**
 * Every table whose rows point at blobs. A new one adds a source here and in
 * ../sqlite/blob-references.ts, with the same meaning.
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
            WHERE s.conversation_id = m.conversation_id AND (s.settings::jsonb ->> 'mediaReleased') = 'true')`,
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
export function readBlobReferences(sql: SQL): Promise<BlobReferences> {
  return collectReferences(SOURCES, (text) => sql.unsafe(text) as Promise<Array<Record<string, unknown>>>);
}

/** Blob ids the messages of one conversation point at. */
export async function readConversationBlobIds(sql: SQL, conversationId: string): Promise<Set<string>> {
  const rows = await sql<Array<Record<string, unknown>>>`
    SELECT parts FROM messages WHERE conversation_id = ${conversationId} AND parts LIKE '%"blobId"%'`;
  return new Set(rows.flatMap(idsOfMessageParts));
}
