/**
 * The agent directories the gateway serves (the default one and any a surface picks), each with
 * its current generation. A reload (SIGHUP, or a changed file noticed by polling) builds a whole
 * new generation and then swaps it in, so a reader sees the old one or the new one, never a mix.
 * Recent generations are kept by version: a run pinned to one keeps it after a reload.
 */
import { type Clock, systemClock, type Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import {
  type AgentFiles,
  type AgentLimits,
  agentDirFingerprint,
  DEFAULT_AGENT_LIMITS,
  loadAgentFiles,
} from "./files.ts";

/** Generations kept per directory for runs pinned to them. */
const RETAINED_GENERATIONS = 16;

export interface AgentDirectoriesOptions {
  limits?: AgentLimits;
  logger: Logger;
  /** How often files are checked for changes; 0: never (SIGHUP only). Default 2000 ms. */
  pollMs?: number;
  /** Times the polling. Default the system clock. */
  clock?: Clock;
}

interface Entry {
  current: AgentFiles;
  fingerprint: string;
  retained: Map<string, AgentFiles>;
}

export class AgentDirectories {
  private readonly entries = new Map<string, Entry>();
  private readonly limits: AgentLimits;
  private timer: Timer | null = null;

  constructor(
    roots: Iterable<string>,
    private readonly options: AgentDirectoriesOptions,
  ) {
    this.limits = options.limits ?? DEFAULT_AGENT_LIMITS;
    for (const root of roots) {
      if (this.entries.has(root)) continue;
      const fingerprint = agentDirFingerprint(root, this.limits);
      const current = loadAgentFiles(root, this.limits);
      this.entries.set(root, { current, fingerprint, retained: new Map([[current.version, current]]) });
      this.report(current, "agent.loaded");
    }
  }

  get roots(): string[] {
    return [...this.entries.keys()];
  }

  /** The generation new runs get. */
  current(root: string): AgentFiles {
    const entry = this.entries.get(root);
    if (!entry) throw new Error(`agent directory ${root} was not declared at start`);
    return entry.current;
  }

  /**
   * The generation a run was pinned to, or the current one when it is no longer kept (a restart,
   * or many reloads since); the fallback is logged with both versions.
   */
  pinned(root: string, version: string, runId?: string): AgentFiles {
    const entry = this.entries.get(root);
    if (!entry) throw new Error(`agent directory ${root} was not declared at start`);
    const kept = entry.retained.get(version);
    if (kept) return kept;
    this.options.logger.warn("agent.version_unavailable", {
      root,
      runId,
      pinned: version,
      using: entry.current.version,
      hint: "the files changed since this run was admitted and that version is no longer in memory; the run uses the current one",
    });
    return entry.current;
  }

  /** Reloads every directory whose files changed (`force`: every directory). Returns those that changed version. */
  reload(reason: string, force = false): string[] {
    const changed: string[] = [];
    for (const [root, entry] of this.entries) {
      const fingerprint = agentDirFingerprint(root, this.limits);
      if (!force && fingerprint === entry.fingerprint) continue;
      const next = loadAgentFiles(root, this.limits);
      entry.fingerprint = fingerprint;
      if (next.version === entry.current.version) continue;
      const previous = entry.current.version;
      entry.current = next;
      entry.retained.delete(next.version);
      entry.retained.set(next.version, next);
      while (entry.retained.size > RETAINED_GENERATIONS) {
        const oldest = entry.retained.keys().next().value as string;
        entry.retained.delete(oldest);
      }
      this.report(next, "agent.reloaded", { reason, previous });
      changed.push(root);
    }
    return changed;
  }

  /** Starts polling for changed files. */
  start(): void {
    const pollMs = this.options.pollMs ?? 2000;
    if (pollMs <= 0 || this.timer) return;
    const clock = this.options.clock ?? systemClock;
    this.timer = clock.every(
      pollMs,
      () => {
        try {
          this.reload("file changed");
        } catch (error) {
          this.options.logger.warn("agent.reload_failed", { error });
        }
      },
      { unref: true },
    );
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = null;
  }

  private report(files: AgentFiles, event: string, extra: Record<string, unknown> = {}): void {
    const { logger } = this.options;
    logger.info(event, {
      root: files.root,
      version: files.version,
      exists: files.exists,
      instructions: files.instructions !== null,
      skills: [...files.skills.keys()],
      resources: files.resources.size,
      ...extra,
    });
    for (const problem of files.problems) {
      logger.warn("agent.file_refused", {
        root: files.root,
        file: problem.file,
        problem: problem.problem,
        fix: problem.fix,
      });
    }
  }
}
