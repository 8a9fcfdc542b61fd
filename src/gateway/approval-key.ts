import { randomBytes } from "node:crypto";
import type { Clock } from "../util/clock.ts";

/**
 * The key approval and forget buttons are signed with: SWITCHBOARD_APPROVAL_SECRET, or a key
 * generated once and kept in the database, read at start.
 */
export interface ApprovalKey {
  /** The key; throws before `load()` when it comes from the database. */
  secret(): string;
  load(): Promise<void>;
}

export function approvalKey(
  configured: string | null,
  deps: {
    /** The stored key named `name`, or `candidate` stored as it when there is none. */
    store: { loadOrCreateSecret(name: string, candidate: string, nowMs: number): Promise<string> };
    clock: Clock;
  },
): ApprovalKey {
  let key = configured;
  return {
    secret() {
      if (key === null) throw new Error("the approval key is read at start(); nothing may sign before");
      return key;
    },
    async load() {
      key ??= await deps.store.loadOrCreateSecret(
        "approval",
        randomBytes(32).toString("base64url"),
        deps.clock.now(),
      );
    },
  };
}
