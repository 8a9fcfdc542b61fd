/**
 * Opaque page cursors for the operator list views. A cursor is the sort key of the last item a
 * page showed, tagged with the list it belongs to and encoded as base64url JSON; the next page
 * starts strictly after that key, so pages neither repeat nor skip items that stay in place.
 * Callers must not build cursors themselves: only `nextCursor` of a previous page is accepted.
 */
import { SwitchboardError } from "../errors.ts";

/** One page of a list, newest first; `nextCursor` null when this page is the last. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export type CursorList = "runs" | "outbox" | "conversations" | "messages";
type KeyPart = "number" | "string";
type KeyOf<S extends readonly KeyPart[]> = { [I in keyof S]: S[I] extends "number" ? number : string };

/** The sort key each list's cursor carries (matching its ORDER BY). */
export const CURSOR_KEYS = {
  runs: ["number"],
  outbox: ["number", "number", "string"],
  conversations: ["number", "string"],
  messages: ["number"],
} as const satisfies Record<CursorList, readonly KeyPart[]>;

type Key<L extends CursorList> = KeyOf<(typeof CURSOR_KEYS)[L]>;

export function encodeCursor<L extends CursorList>(list: L, key: Key<L>): string {
  return Buffer.from(JSON.stringify([list, ...(key as unknown[])]), "utf8").toString("base64url");
}

/** The key inside `cursor`; `input_invalid` naming the field when it is not a cursor of `list`. */
export function decodeCursor<L extends CursorList>(list: L, cursor: string, field = "cursor"): Key<L> {
  const shape: readonly KeyPart[] = CURSOR_KEYS[list];
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    parsed = undefined;
  }
  const valid =
    Array.isArray(parsed) &&
    parsed.length === shape.length + 1 &&
    parsed[0] === list &&
    shape.every((type, i) =>
      type === "number" ? Number.isSafeInteger(parsed[i + 1]) : typeof parsed[i + 1] === "string",
    );
  if (!valid) {
    throw new SwitchboardError(
      "input_invalid",
      `${field} ${JSON.stringify(cursor.slice(0, 80))} is not a cursor of the ${list} list; pass the nextCursor of the previous page, or leave it out for the first page.`,
      { details: { field } },
    );
  }
  return (parsed as unknown[]).slice(1) as Key<L>;
}

/**
 * A page from up to `limit + 1` rows in list order: the extra row only tells that another page
 * follows, and the cursor is the key of the last item shown.
 */
export function toPage<T, L extends CursorList>(
  rows: readonly T[],
  limit: number,
  list: L,
  keyOf: (item: T) => Key<L>,
): Page<T> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return {
    items,
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(list, keyOf(last)) : null,
  };
}
