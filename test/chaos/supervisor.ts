/**
 * Keeps one real gateway process alive through a chaos run: starts it (optionally with a kill
 * point armed), SIGKILLs it, notices when it killed itself at its kill point, and tells a planned
 * death from a crash. With `standby` (PostgreSQL), a second process always waits as a standby
 * (SWITCHBOARD_STANDBY=on): after a death it is the one that takes over, and a new one waits.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KillPoint } from "../../src/util/kill-point.ts";
import { type GatewayProcess, startGatewayProcess } from "../e2e/support/gateway-process.ts";

export const KILL_POINTS: readonly KillPoint[] = [
  "ingress.admitted",
  "step.streaming",
  "step.persisted",
  "tool.started",
  "run.terminal-committed",
  "run.input-handed-on",
  "outbox.sending-persisted",
  "outbox.platform-accepted",
  "schedule.claimed",
];

export interface KillPointArm {
  point: KillPoint;
  /** Fire the Nth time the point is passed. */
  at: number;
  /** Count only passes on this channel's behalf (points that know their channel: a send's). */
  channel?: string;
}

export interface SupervisorStats {
  starts: number;
  /** Standbys that took over from a dead gateway (standby mode). */
  takeovers: number;
  /** SIGKILLs the driver sent. */
  sigkills: number;
  /** Kill points that fired, by point (during startup recovery too). */
  killPointsFired: Partial<Record<KillPoint, number>>;
  /** Exits nobody planned, with the tail of the process's log. */
  crashes: Array<{ exitCode: number; logTail: string[] }>;
  /** Time the driver waited for gateways to start (spawn to `gateway.started`), standbys included. */
  startingMs: number;
  /** Time the driver waited for a standby to take over after a death. */
  takeoverMs: number;
}

const KILL_POINT_LOG = '"event":"test.kill_point"';
const LOG_TAIL_LINES = 40;

export class GatewaySupervisor {
  readonly stats: SupervisorStats = {
    starts: 0,
    takeovers: 0,
    sigkills: 0,
    killPointsFired: {},
    crashes: [],
    startingMs: 0,
    takeoverMs: 0,
  };
  /** What happened when (wall clock), kept with a failed run's files. */
  readonly timeline: Array<{ atMs: number; event: string }> = [];
  /** When the last process died (wall clock), or null while none has. */
  lastDeathAtMs: number | null = null;
  /** When the last process logged that it started. */
  lastStartedAtMs: number | null = null;
  private current: GatewayProcess | null = null;
  private currentArm: KillPointArm | undefined;
  private expectingDeath = false;
  private deathListeners: Array<() => void> = [];
  /** Standby mode: the process waiting to take over, and whether its end is planned. */
  private spare: { process: GatewayProcess; n: number; retiring: boolean } | null = null;

  constructor(
    private readonly env: () => Record<string, string>,
    /** Each process's log is written here as gateway-<n>.log when it ends. */
    private readonly logDir: string,
    private readonly options: { standby?: boolean } = {},
  ) {}

  get url(): string | null {
    return this.current?.url ?? null;
  }

  get running(): boolean {
    return this.current !== null;
  }

  /** The running gateway's pid (for its RSS), or null while it is down. */
  get pid(): number | null {
    return this.current?.pid ?? null;
  }

  /** The running process has a kill point armed (it did not already fire while starting). */
  get armed(): boolean {
    return this.current !== null && this.currentArm !== undefined;
  }

  /**
   * Starts the gateway, with `arm` armed. A process that kills itself at its kill point while
   * starting (recovery passes points too) counts as fired and is started again disarmed. In
   * standby mode a standby is then started to wait, unless `spare` is false (a chain of armed
   * starts, where each would only be retired by the next).
   */
  async start(arm?: KillPointArm, options: { spare?: boolean } = {}): Promise<void> {
    if (this.current) throw new Error("the gateway is already running");
    if (this.spare && arm === undefined && (await this.adoptSpare())) return;
    // An armed start needs a process of its own: the waiting standby makes way.
    await this.retireSpare();
    let armed = arm;
    for (;;) {
      this.stats.starts += 1;
      this.timeline.push({
        atMs: Date.now(),
        event: `start #${this.stats.starts}${armed ? ` armed ${armed.point}@${armed.at}` : ""}`,
      });
      const base = this.options.standby ? { ...this.env(), SWITCHBOARD_STANDBY: "on" } : this.env();
      const env = armed
        ? {
            ...base,
            SWITCHBOARD_TEST_KILL_POINT: armed.point,
            SWITCHBOARD_TEST_KILL_AT: String(armed.at),
            ...(armed.channel ? { SWITCHBOARD_TEST_KILL_CHANNEL: armed.channel } : {}),
          }
        : base;
      const spawnedAtMs = Date.now();
      try {
        const child = await startGatewayProcess(env, 30_000).finally(() => {
          this.stats.startingMs += Date.now() - spawnedAtMs;
        });
        this.watch(child, armed);
        this.lastStartedAtMs = Date.now();
        this.timeline.push({ atMs: this.lastStartedAtMs, event: `started #${this.stats.starts}` });
        if (options.spare !== false) await this.spawnSpare();
        return;
      } catch (error) {
        const message = String((error as Error).message);
        // Its last stderr line may not be read yet when the exit is seen: an armed gateway that
        // died of SIGKILL before starting was killed by its kill point (nobody else kills it then).
        if (armed && (message.includes(KILL_POINT_LOG) || message.includes("exited with 137"))) {
          this.fired(armed.point);
          this.lastDeathAtMs = Date.now();
          this.timeline.push({ atMs: Date.now(), event: `died while starting (kill point ${armed.point})` });
          armed = undefined;
          continue;
        }
        throw error;
      }
    }
  }

  /** SIGKILLs the running gateway (a no-op when it is down) and waits for it to be gone. */
  async sigkill(): Promise<void> {
    const child = this.current;
    if (!child) return;
    this.expectingDeath = true;
    this.stats.sigkills += 1;
    await child.kill("SIGKILL");
    await this.untilDown();
  }

  /** Graceful stop at the end of a run. */
  async stop(): Promise<void> {
    await this.retireSpare();
    const child = this.current;
    if (!child) return;
    this.expectingDeath = true;
    await child.kill("SIGTERM");
    await this.untilDown();
  }

  /** Resolves true when the process dies (its kill point fired) within `timeoutMs`. */
  async waitForDeath(timeoutMs: number): Promise<boolean> {
    if (!this.current) return true;
    return Promise.race([this.untilDown().then(() => true), Bun.sleep(timeoutMs).then(() => false)]);
  }

  private untilDown(): Promise<void> {
    if (!this.current) return Promise.resolve();
    return new Promise((resolve) => this.deathListeners.push(resolve));
  }

  /** Standby mode: starts the process that waits to take over from the running one. */
  private async spawnSpare(): Promise<void> {
    if (!this.options.standby || this.spare) return;
    this.stats.starts += 1;
    const n = this.stats.starts;
    // With the running gateway already dead (a kill point that fired at once), it is active at once.
    const spawnedAtMs = Date.now();
    const process = await startGatewayProcess({ ...this.env(), SWITCHBOARD_STANDBY: "on" }, 30_000, [
      "gateway.standby",
      "gateway.started",
    ]).finally(() => {
      this.stats.startingMs += Date.now() - spawnedAtMs;
    });
    const spare = { process, n, retiring: false };
    this.spare = spare;
    this.timeline.push({ atMs: Date.now(), event: `standby #${n} waiting` });
    void process.exited.then(async (exitCode) => {
      if (this.current?.logs === process.logs) return; // it took over: watch() follows it now
      await Bun.sleep(200);
      this.keepLog(n, process);
      if (!spare.retiring)
        this.stats.crashes.push({ exitCode, logTail: process.logs.slice(-LOG_TAIL_LINES) });
      if (this.spare === spare) this.spare = null;
      this.timeline.push({ atMs: Date.now(), event: `standby #${n} ended, exit ${exitCode}` });
    });
  }

  /**
   * The gateway died: the waiting standby takes over by itself (a few seconds after the lock is
   * free). Waits for that and follows it as the running gateway; false when it did not.
   */
  private async adoptSpare(): Promise<boolean> {
    const spare = this.spare;
    if (!spare) return false;
    const waitedFromMs = Date.now();
    const deadline = waitedFromMs + 30_000;
    let started: Record<string, unknown> | undefined;
    while (!started && Date.now() < deadline && this.spare === spare) {
      // Scanning the raw lines: parsing every debug line of the log 20 times a second costs a core.
      const line = spare.process.logs.find((l) => l.includes('"event":"gateway.started"'));
      started = line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
      if (!started) await Bun.sleep(50);
    }
    this.stats.takeoverMs += Date.now() - waitedFromMs;
    if (!started || this.spare !== spare) return false;
    this.spare = null;
    this.stats.takeovers += 1;
    this.watch({ ...spare.process, url: String(started.url) }, undefined, spare.n);
    this.lastStartedAtMs = Date.now();
    this.timeline.push({ atMs: this.lastStartedAtMs, event: "standby took over" });
    await this.spawnSpare();
    return true;
  }

  /** Stops the waiting standby on purpose (SIGTERM; a standby exits 0 at once). */
  private async retireSpare(): Promise<void> {
    const spare = this.spare;
    if (!spare) return;
    spare.retiring = true;
    this.spare = null;
    await spare.process.kill("SIGTERM");
  }

  private keepLog(n: number, child: GatewayProcess): void {
    try {
      writeFileSync(join(this.logDir, `gateway-${n}.log`), `${child.logs.join("\n")}\n`);
    } catch {
      // The run's folder is already gone (a run that ended with an error): nothing to keep.
    }
  }

  private fired(point: KillPoint): void {
    this.stats.killPointsFired[point] = (this.stats.killPointsFired[point] ?? 0) + 1;
  }

  private watch(child: GatewayProcess, arm: KillPointArm | undefined, n = this.stats.starts): void {
    this.current = child;
    this.currentArm = arm;
    this.expectingDeath = false;
    void child.exited.then(async (exitCode) => {
      await Bun.sleep(200); // let the log pumps read the last lines (the kill point's)
      this.keepLog(n, child);
      const byKillPoint =
        arm !== undefined &&
        !this.expectingDeath &&
        (exitCode === 137 || child.logs.some((line) => line.includes(KILL_POINT_LOG)));
      if (byKillPoint && arm) this.fired(arm.point);
      else if (!this.expectingDeath)
        this.stats.crashes.push({ exitCode, logTail: child.logs.slice(-LOG_TAIL_LINES) });
      this.current = null;
      this.timeline.push({
        atMs: Date.now(),
        event: `died #${n} exit ${exitCode}${byKillPoint ? " (kill point)" : ""}`,
      });
      this.lastDeathAtMs = Date.now();
      this.expectingDeath = false;
      const listeners = this.deathListeners;
      this.deathListeners = [];
      for (const listener of listeners) listener();
    });
  }
}
