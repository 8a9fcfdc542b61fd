/**
 * The opening of every chaos run: a fixed script, played before the random traffic, that meets
 * each traffic kind and each kill point at least once, so what a run covers follows from the
 * script rather than from the dice and the machine's speed.
 *
 * First the traffic kinds, without faults or kills (each is sure to happen as planned): text in
 * every place (one delivered twice at once), chatter to ignore, a supersede and an interrupt (a
 * message arriving while the last answer streams), `/stop` during an answer, tool calls of a
 * non-idempotent and an idempotent tool, approvals approved, denied, pressed twice and left to
 * expire, a photo and a voice note, a schedule, `/export`, a `/forget` episode, the pairing
 * episode and a late replay. Then, with faults on, the kill chain (kills.ts): every kill point
 * once, tool calls of both kinds killed mid-call.
 */
import type { KillPoint } from "../../src/util/kill-point.ts";
import type { Cast } from "./cast.ts";
import type { ChaosDatabase } from "./database.ts";
import type { FaultInjector } from "./faults.ts";
import { killAtEveryPoint } from "./kills.ts";
import type { Random } from "./random.ts";
import type { GatewaySupervisor } from "./supervisor.ts";
import { type Pace, type Peers, type Traffic, waitFor } from "./traffic.ts";

/** An answer long enough (about 4 s) for the next message or a `/stop` to arrive while it streams. */
const SLOW: Pace = { chunks: 16, chunkDelayMs: 250 };
/**
 * How long the opening waits for its traffic kinds to play out before the kills begin. Not the
 * expected time (a few seconds): only a bound on a gateway that stopped making progress.
 */
const KINDS_TIMEOUT_MS = 60_000;

export interface OpeningContext {
  cast: Cast;
  peers: Peers;
  traffic: Traffic;
  supervisor: GatewaySupervisor;
  faults: FaultInjector;
  database: ChaosDatabase;
  random: Random;
  armedWindowMs: number;
  log: (line: string) => void;
}

export interface OpeningResult {
  /** Time spent on the traffic kinds, and on the kill chain. */
  kindsMs: number;
  chainMs: number;
  /** Kill points the chain armed that did not fire. */
  missed: KillPoint[];
}

export async function playOpening(context: OpeningContext): Promise<OpeningResult> {
  const started = Date.now();
  await playTrafficKinds(context);
  const chainStarted = Date.now();
  context.faults.enable();
  const missed = await killAtEveryPoint(
    context.supervisor,
    context.traffic,
    context.random,
    context.armedWindowMs,
    context.log,
  );
  return { kindsMs: chainStarted - started, chainMs: Date.now() - chainStarted, missed };
}

async function playTrafficKinds({ cast, peers, traffic, database, log }: OpeningContext): Promise<void> {
  const place = (name: string) => cast.byName(name);
  const modelSaw = (id: string) => () => peers.llm.requests().some((r) => r.lastUserText.includes(id));
  const texts = cast.places.map((p, k) => traffic.postAnswerable(p, { duplicate: k === 0, pace: SLOW }));
  traffic.postIgnorable("group");
  traffic.postIgnorable("stranger");
  traffic.postToolCall("t", { ms: 300 });
  traffic.postToolCall("r", { ms: 300 });
  for (const decision of ["approve", "deny", "approve-twice", "expire"] as const)
    traffic.postToolCall("p", { place: cast.approver, decision });
  await traffic.postMedia("photo");
  await traffic.postMedia("voice");
  traffic.postSchedule();
  traffic.postCommand("export", place("tg-topic"));
  traffic.forget();
  traffic.pair();
  // Each DM's first answer streams slowly: the next message supersedes it (Telegram), interrupts
  // it (Discord), or a /stop ends it.
  const superseded = texts[cast.places.indexOf(place("tg-dm-alice"))]!;
  const interrupted = texts[cast.places.indexOf(place("dc-dm-alice"))]!;
  const stopped = texts[cast.places.indexOf(place("dc-dm-bob"))]!;
  await waitFor(modelSaw(superseded), KINDS_TIMEOUT_MS);
  traffic.postAnswerable(place("tg-dm-alice"), { duplicate: false });
  await waitFor(modelSaw(interrupted), KINDS_TIMEOUT_MS);
  traffic.postAnswerable(place("dc-dm-alice"), { duplicate: false });
  await waitFor(modelSaw(stopped), KINDS_TIMEOUT_MS);
  traffic.postCommand("stop", place("dc-dm-bob"));
  // The planned presses, then every run but the expiring approval's over before the kills begin
  // (so the kill chain's tool.started is passed by its own calls only).
  const pressed = await waitFor(() => traffic.unpressed === 0, KINDS_TIMEOUT_MS);
  const quiet = await waitFor(async () => (await activeRuns(database)) === 0, KINDS_TIMEOUT_MS);
  if (!pressed || !quiet)
    log(
      `opening: traffic kinds not played out within ${KINDS_TIMEOUT_MS} ms (presses done: ${pressed}, runs over: ${quiet})`,
    );
  traffic.replay(texts[2]!);
}

async function activeRuns(database: ChaosDatabase): Promise<number> {
  const rows = await database.read<{ n: number | string }>(
    "SELECT count(*) AS n FROM runs WHERE state IN ('queued', 'running', 'interrupt_requested')",
  );
  return Number(rows[0]?.n ?? 0);
}
