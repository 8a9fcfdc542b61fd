import type { ChannelName, SendReceipt } from "../../channels/types.ts";
import { finalAnswerMarkdown } from "../../outbox/final-text.ts";
import { AWAITING_STATUS_PREFIX, RESOLVED_BY_PLATFORM_STATUS } from "../../outbox/platform-status.ts";
import { assertTransition } from "../../outbox/transitions.ts";
import type {
  OutboxActor,
  OutboxHistoryEntry,
  OutboxInsert,
  OutboxMedia,
  OutboxPresentation,
  OutboxRecord,
  OutboxState,
  RecoverySummary,
  RenderedText,
} from "../../outbox/types.ts";
import { SwitchboardError } from "../errors.ts";
import type { AnswerDelivery, FileDelivery } from "../runtime/store.ts";
import { answerText, type MessagePart, type TerminalRunState } from "../runtime/types.ts";
import type { Integer } from "./rows.ts";

export type { AnswerDelivery };

/**
 * What every outbox backend shares: the row and its conversion, the history it writes, and the
 * rules and messages of each change, so SQLite and PostgreSQL records read the same.
 */

/** States that can hold their target: nothing later in the same chat is sent while the head is in one. */
export const OPEN_STATES_SQL = "('pending', 'sending', 'ambiguous')";

/**
 * An ambiguous record holds its chat until its `next_attempt_at_ms` (it is never attempted
 * again by itself, so the column says when its hold ends); this value means until an operator
 * decides. It is never a wake-up time.
 */
export const HOLD_FOREVER_MS = Number.MAX_SAFE_INTEGER;

/**
 * SQL condition: the record (columns prefixed with `alias`) holds its chat at `nowSql`: pending or
 * sending, or ambiguous with its hold not over. Keeps `state IN OPEN_STATES_SQL` first for the
 * open-records index.
 */
export function holdsChatSql(alias: string, nowSql: string): string {
  return `${alias}state IN ${OPEN_STATES_SQL} AND (${alias}state <> 'ambiguous' OR ${alias}next_attempt_at_ms > ${nowSql})`;
}

/**
 * An outbox row as a backend returns it: times are `Integer` (BIGINT in PostgreSQL), the other
 * counters INTEGER in both; `final` is 0/1 in SQLite, a boolean in PostgreSQL.
 */
export interface OutboxRow {
  id: string;
  key: string;
  run_id: string;
  conversation_id: string;
  channel: string;
  account: string;
  target: string;
  reply_to: string | null;
  ordinal: number;
  kind: string;
  markdown: string;
  final: number | boolean;
  state: string;
  attempts: number;
  next_attempt_at_ms: Integer;
  rendered: string | null;
  format: string | null;
  chunks_delivered: number;
  receipt: string | null;
  last_error: string | null;
  history: string;
  presentation?: string | null;
  media?: string | null;
  created_at_ms: Integer;
  updated_at_ms: Integer;
}

export const isFinal = (row: Pick<OutboxRow, "final">): boolean => row.final === 1 || row.final === true;

export function toOutboxRecord(row: OutboxRow): OutboxRecord {
  const base = {
    id: row.id,
    key: row.key,
    runId: row.run_id,
    conversationId: row.conversation_id,
    channel: row.channel as ChannelName,
    account: row.account,
    target: row.target,
    replyTo: row.reply_to,
    ordinal: row.ordinal,
    markdown: row.markdown,
    state: row.state as OutboxState,
    attempts: row.attempts,
    nextAttemptAtMs: Number(row.next_attempt_at_ms),
    receipt: row.receipt === null ? null : (JSON.parse(row.receipt) as SendReceipt),
    lastError: row.last_error,
    history: JSON.parse(row.history) as OutboxHistoryEntry[],
    presentation: row.presentation ? (JSON.parse(row.presentation) as OutboxPresentation) : null,
    createdAtMs: Number(row.created_at_ms),
    updatedAtMs: Number(row.updated_at_ms),
  };
  if (row.kind === "stream") {
    return { ...base, kind: "stream", final: isFinal(row), format: row.format as "rich" | "plain" | null };
  }
  return {
    ...base,
    kind: "message",
    rendered: row.rendered === null ? null : (JSON.parse(row.rendered) as RenderedText),
    chunksDelivered: row.chunks_delivered,
    media: row.media ? (JSON.parse(row.media) as OutboxMedia) : null,
  };
}

// ---- history ----

/** One history entry as stored: compact JSON, appended to the row's `history` array. */
export function historyJson(entry: OutboxHistoryEntry): string {
  return JSON.stringify(entry);
}

export function actorEntry(
  atMs: number,
  actor: OutboxActor,
  action: string,
  note?: string,
): OutboxHistoryEntry {
  return note === undefined ? { atMs, actor, action } : { atMs, actor, action, note };
}

export const systemEntry = (atMs: number, action: string, note?: string): OutboxHistoryEntry =>
  actorEntry(atMs, "system", action, note);

/** The whole `history` of a new record. */
export function enqueuedHistoryJson(nowMs: number): string {
  return JSON.stringify([systemEntry(nowMs, "enqueued")]);
}

/** The entries the gateway writes, worded the same on every backend. */
export const history = {
  sending: (nowMs: number, attempt: number) => systemEntry(nowMs, "sending", `attempt ${attempt}`),
  livePreview: (nowMs: number) => systemEntry(nowMs, "sending", "live preview"),
  chunkDelivered: (nowMs: number, chunkIndex: number, rendered: string | null) =>
    systemEntry(
      nowMs,
      "chunk delivered",
      `chunk ${chunkIndex + 1} of ${rendered === null ? "?" : (JSON.parse(rendered) as RenderedText).chunks.length}`,
    ),
  fallback: (nowMs: number, rendered: RenderedText) =>
    systemEntry(nowMs, "formatting fallback", `rendered as ${rendered.format} text`),
  delivered: (nowMs: number, receipt: SendReceipt) =>
    systemEntry(nowMs, "delivered", `${receipt.messageIds.length} platform message(s)`),
  retryScheduled: (nowMs: number, nextAttemptAtMs: number, error: string) =>
    systemEntry(nowMs, "retry scheduled", `in ${Math.max(0, nextAttemptAtMs - nowMs)} ms: ${error}`),
  failed: (nowMs: number, reason: string) => systemEntry(nowMs, "failed", reason),
  ambiguous: (nowMs: number, reason: string) => systemEntry(nowMs, "ambiguous", reason),
  recovered: (nowMs: number, note: string) => systemEntry(nowMs, "recovered", note),
  finalized: (nowMs: number) => systemEntry(nowMs, "finalized"),
  awaitingStatus: (nowMs: number, untilMs: number, reason: string) =>
    systemEntry(nowMs, "awaiting platform status", `until ${new Date(untilMs).toISOString()}: ${reason}`),
  statusWaitEnded: (nowMs: number, reason: string) => systemEntry(nowMs, "ambiguous", reason),
  resolvedByStatus: (nowMs: number, note: string) => systemEntry(nowMs, RESOLVED_BY_PLATFORM_STATUS, note),
};

/** `last_error` of a record awaiting the platform's report: the marker, then why its outcome is unknown. */
export const awaitingStatusError = (reason: string): string => `${AWAITING_STATUS_PREFIX}: ${reason}`;

/** Why a record whose wait for the platform's report ended is ambiguous. */
export const STATUS_WAIT_ENDED =
  "no delivery status came from the platform in time: it may or may not show the message. Check the " +
  "chat, then `outbox resolve --delivered`, `outbox retry` or `outbox cancel`.";

/** A message record's receipt after one more chunk was delivered as `messageIds`. */
export function appendedReceiptJson(receipt: string | null, messageIds: readonly string[]): string {
  const before = JSON.parse(receipt ?? '{"messageIds":[]}') as SendReceipt;
  return JSON.stringify({ messageIds: [...before.messageIds, ...messageIds] });
}

// ---- inserts ----

/**
 * Throws `input_invalid` for a message without text or file (an empty answer is left out of the
 * outbox), or a stream with a file.
 */
export function assertInsertable(insert: OutboxInsert): void {
  if (insert.media !== undefined && insert.kind !== "message") {
    throw new SwitchboardError(
      "input_invalid",
      `Outbox record ${insert.key} is a ${insert.kind} with a file; only message records carry files.`,
    );
  }
  if (insert.kind === "message" && insert.media === undefined && insert.markdown.trim() === "") {
    throw new SwitchboardError(
      "input_invalid",
      `Outbox record ${insert.key} has no text; leave an empty answer out of the outbox instead of enqueuing it.`,
    );
  }
}

/** Messages are always final; a stream is final unless its insert says it is still being written. */
export const isFinalInsert = (insert: OutboxInsert): boolean =>
  insert.kind === "message" || insert.final !== false;

export const streamKey = (runId: string): string => `${runId}:stream`;

// ---- the terminal commit ----

export type AnswerDeliveryResult = "stream-finalized" | "enqueued" | "nothing-to-send";

export const answerMarkdown = (answer: AnswerDelivery): string =>
  finalAnswerMarkdown(answer.state, answer.text);

/**
 * The final text of a stream opened by a run that then ended without its owner (superseded or
 * stopped while queued again after a crash, or absorbed): what its state calls for, usually
 * nothing. Left open, the stream would hold every later answer in that chat behind it.
 */
export const endedStreamMarkdown = (state: TerminalRunState, parts: readonly MessagePart[]): string =>
  finalAnswerMarkdown(state, answerText(parts));

/** The message record `<runId>:0` of a run that did not stream. */
export function answerInsert(answer: AnswerDelivery, markdown: string): OutboxInsert {
  return {
    key: `${answer.runId}:0`,
    runId: answer.runId,
    conversationId: answer.conversationId,
    // The gateway named the channel from the run's validated context.
    channel: answer.channel as ChannelName,
    account: answer.account,
    target: answer.target,
    ...(answer.replyTo === undefined ? {} : { replyTo: answer.replyTo }),
    kind: "message",
    markdown,
  };
}

/** The prompts (messages with buttons) a run's delivery sends after its answer. */
export function promptInserts(answer: AnswerDelivery): OutboxInsert[] {
  return (answer.prompts ?? []).map((prompt) => ({
    key: prompt.key,
    runId: answer.runId,
    conversationId: answer.conversationId,
    channel: answer.channel as ChannelName,
    account: answer.account,
    target: answer.target,
    kind: "message" as const,
    markdown: prompt.markdown,
    presentation: { buttons: prompt.buttons },
  }));
}

/** The message record of a file a run sends. */
export function fileInsert(run: { runId: string; conversationId: string }, file: FileDelivery): OutboxInsert {
  return {
    key: file.key,
    runId: run.runId,
    conversationId: run.conversationId,
    channel: file.channel as ChannelName,
    account: file.account,
    target: file.target,
    ...(file.replyTo === undefined ? {} : { replyTo: file.replyTo }),
    kind: "message",
    markdown: file.caption,
    media: {
      blobId: file.blobId,
      filename: file.filename,
      mimeType: file.mimeType,
      sizeBytes: file.sizeBytes,
    },
  };
}

/** The stored form of an insert's file (null: a text message). */
export const mediaJson = (insert: OutboxInsert): string | null =>
  insert.kind === "message" && insert.media ? JSON.stringify(insert.media) : null;

/** The stored form of an insert's presentation (null: plain text). */
export const presentationJson = (insert: OutboxInsert): string | null =>
  insert.kind === "message" && insert.presentation ? JSON.stringify(insert.presentation) : null;

// ---- recovery ----

export type Recovery =
  | { outcome: "resumedStreams" | "requeued"; note: string }
  | { outcome: "awaitingStatus"; reason: string; waitMs: number }
  | { outcome: "ambiguous"; reason: string };

/** What becomes of a record found `sending` at startup, and the summary list it is reported in. */
export function recoveryOf(
  row: Pick<OutboxRow, "kind" | "receipt" | "channel">,
  idempotentChannels: ReadonlySet<ChannelName>,
  statusWaits: ReadonlyMap<ChannelName, number> = new Map(),
): Recovery {
  const receipt = row.receipt === null ? null : (JSON.parse(row.receipt) as SendReceipt);
  if (row.kind === "stream" && receipt !== null && receipt.messageIds.length > 0) {
    return {
      outcome: "resumedStreams",
      note: "interrupted stream: its messages will be edited to the final text",
    };
  }
  if (idempotentChannels.has(row.channel as ChannelName)) {
    return {
      outcome: "requeued",
      note: "interrupted send on an idempotent channel: repeating it with the same key",
    };
  }
  const waitMs = statusWaits.get(row.channel as ChannelName);
  if (row.kind === "message" && waitMs !== undefined) {
    return {
      outcome: "awaitingStatus",
      reason: "interrupted while sending; the platform's delivery status will tell whether it arrived",
      waitMs,
    };
  }
  return {
    outcome: "ambiguous",
    reason:
      "interrupted while sending: the platform may or may not show it. Check the chat, then " +
      "`outbox resolve --delivered`, `outbox retry` or `outbox cancel`.",
  };
}

export const emptyRecoverySummary = (): RecoverySummary => ({
  requeued: [],
  resumedStreams: [],
  ambiguous: [],
  awaitingStatus: [],
});

// ---- operator actions ----

export type OperatorTarget = "pending" | "delivered" | "failed" | "cancelled";

/**
 * Checks that an operator may move `row` (looked up as `id`) to `to`; returns its current state.
 * Throws `not_found`, or `input_invalid` for a record being sent or an illegal change.
 */
export function checkOperatorAction(
  id: string,
  row: Pick<OutboxRow, "id" | "state"> | null | undefined,
  to: OperatorTarget,
): OutboxState {
  if (!row) {
    throw new SwitchboardError("not_found", `No outbox record ${id}. List records with \`outbox list\`.`);
  }
  // An operator acts on records waiting for them; a `sending` record belongs to the worker.
  if (row.state === "sending") {
    throw new SwitchboardError(
      "state_conflict",
      `Outbox record ${row.id} is being sent right now; wait for the attempt to end, then try again.`,
    );
  }
  // Only the platform's own report may fail a delivered record (outbox/platform-status.ts).
  if (row.state === "delivered") {
    throw new SwitchboardError(
      "state_conflict",
      `Outbox record ${row.id} is delivered and cannot become ${to}; delivered is final.`,
      { details: { recordId: row.id, from: row.state, to } },
    );
  }
  assertTransition(row.id, row.state as OutboxState, to);
  return row.state as OutboxState;
}
