import {
  type ChannelAdapter,
  type ChannelName,
  REPLY_STATUSES,
  type ReplyStatus,
} from "../../channels/types.ts";
import { routeToAccount } from "../../outbox/adapter-route.ts";
import type { OutboxRepository } from "../../outbox/types.ts";
import { isSwitchboardError } from "../errors.ts";
import { type RunContext, readRunContext } from "../run-context.ts";
import type { RuntimeEvent } from "../runtime/events.ts";
import type { RunRecord, RuntimeStore } from "../runtime/store.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";

export interface StatusReactionsDeps {
  /** Every account's adapter; a status shows through the account that received the message. */
  adapters: ReadonlyMap<string, ChannelAdapter>;
  /** Whether the run's surface shows status reactions (its `statusReactions`). */
  enabled(context: RunContext): boolean;
  store: Pick<RuntimeStore, "loadRun" | "listApprovals">;
  clock: Clock;
  logger: Logger;
}

/** The person's message a run answers, where its status is shown. */
interface Shown {
  channel: ChannelName;
  account: string;
  target: string;
  messageId: string;
  /**
   * What the message may show now: empty for a message this process saw admitted first, the
   * status the last call that succeeded set, or every status for one whose ladder began before
   * this process (it remembers none of it: a restart), so the next change takes away any of them.
   */
  showing: readonly ReplyStatus[];
  /** The calls for this message, one at a time and in order. */
  chain: Promise<void>;
}

/** Longest a channel pauses its reactions after a 429 that names no wait, in milliseconds. */
const DEFAULT_PAUSE_MS = 5_000;

/** Most messages whose ladder is followed at once (those waiting for an approval included). */
const MAX_MESSAGES = 10_000;

/** Newest approvals of a conversation read to tell whether an admitted run is a decision's. */
const DECISION_LOOKBACK = 20;

/** The status a run's terminal state shows; `done` waits for the answer's delivery. Null: unchanged. */
export function terminalStatus(state: string): ReplyStatus | "delivering" | null {
  switch (state) {
    case "completed":
      return "delivering";
    case "awaiting_approval":
      return "waiting";
    case "failed":
    case "timeout":
    case "policy_stop":
      return "failed";
    default:
      return null;
  }
}

/**
 * The reaction ladder on a person's message: 👀 when its run is admitted, ⏳ while a tool waits for
 * approval, ✅ when the answer was delivered, ⚠️ when it failed or its delivery is uncertain. Each
 * adapter with `react` picks its platform's emoji.
 *
 * Best effort and never in the reply's path: it listens to the runtime's events and the outbox's
 * outcomes without holding either up, calls the adapter directly (not through the outbox, so a
 * reaction never waits in a reply's lane), and drops what fails. After a 429 the channel shows no
 * reaction until the wait it named is over, so reactions never spend the rate limit replies need.
 *
 * What a message shows is remembered in memory only. After a restart, the first change on a
 * message whose ladder began before (its run was admitted earlier, or its run is the decision of
 * an approval asked earlier) takes away every other ladder status, so no stale 👀 stays beside ✅.
 */
export class StatusReactions {
  readonly #deps: StatusReactionsDeps;
  /** By run: the message it answers (only runs whose surface shows reactions). */
  readonly #runs = new Map<string, Shown>();
  /** By run: the finding of its message, begun by its first event; later events wait for it. */
  readonly #lookups = new Map<string, Promise<Shown | null>>();
  /**
   * By message: what it shows. A run that waits for an approval is forgotten, and the decision's
   * run finds the message here; the oldest entries go first past MAX_MESSAGES (a decision never made).
   */
  readonly #messages = new Map<string, Shown>();
  /** Runs whose answer completed and whose delivery shows ✅ (or ⚠️). */
  readonly #delivering = new Set<string>();
  readonly #pausedUntilMs = new Map<string, number>();
  readonly #inFlight = new Set<Promise<void>>();

  constructor(deps: StatusReactionsDeps) {
    this.#deps = deps;
  }

  /** A runtime event (from `Runtime.subscribe`); returns at once. */
  handle(event: RuntimeEvent): void {
    if (event.type === "admission" && event.outcome === "admitted") {
      this.#track(this.#observe(event.runId, "seen", true));
    } else if (event.type === "terminal") {
      const status = terminalStatus(event.state);
      if (status === null) {
        this.#runs.delete(event.runId);
        this.#lookups.delete(event.runId);
        return;
      }
      this.#track(
        this.#observe(event.runId, status === "delivering" ? null : status, false).then(() => {
          const shown = this.#runs.get(event.runId);
          if (status === "delivering" && shown) this.#delivering.add(event.runId);
          else this.#forget(event.runId, status === "failed");
        }),
      );
    }
  }

  /** An outbox record of `runId` was delivered (true) or failed or turned ambiguous (false). */
  settled(runId: string, delivered: boolean): void {
    const shown = this.#delivering.has(runId) ? this.#runs.get(runId) : undefined;
    if (!shown) return;
    this.#set(shown, delivered ? "done" : "failed");
    this.#forget(runId, true);
  }

  /** True while a completed run waits for its delivery (the outbox hook reads records only then). */
  get watching(): boolean {
    return this.#delivering.size > 0;
  }

  /** Resolves once every reaction call begun so far has ended (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
  }

  #track(work: Promise<void>): void {
    const tracked = work
      .catch((error) => this.#deps.logger.debug("reaction.skipped", { error }))
      .finally(() => this.#inFlight.delete(tracked));
    this.#inFlight.add(tracked);
  }

  /** Stops following the run; with `final`, its message's ladder is over too. */
  #forget(runId: string, final: boolean): void {
    const shown = this.#runs.get(runId);
    this.#runs.delete(runId);
    this.#lookups.delete(runId);
    this.#delivering.delete(runId);
    if (final && shown) this.#messages.delete(messageKey(shown));
  }

  /**
   * Finds the message `runId` answers (once: events after the first wait for its finding) and
   * shows `status` on it. `admitted`: the event is the run's admission, seen by this process.
   */
  async #observe(runId: string, status: ReplyStatus | null, admitted: boolean): Promise<void> {
    let lookup = this.#lookups.get(runId);
    if (!lookup) {
      lookup = this.#find(runId, admitted);
      this.#lookups.set(runId, lookup);
    }
    const shown = await lookup;
    if (shown && status) this.#set(shown, status);
  }

  /** The message `runId` answers, when its surface shows reactions; null otherwise. */
  async #find(runId: string, admitted: boolean): Promise<Shown | null> {
    // No channel reacts (the web chat alone): no run needs reading.
    if (![...this.#deps.adapters.values()].some((adapter) => adapter.react)) return null;
    const run = (await this.#deps.store.loadRun(runId))?.run;
    const context = run ? readRunContext(run.context) : null;
    if (!run || !context?.replyTo || context.origin !== "user" || !this.#deps.enabled(context)) return null;
    if (!routeToAccount(this.#deps.adapters.values(), context.channel, context.account).adapter?.react)
      return null;
    // Unknown to this process, the message shows nothing only if this is its first run's admission.
    const where = {
      channel: context.channel,
      account: context.account,
      target: context.target,
      messageId: context.replyTo,
    };
    const key = messageKey(where);
    const unknown = !this.#messages.has(key) && (!admitted || (await this.#decides(run)));
    const fresh = !this.#messages.has(key);
    const shown = this.#message(where);
    if (fresh && unknown) shown.showing = REPLY_STATUSES;
    this.#runs.set(runId, shown);
    return shown;
  }

  /** A correction's run, and an approval's decision, answer the same message as the run before. */
  #message(where: MessageWhere): Shown {
    const key = messageKey(where);
    const known = this.#messages.get(key);
    if (known) return known;
    const shown: Shown = { ...where, showing: [], chain: Promise.resolve() };
    this.#messages.set(key, shown);
    if (this.#messages.size > MAX_MESSAGES) this.#messages.delete(this.#messages.keys().next().value!);
    return shown;
  }

  /** Whether `run` is the successor an approval's decision queued: its message shows ⏳ already. */
  async #decides(run: RunRecord): Promise<boolean> {
    const approvals = await this.#deps.store.listApprovals({
      conversationId: run.conversationId,
      limit: DECISION_LOOKBACK,
    });
    return approvals.some((approval) => approval.successorRunId === run.id);
  }

  #set(shown: Shown, status: ReplyStatus): void {
    shown.chain = shown.chain.then(() => this.#call(shown, status));
    this.#track(shown.chain);
  }

  async #call(shown: Shown, status: ReplyStatus): Promise<void> {
    if (shown.showing.length === 1 && shown.showing[0] === status) return;
    const adapter = routeToAccount(this.#deps.adapters.values(), shown.channel, shown.account).adapter;
    if (!adapter?.react) return;
    const now = this.#deps.clock.now();
    if ((this.#pausedUntilMs.get(accountKey(shown)) ?? 0) > now) {
      this.#deps.logger.debug("reaction.dropped", { channel: shown.channel, status, reason: "rate limited" });
      return;
    }
    try {
      const previous = shown.showing.filter((shownStatus) => shownStatus !== status);
      await adapter.react(shown.target, shown.messageId, status, previous);
      shown.showing = [status];
    } catch (error) {
      if (isSwitchboardError(error, "platform_rate_limited")) {
        this.#pausedUntilMs.set(accountKey(shown), now + (error.retryAfterMs ?? DEFAULT_PAUSE_MS));
      }
      this.#deps.logger.info("reaction.failed", {
        channel: shown.channel,
        status,
        error,
        hint: "status reactions are best effort; the answer is delivered regardless",
      });
    }
  }
}

type MessageWhere = Pick<Shown, "channel" | "account" | "target" | "messageId">;

function messageKey({ channel, account, target, messageId }: MessageWhere): string {
  return `${channel}\u0000${account}\u0000${target}\u0000${messageId}`;
}

/** A rate limit pauses one bot's reactions: each account has its own. */
function accountKey({ channel, account }: Pick<Shown, "channel" | "account">): string {
  return `${channel}\u0000${account}`;
}

/**
 * The outbox repository for the delivery worker, telling `reactions` when a record was delivered,
 * failed or turned ambiguous. A record is read for its run only while some run waits for one.
 */
export function reportingOutcomes(repo: OutboxRepository, reactions: StatusReactions): OutboxRepository {
  const reporting = Object.create(repo) as OutboxRepository;
  const report = async (id: string, delivered: boolean) => {
    if (!reactions.watching) return;
    const record = await repo.show(id).catch(() => null);
    if (record) reactions.settled(record.runId, delivered);
  };
  reporting.recordChunkDelivered = async (id, chunkIndex, messageIds, nowMs, last) => {
    const changed = await repo.recordChunkDelivered(id, chunkIndex, messageIds, nowMs, last);
    if (changed && last) void report(id, true);
    return changed;
  };
  reporting.markDelivered = async (id, receipt, nowMs, shown) => {
    const changed = await repo.markDelivered(id, receipt, nowMs, shown);
    if (changed) void report(id, true);
    return changed;
  };
  reporting.markFailed = async (id, reason, nowMs) => {
    const changed = await repo.markFailed(id, reason, nowMs);
    if (changed) void report(id, false);
    return changed;
  };
  reporting.markAmbiguous = async (id, reason, nowMs, holdUntilMs) => {
    const changed = await repo.markAmbiguous(id, reason, nowMs, holdUntilMs);
    if (changed) void report(id, false);
    return changed;
  };
  return reporting;
}
