/**
 * The deaths of a chaos run: the kill chain of the opening (each named kill point once, in a fixed
 * order, one armed start after another) and the random phase's SIGKILLs and armed restarts.
 */
import type { KillPoint } from "../../src/util/kill-point.ts";
import type { ChaosOptions } from "./options.ts";
import type { Random } from "./random.ts";
import { type GatewaySupervisor, KILL_POINTS, type KillPointArm } from "./supervisor.ts";
import { sleepUntil, type Traffic } from "./traffic.ts";

/** In the random phase, each process lives at least this long (and at most twice), so work makes progress. */
const MIN_LIFETIME_MS = 1_500;

/**
 * Starts the gateway, redelivers the Discord messages the deaths since the last start may have
 * swallowed (the one that made this restart necessary, and any while starting), and repeats an
 * earlier conversation API call.
 */
export async function restart(
  supervisor: GatewaySupervisor,
  traffic: Traffic,
  arm?: KillPointArm,
  options: { spare?: boolean } = {},
): Promise<void> {
  const deathBefore = supervisor.lastDeathAtMs;
  await supervisor.start(arm, options);
  const firstDeath = Math.min(
    deathBefore ?? Number.POSITIVE_INFINITY,
    supervisor.lastDeathAtMs ?? Number.POSITIVE_INFINITY,
  );
  if (Number.isFinite(firstDeath)) await traffic.redeliverDiscordAtRisk(firstDeath);
  // A client that lost its answer to the death asks again with the same key.
  traffic.repeatApi();
}

/**
 * Posts what makes the armed process pass `point` `passes` times: a message (or schedule, or
 * tool call) of its own per pass. A send point gets one in every place, since an ambiguous reply
 * may hold back a chat's sends; `tool.started` gets the tool call `tool` (the dice choose when absent).
 */
function triggerKillPoint(
  traffic: Traffic,
  random: Random,
  point: KillPoint,
  passes: number,
  tool?: "t" | "r",
): void {
  for (let pass = 0; pass < passes; pass += 1) {
    if (point === "schedule.claimed") traffic.postSchedule();
    else if (point === "run.input-handed-on") traffic.postSpawn();
    // In a queue chat: no later message there supersedes the run before its call is recovered.
    else if (point === "tool.started")
      traffic.postToolCall(tool ?? (random.chance(0.5) ? "t" : "r"), {
        place: random.pick(traffic.places.filter((p) => p.press !== undefined && p.policy === "queue")),
      });
    else if (point.startsWith("outbox.")) for (const place of traffic.places) traffic.postAnswerable(place);
    else traffic.postAnswerable();
  }
}

/** One step of the kill chain: the point to arm, and for `tool.started` the tool to kill mid-call. */
interface ChainStep {
  point: KillPoint;
  tool?: "t" | "r";
}

/**
 * The opening's kill chain: every kill point once, `tool.started` twice (a non-idempotent call,
 * then an idempotent one, each killed mid-call). The running gateway is SIGKILLed, then each step
 * starts a process armed at its point (recovering what the last death left), posts what passes the
 * point and waits for the death; the next step starts at once. Tool calls go first, while nothing
 * else could pass `tool.started`. In standby mode only the last armed start gets a standby, which
 * then takes over. Returns the points that did not fire within `armedWindowMs`.
 */
export async function killAtEveryPoint(
  supervisor: GatewaySupervisor,
  traffic: Traffic,
  random: Random,
  armedWindowMs: number,
  log: (line: string) => void,
): Promise<KillPoint[]> {
  const rest = KILL_POINTS.filter((p) => p !== "tool.started" && p !== "schedule.claimed");
  const chain: ChainStep[] = [
    { point: "tool.started", tool: "t" },
    { point: "tool.started", tool: "r" },
    // Early, so the occurrence the dead process claimed is taken over while the chain goes on.
    { point: "schedule.claimed" },
    ...rest.map((point) => ({ point })),
  ];
  const missed: KillPoint[] = [];
  await supervisor.sigkill();
  for (const [index, step] of chain.entries()) {
    if (supervisor.running) await supervisor.sigkill(); // the last step's point fired while starting
    log(
      `opening: armed ${step.point}${step.tool ? ` (${step.tool === "t" ? "non-idempotent" : "idempotent"} tool)` : ""}`,
    );
    await restart(supervisor, traffic, { point: step.point, at: 1 }, { spare: index === chain.length - 1 });
    if (!supervisor.armed) continue; // it fired while starting (recovery passes points too)
    triggerKillPoint(traffic, random, step.point, 1, step.tool);
    if (!(await supervisor.waitForDeath(armedWindowMs))) {
      log(`opening: ${step.point} did not fire within ${armedWindowMs} ms`);
      missed.push(step.point);
      await supervisor.sigkill();
    }
  }
  if (!supervisor.running) await restart(supervisor, traffic);
  return missed;
}

/**
 * The random phase's deaths: `killPointRounds` armed restarts per kill point and `randomKills`
 * plain SIGKILLs, in a seeded order, spread over the first 70% of [startMs, endMs].
 */
export async function runKills(
  options: ChaosOptions,
  random: Random,
  supervisor: GatewaySupervisor,
  traffic: Traffic,
  window: { startMs: number; endMs: number },
  log: (line: string) => void,
): Promise<void> {
  const episodes = random.shuffle([
    ...Array.from({ length: options.killPointRounds }, () =>
      KILL_POINTS.map((point) => ({ kind: "point" as const, point })),
    ).flat(),
    ...Array.from({ length: options.randomKills }, () => ({ kind: "random" as const })),
  ]);
  const spanMs = (window.endMs - window.startMs) * 0.7;
  const at = () => `+${Date.now() - window.startMs} ms`;
  for (const [index, episode] of episodes.entries()) {
    const atMs = window.startMs + ((index + random.next()) / episodes.length) * spanMs;
    await sleepUntil(
      Math.max(atMs, (supervisor.lastStartedAtMs ?? 0) + random.int(MIN_LIFETIME_MS, 2 * MIN_LIFETIME_MS)),
    );
    if (!supervisor.running) await restart(supervisor, traffic); // a crash: recorded, and we go on
    await supervisor.sigkill();
    // Down a moment: updates pile up for the next process.
    await Bun.sleep(random.int(0, 800));
    if (episode.kind === "random") {
      log(`SIGKILL at ${at()}`);
      await restart(supervisor, traffic);
      continue;
    }
    const arm = { point: episode.point, at: episode.point === "schedule.claimed" ? 1 : random.int(1, 2) };
    log(`armed ${arm.point} (pass ${arm.at}) at ${at()}`);
    await restart(supervisor, traffic, arm);
    triggerKillPoint(traffic, random, arm.point, arm.at);
    if (supervisor.armed && !(await supervisor.waitForDeath(options.armedWindowMs))) {
      log(`${arm.point} did not fire within ${options.armedWindowMs} ms`);
      await supervisor.sigkill();
    }
    if (supervisor.running) continue; // it fired while starting; this process runs disarmed
    await Bun.sleep(random.int(0, 500));
    await restart(supervisor, traffic);
  }
}
