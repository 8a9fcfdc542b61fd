import type { ChildStore } from "./store.ts";

/**
 * The conversations of a conversation's child agents and of theirs, nearest first: what it
 * delegated, which goes with it when it is forgotten. Read level by level; empty when it has none.
 */
export async function delegatedConversations(
  store: Pick<ChildStore, "listChildren">,
  conversationId: string,
): Promise<string[]> {
  const found: string[] = [];
  let level = [conversationId];
  while (level.length > 0) {
    const next: string[] = [];
    for (const parent of level)
      for (const child of await store.listChildren({ parentConversationId: parent, limit: 1000 }))
        next.push(child.conversationId);
    found.push(...next);
    level = next;
  }
  return found;
}
