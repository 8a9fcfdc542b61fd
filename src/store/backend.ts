import type { SlackInstallationStore } from "../../channels/slack/installations.ts";
import type { OutboxRepository } from "../../outbox/types.ts";
import type { ScheduleRepository } from "../../schedules/types.ts";
import type { AccessStore } from "../access/store.ts";
import type { BudgetStore } from "../budgets/store.ts";
import type { SwitchboardError } from "../errors.ts";
import type { OperatorQueries } from "../operator/queries.ts";
import type { OperatorRuntimeStore } from "../operator/runtime-store.ts";
import type { BlobReferences } from "../runtime/blob-cleanup.ts";
import type { BlobStore } from "../runtime/blobs.ts";
import type { SearchStore } from "../search/store.ts";
import type { StateStore } from "../state/store.ts";
import type { WebSessionMigration } from "./web-session-ids.ts";

/** Gauges read at scrape time: runs and outbox records by state, recent delivery latency. */
export interface StoreGauges {
  runs: Record<string, number>;
  outbox: Record<string, number>;
  /** Commit-to-delivery time of the most recent delivered replies (at most 1,000), in ms. */
  deliveryLatencyMs: { p50: number; p99: number; count: number } | null;
  /** When the longest-waiting ambiguous record became ambiguous (ms); null when there is none. */
  oldestAmbiguousSinceMs: number | null;
}

/** How a gateway process becomes the one active gateway on its database. */
export interface ActiveGatewayOptions {
  /** Another gateway became active after this one's hold on the database lapsed: stop at once. */
  onLost(error: SwitchboardError): void;
  /**
   * Wait while another gateway is active, instead of refusing: `onWaiting` runs once when the
   * wait begins; aborting `signal` ends the wait with a `runtime_closed` error.
   */
  standby?: { onWaiting(): void | Promise<void>; signal: AbortSignal };
}

export interface ExternalCommitWatch {
  stop(): void;
}

/**
 * Everything the gateway keeps durable, on one database engine: SQLite (the embedded default) or
 * PostgreSQL. The gateway, the operator service and the CLI use only this.
 */
export interface StoreBackend {
  readonly engine: "sqlite" | "postgres";
  /** Where the data lives, for logs: a file path, or a URL without its password. */
  readonly location: string;
  /** The runtime's store, with what operators ask of it beyond the runtime. */
  readonly runtime: OperatorRuntimeStore;
  /** Goal and todo slots per conversation (the runtime store's own transactions and ledger). */
  readonly state: StateStore;
  /** History search over every conversation's messages (the index the message writes keep). */
  readonly search: SearchStore;
  /** Access grants and pairing codes (`*_ALLOWED_USERS=pairing`). */
  readonly access: AccessStore;
  /** Usage per run and operators' raised limits and resets (SWITCHBOARD_CONFIG `budgets`). */
  readonly budgets: BudgetStore;
  /** The Slack app's installations per workspace (SLACK_CLIENT_ID), their tokens sealed. */
  readonly slackInstallations: SlackInstallationStore;
  readonly outbox: OutboxRepository;
  readonly schedules: ScheduleRepository;
  readonly operator: OperatorQueries;
  /** Media files: a directory beside the SQLite file, or tables on PostgreSQL. */
  readonly blobs: BlobStore;
  /**
   * Which blobs the rows still point at, for cleanup: `pinned` by pending work (inputs of
   * unfinished runs), `kept` by the messages of conversations not left with /new.
   */
  blobReferences(): Promise<BlobReferences>;
  /** Blob ids the messages of one conversation point at, and the files its outbox sends (an /export); empty when none. */
  conversationBlobIds(conversationId: string): Promise<Set<string>>;
  /**
   * Makes this process the database's one active gateway, which recovers every run and send a
   * dead process left. PostgreSQL holds a session advisory lock until `close()`; SQLite claims
   * the file with a row its gateway refreshes (a live gateway's claim refuses a second one).
   */
  becomeActiveGateway(options: ActiveGatewayOptions): Promise<void>;
  /**
   * Data migration "web-session-ids" (./web-session-ids.ts): rewrites every stored web chat
   * session id to `userIdOf(sessionId)`, in one transaction with the record that it ran. Resolves
   * null, changing nothing, when it ran before. The active gateway runs it at start.
   */
  migrateWebSessionIds(
    userIdOf: (sessionId: string) => string,
    nowMs: number,
  ): Promise<WebSessionMigration | null>;
  gauges(): Promise<StoreGauges>;
  /** Resolves when the database answers a trivial query; rejects with the driver's error. */
  ping(): Promise<void>;
  /**
   * Calls `onCommit` soon after another process (the operator CLI) commits a change, so a running
   * gateway acts on it without waiting for an unrelated wake-up.
   */
  watchExternalCommits(onCommit: () => void, onError: (error: unknown) => void): ExternalCommitWatch;
  /**
   * After an operator change committed from another process: makes watching gateways see it.
   * SQLite's watch notices any commit by itself; PostgreSQL needs the announcement.
   */
  announceChange(): Promise<void>;
  close(): Promise<void>;
}

/** p50/p99 of delivery latencies in ms (any order); null when there are none. */
export function latencySummary(latenciesMs: number[]): StoreGauges["deliveryLatencyMs"] {
  if (latenciesMs.length === 0) return null;
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p99: at(0.99), count: sorted.length };
}
