/**
 * Keeps one real gateway process alive through a chaos run: starts it (optionally with a kill
 * point armed), SIGKILLs it, notices when it killed itself at its kill point, and tells a planned
 * death from a crash.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KillPoint } from "../../src/util/kill-point.ts";
import { type GatewayProcess, startGatewayProcess } from "../e2e/support/gateway-process.ts";

export const KILL_POINTS: readonly KillPoint[] = [
  "ingress.admitted",
  "step.streaming",
  "step.persisted",
  "run.terminal-committed",
  "outbox.sending-persisted",
  "outbox.platform-accepted",
  "schedule.claimed",
];

export interface KillPointArm {
  point: KillPoint;
  /** Fire the Nth time the point is passed. */
  at: number;
}

export interface SupervisorStats {
  starts: number;
  /** SIGKILLs the driver sent. */
  sigkills: number;
  /** Kill points that fired, by point (during startup recovery too). */
  killPointsFired: Partial<Record<KillPoint, number>>;
  /** Exits nobody planned, with the tail of the process's log. */
  crashes: Array<{ exitCode: number; logTail: string[] }>;
}

const KILL_POINT_LOG = '"event":"test.kill_point"';
const LOG_TAIL_LINES = 40;

export class GatewaySupervisor {
  readonly stats: SupervisorStats = { starts: 0, sigkills: 0, killPointsFired: {}, crashes: [] };
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

  constructor(
    private readonly env: () => Record<string, string>,
    /** Each process's log is written here as gateway-<n>.log when it ends. */
    private readonly logDir: string,
  ) {}

  get url(): string | null {
    return this.current?.url ?? null;
  }

  get running(): boolean {
    return this.current !== null;
  }

  /** The running process has a kill point armed (it did not already fire while starting). */
  get armed(): boolean {
    return this.current !== null && this.currentArm !== undefined;
  }

  /**
   * Starts the gateway, with `arm` armed. A process that kills itself at its kill point while
   * starting (recovery passes points too) counts as fired and is started again disarmed.
   */
  async start(arm?: KillPointArm): Promise<void> {
    if (this.current) throw new Error("the gateway is already running");
    let armed = arm;
    for (;;) {
      this.stats.starts += 1;
      this.timeline.push({
        atMs: Date.now(),
        event: `start #${this.stats.starts}${armed ? ` armed ${armed.point}@${armed.at}` : ""}`,
      });
      const env = armed
        ? {
            ...this.env(),
            SWITCHBOARD_TEST_KILL_POINT: armed.point,
            SWITCHBOARD_TEST_KILL_AT: String(armed.at),
          }
        : this.env();
      try {
        this.watch(await startGatewayProcess(env, 30_000), armed);
        this.lastStartedAtMs = Date.now();
        this.timeline.push({ atMs: this.lastStartedAtMs, event: `started #${this.stats.starts}` });
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

  private fired(point: KillPoint): void {
    this.stats.killPointsFired[point] = (this.stats.killPointsFired[point] ?? 0) + 1;
  }

  private watch(child: GatewayProcess, arm: KillPointArm | undefined): void {
    this.current = child;
    this.currentArm = arm;
    this.expectingDeath = false;
    const n = this.stats.starts;
    void child.exited.then(async (exitCode) => {
      await Bun.sleep(200); // let the log pumps read the last lines (the kill point's)
      try {
        writeFileSync(join(this.logDir, `gateway-${n}.log`), `${child.logs.join("\n")}\n`);
      } catch {
        // The run's folder is already gone (a run that ended with an error): nothing to keep.
      }
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
