/**
 * The opening of every chaos run: a fixed script, played before the random traffic, that meets
 * each traffic kind and each kill point at least once, so what a run covers follows from the
 * script rather than from the dice and the machine's speed.
 *
 * First the traffic kinds, without faults or kills (each is sure to happen as planned): text in
 * every place (one delivered twice at once), chatter to ignore, a supersede and an interrupt (a
 * message arriving while the last answer streams), `/stop` during an answer, tool calls of a
 * non-idempotent and an idempotent tool, approvals approved, denied, pressed twice and left to
 * expire, child agents spawned (waited for and not), a photo and a voice note, a schedule (and an
 * approval and a schedule through the second Telegram bot, the account `support`),
 * `/export`, a `/forget` episode, the pairing episode, conversation API messages and a proactive
 * send (each repeated with its key), edits and deletes of queued messages, and late replays (a WhatsApp webhook among
 * them). Then a WhatsApp send killed right after WhatsApp accepted it, which its status webhook
 * must settle, and a Matrix send killed right after the homeserver stored it, which the next
 * gateway sends again under the same txnId (while no gateway runs, the homeserver also brings an
 * event answered long ago again). Then, with faults on, the kill chain (kills.ts): every kill
 * point once, tool calls of both kinds killed mid-call, and a spawn's child killed as it hands its
 * result on.
 */
import { txnIdFor } from "../../channels/matrix/keys.ts";
import type { KillPoint } from "../../src/util/kill-point.ts";
import type { Cast, Place } from "./cast.ts";
import type { ChaosDatabase } from "./database.ts";
import type { FaultInjector } from "./faults.ts";
import { killAtEveryPoint, restart } from "./kills.ts";
import type { Random } from "./random.ts";
import { isMatrixReply, readMatrix, readWhatsApp } from "./snapshot.ts";
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
  /** WhatsApp records left `sending` by the SIGKILL right after WhatsApp accepted them (0: no try managed it). */
  whatsappKilledMidSend: number;
  /** Matrix records left `sending` by the SIGKILL right after the homeserver stored their event (0: no try managed it). */
  matrixKilledMidSend: number;
}

export async function playOpening(context: OpeningContext): Promise<OpeningResult> {
  const started = Date.now();
  const answeredOnMatrix = await playTrafficKinds(context);
  const chainStarted = Date.now();
  const whatsappKilledMidSend = await killMidWhatsAppSend(context);
  const matrixKilledMidSend = await killMidMatrixSend(context);
  // No gateway runs: the homeserver puts an event answered long ago into the stream again, and the
  // next gateway's /sync (from its stored token) brings it: a duplicate, answered once.
  context.traffic.replay(answeredOnMatrix);
  context.faults.enable();
  const missed = await killAtEveryPoint(
    context.supervisor,
    context.traffic,
    context.random,
    context.armedWindowMs,
    context.log,
  );
  await meetEveryMatrixFault(context);
  return {
    kindsMs: chainStarted - started,
    chainMs: Date.now() - chainStarted,
    missed,
    whatsappKilledMidSend,
    matrixKilledMidSend,
  };
}

/** Matrix messages the opening posts at most to meet every send fault kind. */
const MATRIX_FAULT_TRIES = 4;
const MATRIX_REPLY_TIMEOUT_MS = 15_000;

/**
 * Posts Matrix messages one at a time, each waited for until a reply is stored, while the
 * homeserver has not yet answered a reply with every send fault kind (the injector arms the kinds
 * not yet met first): the random traffic alone may bring too few Matrix replies to meet them all.
 */
async function meetEveryMatrixFault({
  cast,
  peers,
  traffic,
  faults,
  random,
  log,
}: OpeningContext): Promise<void> {
  const places = cast.places.filter((p) => p.channel === "matrix");
  const stored = () =>
    peers.matrix.callsOf("send").filter((c) => isMatrixReply(c) && c.fault === undefined).length;
  for (let tries = 0; tries < MATRIX_FAULT_TRIES && !faults.everyMatrixFaultMet; tries += 1) {
    const before = stored();
    traffic.postAnswerable(random.pick(places), { duplicate: false });
    if (!(await waitFor(() => stored() > before, MATRIX_REPLY_TIMEOUT_MS))) break;
  }
  if (!faults.everyMatrixFaultMet) log("opening: not every Matrix send fault kind was met");
}

/** Tries at killing a WhatsApp send mid-flight (a try fails only when the armed process stalls). */
const MID_SEND_TRIES = 2;

/**
 * SIGKILLs a gateway right after WhatsApp accepted one of its sends, before the gateway recorded
 * it (the kill point counts WhatsApp sends only): the record is left `sending`, WhatsApp has the
 * message, and its status webhook (sent to the dead gateway, so redelivered to the next) must
 * settle it with no operator (the `status-settles` invariant). Returns how many such records the
 * death left, checked in the database while no gateway runs; the gateway is down afterwards (the
 * kill chain starts the next).
 */
async function killMidWhatsAppSend({
  cast,
  peers,
  traffic,
  supervisor,
  database,
  random,
  armedWindowMs,
  log,
}: OpeningContext): Promise<number> {
  const places = cast.places.filter((p) => p.channel === "whatsapp");
  const chats = places.map((p) => p.chat);
  for (let attempt = 1; attempt <= MID_SEND_TRIES; attempt += 1) {
    await supervisor.sigkill();
    log(`opening: armed outbox.platform-accepted on a WhatsApp send (try ${attempt})`);
    const arm = { point: "outbox.platform-accepted", at: 1, channel: "whatsapp" } as const;
    await restart(supervisor, traffic, arm, { spare: false });
    if (supervisor.armed) {
      traffic.postAnswerable(random.pick(places), { duplicate: false });
      if (!(await supervisor.waitForDeath(armedWindowMs))) await supervisor.sigkill();
    }
    if (supervisor.running) continue; // fired while starting, on a send left over: this process runs disarmed
    const sending = await database.read<{ key: string }>(
      "SELECT key FROM outbox WHERE channel = 'whatsapp' AND state = 'sending'",
    );
    const accepted = readWhatsApp(peers.whatsapp, chats).whatsappAccepted;
    const left = sending.filter((r) => accepted.some((a) => a.callbackData.startsWith(`${r.key}#`))).length;
    if (left > 0) return left;
  }
  log(`opening: no WhatsApp send was killed right after WhatsApp accepted it in ${MID_SEND_TRIES} tries`);
  return 0;
}

/**
 * SIGKILLs a gateway right after the homeserver stored the event of one of its Matrix sends, before
 * the gateway recorded it (the kill point counts Matrix sends only): the record is left `sending`
 * with its event in the room, and the next gateway must send it again under the same txnId (the
 * homeserver answers with the stored event), never leave it ambiguous (the `matrix-once`
 * invariant). Returns how many such records the death left; the gateway is down afterwards.
 */
async function killMidMatrixSend({
  cast,
  peers,
  traffic,
  supervisor,
  database,
  random,
  armedWindowMs,
  log,
}: OpeningContext): Promise<number> {
  const places = cast.places.filter((p) => p.channel === "matrix" && !p.needsMention);
  for (let attempt = 1; attempt <= MID_SEND_TRIES; attempt += 1) {
    await supervisor.sigkill();
    log(`opening: armed outbox.platform-accepted on a Matrix send (try ${attempt})`);
    const arm = { point: "outbox.platform-accepted", at: 1, channel: "matrix" } as const;
    await restart(supervisor, traffic, arm, { spare: false });
    if (supervisor.armed) {
      traffic.postAnswerable(random.pick(places), { duplicate: false });
      if (!(await supervisor.waitForDeath(armedWindowMs))) await supervisor.sigkill();
    }
    if (supervisor.running) continue; // fired while starting, on a send left over: this process runs disarmed
    const sending = await database.read<{ key: string }>(
      "SELECT key FROM outbox WHERE channel = 'matrix' AND state = 'sending'",
    );
    const stored = readMatrix(peers.matrix).matrixTxns.map((t) => t.txnId);
    const left = sending.filter((r) =>
      stored.some((txnId) => txnId.startsWith(txnIdFor(`${r.key}#`))),
    ).length;
    if (left > 0) return left;
  }
  log(`opening: no Matrix send was killed right after the homeserver stored it in ${MID_SEND_TRIES} tries`);
  return 0;
}

/** Plays every traffic kind once; returns the id of a Matrix DM message it had answered. */
async function playTrafficKinds({ cast, peers, traffic, database, log }: OpeningContext): Promise<string> {
  const place = (name: string) => cast.byName(name);
  const modelSaw = (id: string) => () => peers.llm.requests().some((r) => r.lastUserText.includes(id));
  const texts = cast.places.map((p, k) => traffic.postAnswerable(p, { duplicate: k === 0, pace: SLOW }));
  // Edits and deletes of messages queued behind the slow first answers, each delivered twice
  // (Telegram reports no deletes); applied before the kills begin (the quiet wait below).
  // By the place's source too: two Telegram bots number their updates alike.
  const admittedIn = (at: Place) => async (updateKeys: string[]) => {
    const source = at.account === undefined ? `LIKE '${at.channel}:%'` : `= '${at.channel}:${at.account}'`;
    const rows = await database.read<{ n: number | string }>(
      `SELECT count(*) AS n FROM ingress_receipts WHERE run_id IS NOT NULL AND source ${source} AND key IN (${updateKeys.map((k) => `'${k}'`).join(", ")})`,
    );
    return Number(rows[0]?.n ?? 0) === updateKeys.length;
  };
  const editing = Promise.all(
    ["tg-topic", "dc-general", "mx-dm-alice"].map((name) =>
      traffic.correctAndWithdraw(
        place(name),
        texts[cast.places.indexOf(place(name))]!,
        admittedIn(place(name)),
      ),
    ),
  );
  traffic.postIgnorable("group");
  traffic.postIgnorable("stranger");
  // A Matrix user the allowlist does not name, in a room the bot had joined: never answered.
  traffic.postIgnorable("stranger", cast.stranger.matrixDm);
  traffic.postToolCall("t", { ms: 300 });
  traffic.postToolCall("r", { ms: 300 });
  for (const decision of ["approve", "deny", "approve-twice", "expire"] as const)
    traffic.postToolCall("p", { place: cast.approver, decision });
  // Through the support bot too: its prompt, press and answer stay with it (same-account).
  traffic.postToolCall("p", { place: place("sup-group"), decision: "approve" });
  traffic.postSpawn({ wait: true, place: place("tg-topic") });
  traffic.postSpawn({ wait: false, place: place("tg-group") });
  await traffic.postMedia("photo");
  await traffic.postMedia("voice");
  traffic.postSchedule();
  traffic.postSchedule(place("sup-dm-bob"));
  traffic.postCommand("export", place("tg-topic"));
  traffic.forget();
  traffic.pair();
  traffic.postApiMessage();
  traffic.postApiMessage();
  traffic.postApiSend();
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
  await editing;
  const pressed = await waitFor(() => traffic.unpressed === 0, KINDS_TIMEOUT_MS);
  const quiet = await waitFor(async () => (await activeRuns(database)) === 0, KINDS_TIMEOUT_MS);
  if (!pressed || !quiet)
    log(
      `opening: traffic kinds not played out within ${KINDS_TIMEOUT_MS} ms (presses done: ${pressed}, runs over: ${quiet})`,
    );
  // Clients repeat their API calls with the same keys: the same runs, the same outbox record.
  await traffic.apiDone();
  for (let k = 0; k < 3; k += 1) traffic.repeatApi();
  traffic.replay(texts[2]!);
  // Meta delivers a webhook answered long ago again: it must change nothing.
  traffic.replay(texts[cast.places.indexOf(place("wa-dm-alice"))]!);
  return texts[cast.places.indexOf(place("mx-dm-bob"))]!;
}

async function activeRuns(database: ChaosDatabase): Promise<number> {
  const rows = await database.read<{ n: number | string }>(
    "SELECT count(*) AS n FROM runs WHERE state IN ('queued', 'running', 'interrupt_requested')",
  );
  return Number(rows[0]?.n ?? 0);
}
