import type { OutboxRepository } from "../../outbox/types.ts";
import type { ConsoleChange } from "./change-feed.ts";

/**
 * The outbox repository for the delivery worker, telling the console's live lists when a record
 * fails or turns ambiguous (the outcomes an operator acts on); every other call goes straight
 * through.
 */
export function announcingOutcomes(
  repo: OutboxRepository,
  publish: (change: ConsoleChange) => void,
): OutboxRepository {
  const announced = Object.create(repo) as OutboxRepository;
  announced.markFailed = async (id, reason, nowMs) => {
    const changed = await repo.markFailed(id, reason, nowMs);
    if (changed) publish({ kind: "outbox", outboxId: id, state: "failed" });
    return changed;
  };
  announced.markAmbiguous = async (id, reason, nowMs, holdUntilMs) => {
    const changed = await repo.markAmbiguous(id, reason, nowMs, holdUntilMs);
    if (changed) publish({ kind: "outbox", outboxId: id, state: "ambiguous" });
    return changed;
  };
  return announced;
}
