/**
 * The bot's pending updates with Telegram's confirmation rule: an update stays pending until a
 * getUpdates call arrives with an offset higher than its update_id. Only one long poll may wait at
 * a time; a newer call terminates the older one with 409, as Telegram does.
 */
import type { Update } from "grammy/types";
import { type UpdateBody, updateKind } from "./builders.ts";

/** Telegram's default when allowed_updates is empty: everything except these opt-in kinds. */
const OPT_IN_KINDS = new Set(["chat_member", "message_reaction", "message_reaction_count"]);
const MAX_LIMIT = 100;

interface Entry {
  update: Update;
  /** A replayed update is handed out once even if the client's offset already passed it. */
  replay: boolean;
  delivered: boolean;
}

export type PollResult = { kind: "updates"; updates: Update[] } | { kind: "conflict" };

interface Waiter {
  wake(result: PollResult | null): void;
}

export interface GetUpdatesParams {
  offset?: number;
  limit?: number;
  timeoutSeconds?: number;
  allowedUpdates?: string[];
}

export class UpdateQueue {
  private entries: Entry[] = [];
  private nextUpdateId: number;
  private allowed: Set<string> | null = null;
  private waiter: Waiter | null = null;
  private readonly listeners = new Set<() => void>();
  readonly confirmedIds: number[] = [];
  readonly droppedIds: number[] = [];
  private readonly history = new Map<number, Update>();

  constructor(firstUpdateId: number) {
    this.nextUpdateId = firstUpdateId;
  }

  push(body: UpdateBody): Update {
    const update = { ...body, update_id: body.update_id ?? this.nextUpdateId } as Update;
    this.nextUpdateId = Math.max(this.nextUpdateId, update.update_id + 1);
    this.history.set(update.update_id, update);
    this.insert({ update, replay: false, delivered: false });
    return update;
  }

  /** Queues an update that was already pushed (and maybe confirmed) once more. */
  deliverAgain(updateId: number): Update {
    const update = this.history.get(updateId);
    if (!update) throw new Error(`deliverAgain: update ${updateId} was never pushed to this emulator`);
    this.insert({ update, replay: true, delivered: false });
    return update;
  }

  pendingIds(): number[] {
    return this.entries.map((entry) => entry.update.update_id);
  }

  /** Notified whenever updates become pending (webhook delivery listens). */
  onPending(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Takes the oldest pending update without confirming it (webhook delivery). */
  peek(): Update | undefined {
    this.dropDisallowed();
    return this.entries[0]?.update;
  }

  /** Confirms one update by id (a webhook answered 2xx, or delivery gave up). */
  settle(updateId: number, outcome: "confirmed" | "dropped"): void {
    const index = this.entries.findIndex((entry) => entry.update.update_id === updateId);
    if (index === -1) return;
    this.entries.splice(index, 1);
    (outcome === "confirmed" ? this.confirmedIds : this.droppedIds).push(updateId);
  }

  dropAll(): void {
    for (const entry of this.entries) this.droppedIds.push(entry.update.update_id);
    this.entries = [];
  }

  setAllowedUpdates(kinds: string[] | undefined): void {
    if (kinds === undefined) return;
    this.allowed = kinds.length === 0 ? null : new Set(kinds);
  }

  /** Terminates a waiting long poll with 409 (webhook set, or another poller arrived). */
  conflictWaiter(): void {
    this.waiter?.wake({ kind: "conflict" });
    this.waiter = null;
  }

  async getUpdates(params: GetUpdatesParams, signal: AbortSignal): Promise<PollResult> {
    this.conflictWaiter();
    this.setAllowedUpdates(params.allowedUpdates);
    this.confirmBelow(params.offset ?? 0);
    const offset = params.offset ?? 0;
    const limit = Math.min(Math.max(params.limit ?? MAX_LIMIT, 1), MAX_LIMIT);
    const ready = this.take(offset, limit);
    const timeoutMs = Math.max(0, params.timeoutSeconds ?? 0) * 1000;
    if (ready.length > 0 || timeoutMs === 0 || signal.aborted) return { kind: "updates", updates: ready };

    return await new Promise<PollResult>((resolve) => {
      let settled = false;
      const finish = (result: PollResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        if (this.waiter === waiter) this.waiter = null;
        resolve(result);
      };
      const waiter: Waiter = {
        wake: (result) => finish(result ?? { kind: "updates", updates: this.take(offset, limit) }),
      };
      const timer = setTimeout(() => finish({ kind: "updates", updates: [] }), timeoutMs);
      const onAbort = () => finish({ kind: "updates", updates: [] });
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiter = waiter;
    });
  }

  /** Ends a waiting long poll with an empty answer (emulator closing). */
  releaseWaiter(): void {
    this.waiter?.wake({ kind: "updates", updates: [] });
    this.waiter = null;
  }

  private insert(entry: Entry): void {
    const at = this.entries.findIndex((other) => other.update.update_id > entry.update.update_id);
    if (at === -1) this.entries.push(entry);
    else this.entries.splice(at, 0, entry);
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.wake(null);
    for (const listener of this.listeners) listener();
  }

  private confirmBelow(offset: number): void {
    if (offset < 0) {
      // Negative offset: keep the last -offset updates, forget all earlier ones.
      const keep = this.entries.slice(offset);
      for (const entry of this.entries.slice(0, this.entries.length - keep.length)) {
        this.confirmedIds.push(entry.update.update_id);
      }
      this.entries = keep;
      return;
    }
    this.entries = this.entries.filter((entry) => {
      const confirmed = entry.update.update_id < offset && (!entry.replay || entry.delivered);
      if (confirmed) this.confirmedIds.push(entry.update.update_id);
      return !confirmed;
    });
  }

  private take(offset: number, limit: number): Update[] {
    this.dropDisallowed();
    const ready = this.entries
      .filter((entry) => entry.update.update_id >= offset || !entry.delivered)
      .slice(0, limit);
    for (const entry of ready) entry.delivered = true;
    return ready.map((entry) => entry.update);
  }

  private dropDisallowed(): void {
    this.entries = this.entries.filter((entry) => {
      const kind = updateKind(entry.update);
      const allowed = this.allowed ? this.allowed.has(kind) : !OPT_IN_KINDS.has(kind);
      if (!allowed) this.droppedIds.push(entry.update.update_id);
      return allowed;
    });
  }
}
