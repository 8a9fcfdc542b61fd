import type { ChildRecord, ChildStore } from "./store.ts";

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

/** A child agent with the children it started in turn (operator views: `runs show`, the console). */
export interface ChildNode extends ChildRecord {
  children: ChildNode[];
}

/**
 * The children of a run or conversation, oldest first, each with its own children (those of its
 * conversation), to the depth the links go. Empty when it delegated nothing.
 */
export async function childTree(
  store: Pick<ChildStore, "listChildren">,
  filter: { parentRunId: string } | { parentConversationId: string },
): Promise<ChildNode[]> {
  const children = await store.listChildren({ ...filter, limit: 1000 });
  return Promise.all(
    children.map(async (child) => ({
      ...child,
      children: await childTree(store, { parentConversationId: child.conversationId }),
    })),
  );
}
