import type { SQL } from "bun";
import type { BlobReferences } from "../../runtime/blob-cleanup.ts";
import {
  blobReferenceSources,
  collectReferences,
  idsOfMessageParts,
  idsOfOutboxMedia,
} from "../blob-reference-sources.ts";

const SOURCES = blobReferenceSources("(s.settings::jsonb ->> 'mediaReleased') = 'true'");

/** Which blobs the rows point at. */
export function readBlobReferences(sql: SQL): Promise<BlobReferences> {
  return collectReferences(SOURCES, (text) => sql.unsafe(text) as Promise<Array<Record<string, unknown>>>);
}

/** Blob ids the messages of one conversation point at, and the files its outbox records send. */
export async function readConversationBlobIds(sql: SQL, conversationId: string): Promise<Set<string>> {
  const rows = await sql<Array<Record<string, unknown>>>`
    SELECT parts FROM messages WHERE conversation_id = ${conversationId} AND parts LIKE '%"blobId"%'`;
  const files = await sql<Array<Record<string, unknown>>>`
    SELECT media FROM outbox WHERE conversation_id = ${conversationId} AND media IS NOT NULL`;
  return new Set([...rows.flatMap(idsOfMessageParts), ...files.flatMap(idsOfOutboxMedia)]);
}
