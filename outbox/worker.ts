import type {
  ChannelAdapter,
  ChannelCapabilities,
  ChannelName,
  DeliveryStatusReport,
} from "../channels/types.ts";
import type { BlobStore } from "../src/runtime/blobs.ts";
import type { Clock } from "../src/util/clock.ts";
import type { Logger } from "../src/util/log.ts";
import { afterQueuedWork } from "../src/util/yield.ts";
import { adapterOfChannel, routeToAccount } from "./adapter-route.ts";
import { ambiguousHoldUntil, type DeliveryDeps, deliverRecord } from "./deliver.ts";
import { DEFAULT_CALL_TIMEOUT_MS } from "./platform-call.ts";
import { parseSendKey, RESOLVED_BY_PLATFORM_STATUS } from "./platform-status.ts";
import { DeliveryRateLimiter } from "./rate-limiter.ts";
import { formatRenderer, type Renderer } from "./render.ts";
import { createStreamReply, type StreamReply, type StreamReplyTarget } from "./stream.ts";
import {
  type DeliveryObserver,
  type OutboxRecord,
  type OutboxRepository,
  type RecoverySummary,
  targetKey,
} from "./types.ts";

export interface DeliveryWorkerOptions {
  repo: OutboxRepository;
  /**
   * Every account's adapter (the keys only name them). A record leaves through the adapter of its
   * channel and account, never another: one whose account has none fails, naming it.
   */
  adapters: ReadonlyMap<string, ChannelAdapter>;
  /**
   * Channels whose adapters come and go while the gateway runs (Slack's installed workspaces), with
   * the capabilities all their adapters share: their records are delivered, or failed naming why,
   * also while none of their adapters is attached.
   */
  dynamicChannels?: ReadonlyMap<ChannelName, ChannelCapabilities>;
  /** Why an account has no adapter when the gateway knows more than "not configured" (an uninstall); null otherwise. */
  goneReason?: (channel: ChannelName, account: string) => string | null;
  clock: Clock;
  /** Uniform in [0, 1) for backoff jitter. Default Math.random. */
  random?: () => number;
  /** Where delivery problems are reported (the gateway's redacting logger). */
  logger: Logger;
  /** Told of 429s and of each reply's first send, for metrics. Default: nothing. */
  observer?: DeliveryObserver;
  /** Targets delivered to at the same time (each target is still strictly ordered). Default 4. */
  concurrency?: number;
  /** Past this a platform call counts as hung. Default 30 s. */
  callTimeoutMs?: number;
  /** Attempts before a transient failure becomes `failed`. Default 8. */
  maxAttempts?: number;
  /** Backoff base and ceiling. Defaults 500 ms and 60 s. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Markdown → platform chunks. Default: outbox/format. */
  renderer?: Renderer;
  /**
   * How long an ambiguous record holds back the later replies of its chat before they go out
   * anyway (it stays ambiguous for an operator). Default Infinity: until an operator decides.
   */
  ambiguousHoldMs?: number;
  /** Where media records' files are read from. Without it, media records fail. */
  blobs?: BlobStore;
  /** A streamed reply's wait before its first preview (default FIRST_PREVIEW_WAIT_MS; see stream.ts). */
  firstPreviewWaitMs?: number;
  /** A span around each record's delivery (telemetry on); absent: none. */
  tracing?: DeliveryTracing;
}

/** Wraps one record's delivery (a lane's work), e.g. in a `switchboard.delivery` span. */
export interface DeliveryTracing {
  delivery(record: OutboxRecord, deliver: () => Promise<void>): Promise<void>;
  /** A run's reply streams from now until `settled` (its record, if one was made, is `<runId>:stream`). */
  streamed(runId: string, settled: Promise<void>): void;
}

export interface DeliveryWorker {
  /** Recovers records interrupted by a crash, then starts delivering. Call before any stream opens. */
  start(): Promise<RecoverySummary>;
  /** New records were committed: look now instead of at the next timer. */
  notify(): void;
  /**
   * Delivers what is already committed and due (a run that settled just before a shutdown has
   * its answer sent), waits for deliveries and live streams in flight, then stops taking records;
   * all within `timeoutMs`. True when everything finished; records left behind stay durable and
   * are recovered by the next start.
   */
  drain(timeoutMs: number): Promise<boolean>;
  /** Stops taking records, stops rate-limit waits and live streams, and waits for calls in flight. */
  stop(): Promise<void>;
  /** A live, edited reply for one run (fed by its runtime events); falls back to the worker when it cannot preview. */
  openStream(target: StreamReplyTarget & { channel: ChannelName; account: string }): StreamReply;
  /**
   * A channel's report of what became of one of its sends (`ChannelEvents.deliveryStatus`):
   * settles the record it names when its outcome is not known yet (outbox/platform-status.ts).
   * Resolves once recorded; rejects when the store failed (the platform must report it again).
   */
  recordPlatformStatus(report: DeliveryStatusReport): Promise<void>;
}

/**
 * Delivers outbox records: one lane per target (strict order), up to `concurrency` lanes at once,
 * spaced by per-chat and per-account sliding windows. A chat that must wait is skipped rather than
 * waited on, so it never holds a lane another chat could use. Wakes on `notify()`, on a finished
 * lane, at the earliest retry time and when a skipped chat may send again; it never polls. A
 * delivery failure changes only the outbox record.
 */
export function createDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const { repo, adapters, clock } = options;
  const { logger } = options;
  const concurrency = options.concurrency ?? 4;
  const dynamicChannels = options.dynamicChannels ?? new Map<ChannelName, ChannelCapabilities>();
  const channels = [
    ...new Set([...[...adapters.values()].map((adapter) => adapter.channel), ...dynamicChannels.keys()]),
  ];
  const capabilitiesOf = (channel: ChannelName): ChannelCapabilities =>
    adapterOfChannel(adapters.values(), channel)?.capabilities ?? dynamicChannels.get(channel)!;
  const shutdown = new AbortController();
  /** When waits for a platform's delivery status end (records then become ambiguous). */
  const statusWaitEnds: number[] = [];
  const deps: DeliveryDeps = {
    repo,
    clock,
    limiter: new DeliveryRateLimiter(clock),
    renderer: options.renderer ?? formatRenderer,
    logger,
    observer: options.observer ?? {},
    callTimeoutMs: options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
    retry: {
      ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
      ...(options.baseDelayMs === undefined ? {} : { baseDelayMs: options.baseDelayMs }),
      ...(options.maxDelayMs === undefined ? {} : { maxDelayMs: options.maxDelayMs }),
      ...(options.random === undefined ? {} : { random: options.random }),
    },
    signal: shutdown.signal,
    ambiguousHoldMs: options.ambiguousHoldMs ?? Number.POSITIVE_INFINITY,
    ...(options.blobs === undefined ? {} : { blobs: options.blobs }),
    awaitingStatusUntil(untilMs) {
      statusWaitEnds.push(untilMs);
      notify();
    },
  };
  /** Channels whose platforms report each send's outcome, with how long a send waits for it. */
  const statusWaits = new Map(
    channels.flatMap((channel) => {
      const waitMs = capabilitiesOf(channel).statusWaitMs;
      return waitMs === undefined ? [] : [[channel, waitMs] as const];
    }),
  );

  /** Records whose wait for a delivery status ended become ambiguous, holding their chats as usual. */
  async function expireStatusWaits(nowMs: number): Promise<void> {
    if (!statusWaitEnds.some((atMs) => atMs <= nowMs)) return;
    const expired = await repo.expireStatusWaits(nowMs, ambiguousHoldUntil(deps, nowMs));
    const remaining = statusWaitEnds.filter((atMs) => atMs > nowMs);
    statusWaitEnds.splice(0, statusWaitEnds.length, ...remaining);
    if (expired.length > 0)
      logger.warn("outbox.no_platform_status", {
        records: expired,
        hint: "no delivery status came in time, so they are ambiguous: check the chat, then `switchboard outbox resolve`",
      });
  }

  const lanes = new Map<string, Promise<void>>();
  const streams = new Set<StreamReply>();
  let accepting = false;
  let loop: Promise<void> | null = null;
  let wakeRequested = false;
  let wake: (() => void) | null = null;
  /** Told each time the loop has looked and is about to wait (for drain). */
  const idleWaiters: (() => void)[] = [];

  function loopIdle(): Promise<void> {
    return new Promise((resolve) => idleWaiters.push(resolve));
  }

  function notify(): void {
    wakeRequested = true;
    wake?.();
  }

  function startLane(record: Parameters<typeof deliverRecord>[2]): void {
    const route = routeToAccount(adapters.values(), record.channel, record.account);
    const key = targetKey(record);
    const deliver = () =>
      route.adapter
        ? deliverRecord(deps, route.adapter, record)
        : failUnrouted(record, options.goneReason?.(record.channel, record.account) ?? route.reason);
    const lane = (options.tracing ? options.tracing.delivery(record, deliver) : deliver())
      .catch((error: unknown) => {
        logger.warn("outbox.lane_stopped", {
          recordId: record.id,
          error: error instanceof Error ? error.message : String(error),
          hint: "an unexpected error stopped this delivery; the record is recovered on restart",
        });
      })
      .finally(() => {
        lanes.delete(key);
        notify();
      });
    lanes.set(key, lane);
  }

  /** A record whose account has no adapter fails (through `sending`, so its history shows the attempt). */
  async function failUnrouted(record: OutboxRecord, reason: string): Promise<void> {
    const nowMs = clock.now();
    if (!(await repo.markSending(record.id, nowMs))) return;
    if (await repo.markFailed(record.id, `not delivered: ${reason}`, nowMs))
      logger.warn("outbox.account_gone", {
        recordId: record.id,
        channel: record.channel,
        account: record.account,
        hint: reason,
      });
  }

  /** `wakeAtMs`: a time in the future when it was computed, or null to wait for notify() only. */
  async function waitForWake(wakeAtMs: number | null): Promise<void> {
    if (wakeRequested) return;
    const nowMs = clock.now();
    // The wake time passed while the queries ran: look again now rather than wait for a notify.
    if (wakeAtMs !== null && wakeAtMs <= nowMs) return;
    const timer = new AbortController();
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const waits: Promise<unknown>[] = [woken];
    if (wakeAtMs !== null) waits.push(clock.sleep(wakeAtMs - nowMs, timer.signal).catch(() => {}));
    try {
      await Promise.race(waits);
    } finally {
      wake = null;
      timer.abort();
    }
  }

  async function run(): Promise<void> {
    while (accepting) {
      wakeRequested = false;
      const free = concurrency - lanes.size;
      try {
        await expireStatusWaits(clock.now());
        let wakeAtMs: number | null = null;
        if (free > 0) {
          const nowMs = clock.now();
          // A chat that may not take a call yet would park a delivery slot in the limiter while
          // other chats could be served: skip it, and wake when it is ready.
          const held = deps.limiter.heldChats(nowMs);
          // Held chats' heads come back too (the limit leaves room for them): a held chat is only
          // worth a wake-up when it has something to send, not after every reply it was sent.
          const heads = await repo.nextDeliverable(nowMs, {
            limit: free + held.size,
            channels,
            excludeTargets: new Set(lanes.keys()),
          });
          const heldUntil: number[] = [];
          const due: typeof heads = [];
          for (const record of heads) {
            const untilMs = held.get(targetKey(record));
            if (untilMs !== undefined) heldUntil.push(untilMs);
            else if (due.length < free) due.push(record);
          }
          for (const record of due) if (accepting) startLane(record);
          // The lanes just started reach their platform call first; the next queries then run
          // while those sends are on the wire rather than ahead of them (0.3 ms a reply).
          if (due.length > 0) await afterQueuedWork();
          // Every free slot taken: more may be due at once.
          if (due.length === free) continue;
          // A head that is due but whose lane is finishing wakes us through that lane instead.
          wakeAtMs = earliestFuture(nowMs, [
            await repo.nextWakeAtMs(channels, nowMs),
            ...heldUntil,
            ...statusWaitEnds,
          ]);
        }
        for (const resolve of idleWaiters.splice(0)) resolve();
        await waitForWake(wakeAtMs);
      } catch (error) {
        logger.warn("outbox.query_failed", {
          error: error instanceof Error ? error.message : String(error),
          retryInMs: 1000,
        });
        await clock.sleep(1000, shutdown.signal).catch(() => {});
      }
    }
  }

  /** Resolves once no lane or stream is busy and nothing committed is due. */
  async function deliverCommitted(): Promise<void> {
    for (;;) {
      if (lanes.size > 0 || streams.size > 0) {
        await Promise.race([...lanes.values(), ...[...streams].map((stream) => stream.settled)]);
        continue;
      }
      const due = await repo.nextDeliverable(clock.now(), { limit: 1, channels });
      if (due.length === 0) return;
      // Committed after the loop last looked: have it look now.
      const looked = loopIdle();
      notify();
      await looked;
      // It started nothing: the chat is held by a rate limit. Wait for the loop's own wake-up
      // rather than asking again at once.
      if (lanes.size === 0) await loopIdle();
    }
  }

  async function stopAccepting(): Promise<void> {
    accepting = false;
    notify();
    await loop;
  }

  return {
    async start() {
      if (loop) throw new Error("The delivery worker is already started; create a new one after stop().");
      const idempotent = new Set(channels.filter((channel) => capabilitiesOf(channel).idempotentSend));
      const nowMs = clock.now();
      const summary = await repo.recoverInterrupted(
        idempotent,
        nowMs,
        ambiguousHoldUntil(deps, nowMs),
        statusWaits,
      );
      if (summary.awaitingStatus.length > 0) {
        for (const waitMs of statusWaits.values()) statusWaitEnds.push(nowMs + waitMs);
        logger.info("outbox.interrupted_sends_awaiting_status", {
          records: summary.awaitingStatus,
          hint: "their platform's delivery status settles them; without one in time they become ambiguous",
        });
      }
      if (summary.ambiguous.length > 0) {
        logger.warn("outbox.interrupted_sends_ambiguous", {
          ambiguous: summary.ambiguous,
          hint: "their outcome is unknown; see `switchboard outbox list --state ambiguous`",
        });
      }
      accepting = true;
      loop = run();
      return summary;
    },

    notify,

    async drain(timeoutMs) {
      if (timeoutMs <= 0) {
        await stopAccepting();
        return lanes.size === 0;
      }
      const timer = new AbortController();
      const timedOut = clock.sleep(timeoutMs, timer.signal).then(
        () => false,
        () => false,
      );
      try {
        const work = accepting ? deliverCommitted() : Promise.all(lanes.values());
        const finished = await Promise.race([work.then(() => true), timedOut]);
        await stopAccepting();
        if (!finished || lanes.size === 0) return finished;
        // A record committed in the last moment took a lane before the loop stopped.
        return await Promise.race([Promise.all(lanes.values()).then(() => true), timedOut]);
      } finally {
        timer.abort();
      }
    },

    async stop() {
      await stopAccepting();
      shutdown.abort(new Error("The delivery worker is stopping."));
      for (const stream of streams) stream.abort();
      await Promise.all([...lanes.values(), ...[...streams].map((stream) => stream.settled)]);
    },

    async recordPlatformStatus(report) {
      const send = parseSendKey(report.idempotencyKey);
      if (send === null) {
        logger.debug("outbox.platform_status_ignored", {
          key: report.idempotencyKey.slice(0, 100),
          why: "not a key the outbox sends with",
        });
        return;
      }
      const result = await repo.applyPlatformStatus(send.recordKey, send.chunk, report, clock.now());
      if (!result.applied) {
        logger.debug("outbox.platform_status_ignored", { key: report.idempotencyKey, why: result.why });
        return;
      }
      logger.info(
        report.outcome === "delivered"
          ? "outbox.delivered_by_platform_status"
          : "outbox.failed_by_platform_status",
        {
          recordId: result.record?.id,
          status: report.status,
          action: RESOLVED_BY_PLATFORM_STATUS,
          ...(report.reason === undefined ? {} : { reason: report.reason }),
        },
      );
      // A settled head lets its chat's next reply go.
      notify();
    },

    openStream(target) {
      const route = routeToAccount(adapters.values(), target.channel, target.account);
      if (!route.adapter) throw new Error(`No stream for run ${target.runId}: ${route.reason}`);
      const adapter = route.adapter;
      const stream = createStreamReply({
        ...deps,
        adapter,
        target,
        onSettled: notify,
        ...(options.firstPreviewWaitMs === undefined
          ? {}
          : { firstPreviewWaitMs: options.firstPreviewWaitMs }),
      });
      streams.add(stream);
      void stream.settled.finally(() => streams.delete(stream));
      options.tracing?.streamed(target.runId, stream.settled);
      return stream;
    },
  };
}

function earliestFuture(nowMs: number, times: ReadonlyArray<number | null>): number | null {
  let earliest: number | null = null;
  for (const atMs of times) {
    if (atMs !== null && atMs > nowMs && (earliest === null || atMs < earliest)) earliest = atMs;
  }
  return earliest;
}
