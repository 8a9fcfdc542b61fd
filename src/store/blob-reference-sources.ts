import { type BlobReferences, blobIdsOfParts } from "../runtime/blob-cleanup.ts";
import { isBlobId } from "../runtime/blobs.ts";
import type { MessagePart } from "../runtime/types.ts";

/**
 * One kind of row that points at blobs, for cleanup: its query (per engine), and how to read the
 * blob ids off one row. `pinned` rows are pending work (never removed); the others are history,
 * which retention may remove.
 */
export interface BlobReferenceSource<Row> {
  name: string;
  pinned: boolean;
  sql: string;
  ids(row: Row): string[];
  /**
   * When the row promises its blobs until an instant (ms): they go into `keptUntil` instead
   * (the later promise wins), and `pinned` is not consulted. Null: no promise on this row.
   */
  untilMs?(row: Row): number | null;
}

/**
 * Every table whose rows point at blobs, with the same meaning on both engines; `released` is the
 * engine's SQL for "the conversation's settings say `mediaReleased`" (about `s.settings`). A new
 * table that stores blob ids adds a source here.
 */
export function blobReferenceSources(
  released: string,
): ReadonlyArray<BlobReferenceSource<Record<string, unknown>>> {
  return [
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
              SELECT 1 FROM conversation_settings s WHERE s.conversation_id = m.conversation_id AND ${released})`,
      ids: idsOfMessageParts,
    },
    {
      name: "files the outbox has yet to settle",
      pinned: true,
      sql: `SELECT media FROM outbox WHERE media IS NOT NULL AND state NOT IN ('delivered', 'cancelled')`,
      ids: idsOfOutboxMedia,
    },
    {
      // A purge sets `media` to NULL, so a forgotten conversation's exports promise nothing.
      name: "exports kept for download",
      pinned: false,
      sql: `SELECT media FROM outbox WHERE media LIKE '%"keepUntilMs"%'`,
      ids: idsOfOutboxMedia,
      untilMs: keepUntilOfOutboxMedia,
    },
  ];
}

/**
 * Runs every source's query and sorts the ids into pinned and kept. The queries need not share a
 * snapshot: history (`kept`) covers every message of a live conversation, so a run that finishes
 * between two queries moves nothing out of both sets.
 */
export async function collectReferences<Row>(
  sources: ReadonlyArray<BlobReferenceSource<Row>>,
  query: (sql: string) => Row[] | Promise<Row[]>,
): Promise<BlobReferences> {
  const pinned = new Set<string>();
  const kept = new Set<string>();
  const keptUntil = new Map<string, number>();
  for (const source of sources) {
    const into = source.pinned ? pinned : kept;
    for (const row of await query(source.sql)) {
      if (source.untilMs) {
        const untilMs = source.untilMs(row);
        if (untilMs === null) continue;
        for (const id of source.ids(row)) keptUntil.set(id, Math.max(untilMs, keptUntil.get(id) ?? untilMs));
        continue;
      }
      for (const id of source.ids(row)) into.add(id);
    }
  }
  return { pinned, kept, keptUntil };
}

/** The blob ids of a `messages` row's `parts` (JSON text); a row that does not parse has none. */
export function idsOfMessageParts(row: Record<string, unknown>): string[] {
  if (typeof row.parts !== "string") return [];
  try {
    return blobIdsOfParts(JSON.parse(row.parts) as MessagePart[]).filter(isBlobId);
  } catch {
    return [];
  }
}

/** The blob id of an `outbox` row's `media` (JSON OutboxMedia); none when absent or unreadable. */
export function idsOfOutboxMedia(row: Record<string, unknown>): string[] {
  if (typeof row.media !== "string") return [];
  try {
    const blobId = (JSON.parse(row.media) as { blobId?: unknown }).blobId;
    return typeof blobId === "string" && isBlobId(blobId) ? [blobId] : [];
  } catch {
    return [];
  }
}

/** An `outbox` row's `media.keepUntilMs`; null when absent or unreadable. */
export function keepUntilOfOutboxMedia(row: Record<string, unknown>): number | null {
  if (typeof row.media !== "string") return null;
  try {
    const keepUntilMs = (JSON.parse(row.media) as { keepUntilMs?: unknown }).keepUntilMs;
    return typeof keepUntilMs === "number" && Number.isFinite(keepUntilMs) ? keepUntilMs : null;
  } catch {
    return null;
  }
}
