/**
 * The store's mutations (all but admission, which SQLite commits in groups), each written once:
 * its procedure (run-writes.ts, ledger-writes.ts, terminal.ts, children.ts) run in one write transaction of
 * the engine that extends {@link StoreMutations}.
 */

import type { ChildTarget, SpawnRequest, SpawnResult, StoppedChildRun } from "../children/store.ts";
import type {
  AcquiredRun,
  AcquireNextRequest,
  AcquireRequest,
  CheckpointRequest,
  CompactionCandidates,
  CompactionRead,
  ConversationSettings,
  Fence,
  FileDelivery,
  IngressClaim,
  IngressClaimResult,
  NextAcquisition,
  PromptContext,
  PurgeResult,
  SpilledOutput,
  StopRequestResult,
  SummarySave,
  SummarySaveResult,
  TerminalRequest,
  TerminalResult,
} from "../runtime/store.ts";
import type { InputPart, MessagePart, StopReason } from "../runtime/types.ts";
import type { StateSave, StateSaveResult } from "../state/store.ts";
import { cancelChildren, spawnChild } from "./children.ts";
import * as ledger from "./ledger-writes.ts";
import { compactionCandidates, type PromptRead, promptContext } from "./prompt-reads.ts";
import * as runs from "./run-writes.ts";
import type { StepCall } from "./steps.ts";
import { type StopSteps, stop, type TerminalSteps, terminal } from "./terminal.ts";

/** Every step the mutations take: what an engine implements (PostgreSQL as promises). */
export type MutationSteps = TerminalSteps & StopSteps & runs.RunWriteSteps & ledger.LedgerWriteSteps;

/** A mutation's procedure, as the engine's {@link StoreMutations.transact} runs it. */
export type Mutation<R> = Generator<StepCall<MutationSteps>, R, unknown>;

/**
 * The RuntimeStore and StateStore mutations but admission, and the prompt reads
 * (prompt-reads.ts), for an engine to extend.
 */
export abstract class StoreMutations {
  /**
   * Runs `procedure` in one write transaction, taking each step it yields; the transaction
   * commits when it returns and rolls back when it throws.
   */
  protected abstract transact<R>(procedure: Mutation<R>): Promise<R>;

  /** Runs a prompt read on one snapshot of the database. */
  protected abstract readPrompt<R>(procedure: PromptRead<R>): Promise<R>;

  loadPromptContext(runId: string, options: { maxTurns: number }): Promise<PromptContext> {
    return this.readPrompt(promptContext(runId, options));
  }

  loadCompactionCandidates(conversationId: string, options: CompactionRead): Promise<CompactionCandidates> {
    return this.readPrompt(compactionCandidates(conversationId, options));
  }

  acquireNext(request: AcquireNextRequest): Promise<NextAcquisition> {
    return this.transact(runs.acquireNext(request));
  }

  acquireRun(request: AcquireRequest): Promise<AcquiredRun | null> {
    return this.transact(runs.acquireRun(request));
  }

  releaseRun(fence: Fence, nowMs: number): Promise<void> {
    return this.transact(runs.release(fence, nowMs));
  }

  checkpoint(request: CheckpointRequest): Promise<{ seq: number }> {
    return this.transact(runs.checkpoint(request));
  }

  saveToolProgress(
    fence: Fence,
    assistantParts: MessagePart[],
    nowMs: number,
    spilled?: SpilledOutput,
  ): Promise<void> {
    return this.transact(runs.toolProgress(fence, assistantParts, nowMs, spilled));
  }

  enqueueFiles(fence: Fence, files: FileDelivery[], nowMs: number): Promise<string[]> {
    return this.transact(runs.enqueueFiles(fence, files, nowMs));
  }

  saveInputParts(fence: Fence, messageId: string, parts: InputPart[]): Promise<void> {
    return this.transact(runs.inputParts(fence, messageId, parts));
  }

  requestStop(runId: string, reason: StopReason, nowMs: number): Promise<StopRequestResult> {
    return this.transact(stop(runId, reason, nowMs));
  }

  commitTerminal(request: TerminalRequest): Promise<TerminalResult> {
    return this.transact(terminal(request));
  }

  spawnChild(request: SpawnRequest): Promise<SpawnResult> {
    return this.transact(spawnChild(request));
  }

  cancelChildren(target: ChildTarget, nowMs: number): Promise<StoppedChildRun[]> {
    return this.transact(cancelChildren(target, nowMs));
  }

  resolveConversationKey(key: string, nowMs: number): Promise<string> {
    return this.transact(ledger.resolveKey(key, nowMs));
  }

  rotateConversationKey(key: string, nowMs: number): Promise<string> {
    return this.transact(ledger.rotateKey(key, nowMs));
  }

  /** A conversation purged before rolls its transaction back and answers `already_purged`. */
  purgeConversation(
    conversationId: string,
    options: { expectedVersion?: number; nowMs: number; actor?: string },
  ): Promise<PurgeResult> {
    return this.transact(ledger.purge(conversationId, options)).catch(ledger.alreadyPurged);
  }

  saveState(request: StateSave): Promise<StateSaveResult> {
    return this.transact(ledger.saveState(request));
  }

  saveSummary(request: SummarySave): Promise<SummarySaveResult> {
    return this.transact(ledger.saveSummary(request));
  }

  claimIngress(request: IngressClaim): Promise<IngressClaimResult> {
    return this.transact(ledger.claimIngress(request));
  }

  saveConversationSettings(
    conversationId: string,
    settings: ConversationSettings,
    nowMs: number,
  ): Promise<void> {
    return this.transact(ledger.mergeSettings(conversationId, settings, nowMs));
  }
}
