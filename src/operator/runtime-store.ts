import type { ChildStore } from "../children/store.ts";
import type { AcquiredRun, AcquireRequest, ConversationHead, RuntimeStore } from "../runtime/store.ts";

/**
 * The runtime store as the operator uses it: the runtime's port (src/runtime/store.ts), the child
 * agents' (src/children/store.ts: a run's or a conversation's children), and what only operators
 * ask of it (a conversation's head, and a run taken by id, which an import
 * settles without a model). Same conventions: one transaction per method, times in milliseconds
 * from the caller.
 */
export interface OperatorRuntimeStore extends RuntimeStore, ChildStore {
  /**
   * Takes ownership of a queued run, or of a running one whose lease expired, incrementing its
   * fencing token. Null when the run is not acquirable (terminal, or leased by a live owner).
   */
  acquireRun(request: AcquireRequest): Promise<AcquiredRun | null>;

  /** Conversation head: version and latest event seq. Null when unknown. */
  loadConversation(conversationId: string): Promise<ConversationHead | null>;
}
