/**
 * The chaos driver: a real gateway process between the Telegram and Discord emulators and the fake
 * LLM server (scripted streaming answers), a bounded stream of messages from several people in DMs,
 * groups, a forum topic and a thread, duplicates and replays of updates, `/in 2s` schedules,
 * platform faults, and SIGKILLs at random moments and at every named kill point. When the traffic
 * is over it lets the gateway settle (playing the operator for ambiguous records) and checks the
 * invariants from the outside.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { type DiscordEmulator, startDiscordEmulator } from "../emulators/discord/index.ts";
import { startTelegramEmulator, type TelegramEmulator } from "../emulators/telegram/index.ts";
import { startHttpMcpServer } from "../fixtures/mcp/http-server.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { type Cast, chaosConfig, createCast, type Place } from "./cast.ts";
import { type ChaosDatabase, type ChaosEngine, openChaosDatabase } from "./database.ts";
import { type FaultCounts, FaultInjector } from "./faults.ts";
import { checkInvariants, type Violation } from "./invariants.ts";
import { approvePairing, type OperatorDecision, resolveAmbiguous } from "./operator.ts";
import { type Random, seededRandom } from "./random.ts";
import {
  type MediaOutcome,
  type PairingOutcome,
  readChats,
  readDatabase,
  readModelLog,
  type SentInput,
  type Snapshot,
} from "./snapshot.ts";
import { GatewaySupervisor, KILL_POINTS, type KillPointArm } from "./supervisor.ts";

export interface ChaosOptions {
  seed: number;
  /** Length of the traffic phase (kills and faults happen inside it). */
  trafficMs: number;
  /** Messages posted (answerable and ignorable), evenly spread over the traffic phase. */
  messages: number;
  /** `/in 2s` schedules; one is always posted while `schedule.claimed` is armed. */
  schedules: number;
  /** SIGKILLs at random moments, besides the armed restarts. */
  randomKills: number;
  /** How many times each named kill point is armed (one restart each). */
  killPointRounds: number;
  /** Probability that a platform call fails (429, 5xx, reset, hang), given a call just before it. */
  faultRate: number;
  /** Probability that a message is delivered twice right away. */
  duplicateRate: number;
  /** Probability, per message posted, that an older update is delivered again. */
  replayRate: number;
  /**
   * Probability that a message (in a Telegram place) makes the model call an MCP tool that runs at
   * once, and, apart, one that needs approval (the driver presses Approve or Deny). Default 0.
   */
  toolRate?: number;
  /**
   * `/forget confirm` episodes in Carol's DM: she writes once or twice, forgets mid-conversation
   * (an answer may be streaming), then writes again in the fresh conversation. Default 0.
   */
  forgets?: number;
  /**
   * Pairing episodes: Dave, whom no allowlist names, writes, gets a code, the operator approves it
   * through the API (then once more: a second redemption), his first update is replayed, and he
   * writes again, to be answered. Default 0.
   */
  pairings?: number;
  /**
   * Probability that a message (in a Telegram place without a mention rule) is a captioned photo
   * or voice note, fetched through getFile; a voice note goes through the fake transcription
   * server. Default 0.
   */
  mediaRate?: number;
  /** How long an armed gateway may run before the driver gives up on its kill point. */
  armedWindowMs: number;
  settleTimeoutMs: number;
  /**
   * While the traffic runs, the operator handles ambiguous records this often, as someone watching
   * `outbox list --state ambiguous` would (each holds back its chat until decided). 0 or absent:
   * only once the traffic is over.
   */
  operatorEveryMs?: number;
  /** The gateway's database engine. Default SQLite; PostgreSQL gets a fresh database on the test server. */
  engine?: ChaosEngine;
  /**
   * PostgreSQL only: a second gateway always waits as a standby, and after each death it is the
   * standby that takes over (a new one then waits), instead of a fresh start.
   */
  standby?: boolean;
  log?: (line: string) => void;
}

export interface ChaosReport {
  seed: number;
  engine: ChaosEngine;
  standby: boolean;
  messages: {
    answerable: number;
    ignorable: number;
    schedules: number;
    toolCalls: number;
    approvals: number;
    forgets: number;
    purged: number;
    photos: number;
    voiceNotes: number;
  };
  kills: {
    sigkills: number;
    killPoints: Record<string, number>;
    killPointsMissed: string[];
    restarts: number;
    /** Deaths after which the waiting standby took over (standby mode). */
    takeovers: number;
  };
  faults: FaultCounts & { total: number };
  duplicates: { immediate: number; replays: number; discordRedeliveries: number };
  /** Button presses on approval prompts, and how many were pressed again or replayed. */
  presses: { approve: number; deny: number; again: number; replays: number };
  pairings: PairingOutcome[];
  /** Approval requests by final state. */
  approvals: Record<string, number>;
  /** Lines the tools appended (each effect once). */
  toolEffects: number;
  /** Calls that answer inputs. */
  modelCalls: number;
  /** Calls that answer none (summarising compaction). */
  housekeepingModelCalls: number;
  repeatedModelCalls: number;
  resumedRuns: number;
  ambiguousRecords: number;
  /** Approval decisions sent as a new message: their prompt was resolved as delivered without a receipt. */
  outcomesAsMessages: number;
  operator: OperatorDecision[];
  settled: boolean;
  elapsedMs: number;
  /** Where the run's database and config are kept (only when there were violations). */
  keptDir: string | null;
  violations: Violation[];
}

/**
 * Discord has no replay after a fresh IDENTIFY, so the driver plays an at-least-once platform: a
 * message last delivered this close to a death (or while the gateway was down) is delivered again.
 */
const DISCORD_AT_RISK_MS = 10_000;
const TICK_MS = 200;
const MIN_LIFETIME_MS = 1_500;
const OPERATOR_TOKEN = "chaos-operator-token-0123456789";

interface Peers {
  telegram: TelegramEmulator;
  discord: DiscordEmulator;
  llm: FakeLlmServer;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const log = options.log ?? (() => {});
  if (options.standby && options.engine !== "postgres")
    throw new Error(
      "A chaos run with a standby needs engine postgres: gateways share a PostgreSQL database.",
    );
  const random = seededRandom(options.seed);
  const dir = tempDir("switchboard-chaos-");
  const peers: Peers = {
    telegram: startTelegramEmulator(),
    discord: startDiscordEmulator({ heartbeatIntervalMs: 1_000 }),
    llm: startFakeLlmServer(),
  };
  const cast = createCast(peers.telegram, peers.discord);
  const database = await openChaosDatabase(options.engine ?? "sqlite", dir.path);
  const configPath = join(dir.path, "switchboard.json");
  const notesFile = join(dir.path, "notes.txt");
  const mcp = startHttpMcpServer({ notesFile });
  writeFileSync(configPath, JSON.stringify(chaosConfig(mcp.url)));
  const env = (): Record<string, string> => ({
    ...database.env,
    SWITCHBOARD_CONFIG: configPath,
    SWITCHBOARD_WEB: "off",
    SWITCHBOARD_LOG_LEVEL: "debug",
    SWITCHBOARD_SHUTDOWN_GRACE_MS: "2000",
    SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
    SWITCHBOARD_MODEL: "openai-compatible:test-model",
    OPENAI_COMPATIBLE_BASE_URL: peers.llm.openaiBaseUrl,
    TELEGRAM_BOT_TOKEN: peers.telegram.token,
    TELEGRAM_API_ROOT: peers.telegram.url,
    TELEGRAM_ALLOWED_USERS: cast.telegramAllowed,
    SWITCHBOARD_TRANSCRIPTION_MODEL: "openai-compatible:whisper-1",
    DISCORD_BOT_TOKEN: peers.discord.token,
    DISCORD_API_URL: peers.discord.apiUrl,
    DISCORD_ALLOWED_USERS: cast.discordAllowed,
  });
  const supervisor = new GatewaySupervisor(env, dir.path, { standby: options.standby === true });
  const faults = new FaultInjector(peers.telegram, peers.discord, random, options.faultRate);
  const traffic = new Traffic(cast, peers, random, options, supervisor);
  let keptDir: string | null = null;
  let ticker: ReturnType<typeof setInterval> | undefined;
  try {
    await supervisor.start();
    log(`gateway up at ${supervisor.url}; ${database.engine} database ${database.location}`);
    const trafficStart = Date.now();
    ticker = setInterval(() => {
      faults.tick(Date.now());
      traffic.pressPrompts();
    }, TICK_MS);
    const chaos = runKills(options, random, supervisor, traffic, trafficStart, log);
    let trafficOver = false;
    const duringTraffic: OperatorDecision[] = [];
    const watching = watchAmbiguous(
      options.operatorEveryMs ?? 0,
      () => trafficOver,
      supervisor,
      peers,
      (decisions) => {
        for (const decision of decisions) log(`operator (during traffic): ${decision.action} ${decision.id}`);
        duringTraffic.push(...decisions);
      },
    );
    await traffic.run(trafficStart);
    await chaos;
    trafficOver = true;
    await watching;
    faults.quiesce();
    if (!supervisor.running) await restart(supervisor, traffic);
    log("traffic over; settling");

    const { settled, operator: afterTraffic } = await settle(
      options.settleTimeoutMs,
      database,
      peers,
      supervisor,
      traffic,
      log,
    );
    const snapshot: Snapshot = {
      sent: traffic.sent,
      ...(await readDatabase(database)),
      pairings: await pairingOutcomes(database, traffic, peers),
      media: mediaOutcomes(traffic, peers),
      botMessages: readChats(
        [
          ...new Set(
            [
              ...cast.places,
              cast.forgetter,
              cast.pairer,
              cast.stranger.telegramDm,
              cast.stranger.discordDm,
            ].map((p) => p.chat),
          ),
        ],
        peers.telegram,
        peers.discord,
      ),
      ...readModelLog(peers.llm.requests()),
      unconfirmedUpdates: peers.telegram.pendingUpdateIds(),
      toolEffects: existsSync(notesFile) ? readFileSync(notesFile, "utf8").split("\n").filter(Boolean) : [],
    };
    await supervisor.stop();
    const checked = checkInvariants(snapshot);
    const violations = [
      ...checked.violations,
      ...processViolations(supervisor, settled, options.settleTimeoutMs),
    ];
    if (violations.length > 0) {
      keptDir = dir.path;
      writeTimeline(join(dir.path, "timeline.txt"), supervisor, traffic);
      writeFileSync(
        join(dir.path, "model-requests.jsonl"),
        peers.llm
          .requests()
          .map((r) =>
            JSON.stringify({
              at: new Date(r.receivedAtMs).toISOString(),
              stream: r.stream,
              messages: r.messages,
            }),
          )
          .join("\n"),
      );
    }
    const fired = supervisor.stats.killPointsFired;
    return {
      seed: options.seed,
      engine: database.engine,
      standby: options.standby === true,
      messages: {
        answerable: traffic.sent.filter((s) => s.expect === "answer").length,
        ignorable: traffic.sent.filter((s) => s.expect === "ignored").length,
        schedules: traffic.sent.filter((s) => s.expect === "schedule").length,
        toolCalls: traffic.sent.filter((s) => s.id.startsWith("t")).length,
        approvals: traffic.sent.filter((s) => s.id.startsWith("p")).length,
        forgets: traffic.forgets.length,
        purged: traffic.sent.filter((s) => s.expect === "purged").length,
        photos: traffic.media.filter((m) => m.kind === "photo").length,
        voiceNotes: traffic.media.filter((m) => m.kind === "voice").length,
      },
      kills: {
        sigkills: supervisor.stats.sigkills,
        killPoints: { ...fired },
        killPointsMissed: KILL_POINTS.filter((p) => !fired[p]),
        restarts: supervisor.stats.starts - 1,
        takeovers: supervisor.stats.takeovers,
      },
      faults: { ...faults.counts, total: faults.total },
      duplicates: { ...traffic.duplicates },
      presses: { ...traffic.presses },
      pairings: snapshot.pairings,
      approvals: snapshot.approvals.reduce<Record<string, number>>(
        (byState, a) => Object.assign(byState, { [a.state]: (byState[a.state] ?? 0) + 1 }),
        {},
      ),
      toolEffects: snapshot.toolEffects.length,
      modelCalls: snapshot.modelRequests.length,
      housekeepingModelCalls: snapshot.housekeepingCalls,
      repeatedModelCalls: checked.repeatedModelCalls,
      resumedRuns: checked.resumedRuns,
      ambiguousRecords: checked.ambiguousRecords,
      outcomesAsMessages: checked.outcomesAsMessages,
      operator: [...duringTraffic, ...afterTraffic],
      settled,
      elapsedMs: Date.now() - started,
      keptDir,
      violations,
    };
  } finally {
    clearInterval(ticker);
    await supervisor.stop().catch(() => {});
    faults.quiesce();
    await peers.telegram.close();
    await peers.discord.close();
    await peers.llm.stop();
    await mcp.stop();
    await database.close({ keep: keptDir !== null });
    if (keptDir === null) dir.cleanup();
  }
}

/** An Ogg Opus header: enough for the type to be sniffed as audio/ogg. */
function oggOpus(bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  out.set(new TextEncoder().encode("OggS"), 0);
  out[4] = 0;
  out[5] = 2;
  out.set(new TextEncoder().encode("OpusHead"), 28);
  return out;
}

/** What each media message became: downloads of its file, and what the model was shown of it. */
function mediaOutcomes(traffic: Traffic, peers: Peers): MediaOutcome[] {
  const requests = peers.llm.requests();
  return traffic.media.map((m) => {
    const shown = requests.filter((r) => r.lastUserText.includes(m.id));
    return {
      id: m.id,
      kind: m.kind,
      downloadsCompleted: peers.telegram.files.downloads(m.fileId).completed,
      modelSawIt: shown.some((r) =>
        m.kind === "photo"
          ? r.messages.some(
              (msg) => Array.isArray(msg.content) && msg.content.some((p) => p.type === "image_url"),
            )
          : r.lastUserText.includes("[voice transcript of"),
      ),
    };
  });
}

/** What each pairing episode left: codes issued and shown, grants, and the approvals' answers. */
async function pairingOutcomes(
  database: ChaosDatabase,
  traffic: Traffic,
  peers: Peers,
): Promise<PairingOutcome[]> {
  const outcomes: PairingOutcome[] = [];
  for (const episode of traffic.pairings) {
    const count = async (sql: string) =>
      Number((await database.read<{ n: number | string }>(sql))[0]?.n ?? 0);
    outcomes.push({
      user: `telegram:${episode.userId}`,
      codesIssued: await count(
        `SELECT count(*) AS n FROM pairing_codes WHERE channel = 'telegram' AND user_id = '${episode.userId}'`,
      ),
      codesShown: codesIn(peers.telegram, episode.userId),
      grants: await count(
        `SELECT count(*) AS n FROM access_grants WHERE channel = 'telegram' AND user_id = '${episode.userId}'`,
      ),
      redemptions: episode.redemptions,
    });
  }
  return outcomes;
}

function codesIn(telegram: TelegramEmulator, chatId: number): string[] {
  return telegram
    .messages(chatId)
    .filter((m) => m.fromBot)
    .flatMap((m) => [...m.visibleText.matchAll(/pairing code is ([A-Z0-9]{8})/g)].map((x) => x[1]!));
}

/** A run that never settled and gateway processes that exited when nobody killed them. */
function processViolations(
  supervisor: GatewaySupervisor,
  settled: boolean,
  settleTimeoutMs: number,
): Violation[] {
  const violations: Violation[] = supervisor.stats.crashes.map((crash) => ({
    invariant: "settled",
    subject: "gateway process",
    detail: `exited ${crash.exitCode} unplanned; last log lines:\n${crash.logTail.join("\n")}`,
  }));
  if (!settled) {
    violations.push({
      invariant: "settled",
      subject: "gateway",
      detail: `not settled within ${settleTimeoutMs} ms`,
    });
  }
  return violations;
}

/** Starts, deaths, posts and redeliveries in time order, kept with a failed run for diagnosis. */
function writeTimeline(path: string, supervisor: GatewaySupervisor, traffic: Traffic): void {
  const events = [
    ...supervisor.timeline,
    ...traffic.sent.map((s) => ({ atMs: s.sentAtMs, event: `sent ${s.id} ${s.place} ${s.updateKey}` })),
    ...traffic.redeliveries.map((r) => ({
      atMs: r.atMs,
      event: `redelivered ${r.ids.join(",")} (deaths since ${new Date(r.sinceMs).toISOString()})`,
    })),
  ].sort((a, b) => a.atMs - b.atMs);
  writeFileSync(path, `${events.map((e) => `${new Date(e.atMs).toISOString()} ${e.event}`).join("\n")}\n`);
}

/**
 * Starts the gateway and redelivers the Discord messages the deaths since the last start may have
 * swallowed (the one that made this restart necessary, and any while starting).
 */
async function restart(supervisor: GatewaySupervisor, traffic: Traffic, arm?: KillPointArm): Promise<void> {
  const deathBefore = supervisor.lastDeathAtMs;
  await supervisor.start(arm);
  const firstDeath = Math.min(
    deathBefore ?? Number.POSITIVE_INFINITY,
    supervisor.lastDeathAtMs ?? Number.POSITIVE_INFINITY,
  );
  if (Number.isFinite(firstDeath)) await traffic.redeliverDiscordAtRisk(firstDeath);
}

/** `killPointRounds` armed restarts per kill point and `randomKills` plain SIGKILLs, spread over the traffic phase. */
async function runKills(
  options: ChaosOptions,
  random: Random,
  supervisor: GatewaySupervisor,
  traffic: Traffic,
  trafficStart: number,
  log: (line: string) => void,
): Promise<void> {
  const shuffled = random.shuffle([
    ...Array.from({ length: options.killPointRounds }, () =>
      KILL_POINTS.map((point) => ({ kind: "point" as const, point })),
    ).flat(),
    ...Array.from({ length: options.randomKills }, () => ({ kind: "random" as const })),
  ]);
  // The schedule.claimed episode goes first, so the occurrence the dead process had claimed (taken
  // over by the restarted gateway) settles during the traffic rather than while settling.
  const claimFirst = shuffled.findIndex((e) => e.kind === "point" && e.point === "schedule.claimed");
  const episodes = [...shuffled.splice(claimFirst, 1), ...shuffled];
  const spanMs = options.trafficMs * 0.7;
  for (const [index, episode] of episodes.entries()) {
    const atMs = trafficStart + ((index + random.next()) / episodes.length) * spanMs;
    // Each process lives a little, even when the plan is behind, so the work makes progress.
    await sleepUntil(
      Math.max(atMs, (supervisor.lastStartedAtMs ?? 0) + random.int(MIN_LIFETIME_MS, 2 * MIN_LIFETIME_MS)),
    );
    if (!supervisor.running) await restart(supervisor, traffic); // a crash: recorded, and we go on
    await supervisor.sigkill();
    await Bun.sleep(random.int(0, 1_500));
    if (episode.kind === "random") {
      log(`SIGKILL at +${Date.now() - trafficStart} ms`);
      await restart(supervisor, traffic);
      continue;
    }
    const arm = { point: episode.point, at: episode.point === "schedule.claimed" ? 1 : random.int(1, 2) };
    log(`armed ${arm.point} (pass ${arm.at}) at +${Date.now() - trafficStart} ms`);
    await restart(supervisor, traffic, arm);
    // Make sure the point is passed even when the traffic is thin: a message (or schedule) of its own per
    // pass. A send point gets one in every place, since an ambiguous reply may hold back a chat's sends.
    for (let pass = 0; pass < arm.at; pass += 1) {
      if (arm.point === "schedule.claimed") traffic.postSchedule();
      else if (arm.point.startsWith("outbox."))
        for (const place of traffic.places) traffic.postAnswerable(place);
      else traffic.postAnswerable();
    }
    if (supervisor.armed && !(await supervisor.waitForDeath(options.armedWindowMs))) {
      log(`${arm.point} did not fire within ${options.armedWindowMs} ms`);
      await supervisor.sigkill();
    }
    if (supervisor.running) continue; // it fired while starting; this process runs disarmed
    await Bun.sleep(random.int(0, 1_000));
    await restart(supervisor, traffic);
  }
}

/** A watching operator decides on a record only this long after it became ambiguous (hung sends land within ~4 s). */
const AMBIGUOUS_MIN_AGE_MS = 15_000;

/** Every `everyMs` until `over()`, resolves ambiguous records; a round that finds the gateway down is skipped. */
async function watchAmbiguous(
  everyMs: number,
  over: () => boolean,
  supervisor: GatewaySupervisor,
  peers: Peers,
  onDecisions: (decisions: OperatorDecision[]) => void,
): Promise<void> {
  if (everyMs <= 0) return;
  let nextAtMs = Date.now() + everyMs;
  while (!over()) {
    await Bun.sleep(Math.min(1_000, Math.max(0, nextAtMs - Date.now())));
    if (Date.now() < nextAtMs || over()) continue;
    nextAtMs = Date.now() + everyMs;
    if (!supervisor.running || !supervisor.url) continue;
    try {
      onDecisions(
        await resolveAmbiguous(
          { url: supervisor.url, token: OPERATOR_TOKEN },
          (chat) => readChats([chat], peers.telegram, peers.discord)[chat] ?? [],
          { minAgeMs: AMBIGUOUS_MIN_AGE_MS },
        ),
      );
    } catch {
      // Killed mid-round: the next round (or the settle phase) looks again.
    }
  }
}

/** Waits until nothing is left to do, resolving ambiguous records as an operator would. */
async function settle(
  timeoutMs: number,
  database: ChaosDatabase,
  peers: Peers,
  supervisor: GatewaySupervisor,
  traffic: Traffic,
  log: (line: string) => void,
): Promise<{ settled: boolean; operator: OperatorDecision[] }> {
  const deadline = Date.now() + timeoutMs;
  const operator: OperatorDecision[] = [];
  let quietPolls = 0;
  let lastSignature = "";
  while (Date.now() < deadline) {
    await Bun.sleep(500);
    if (!supervisor.running) await restart(supervisor, traffic);
    const work = await pendingWork(database);
    const signature = JSON.stringify([
      work,
      peers.llm.requests().length,
      peers.telegram.pendingUpdateIds().length,
    ]);
    if (work.ambiguous > 0 && supervisor.url) {
      const decided = await resolveAmbiguous(
        { url: supervisor.url, token: OPERATOR_TOKEN },
        (chat) => readChats([chat], peers.telegram, peers.discord)[chat] ?? [],
      );
      for (const decision of decided) log(`operator: ${decision.action} ${decision.id}`);
      operator.push(...decided);
      quietPolls = 0;
      continue;
    }
    const idle =
      work.active + work.undelivered + work.schedules + work.approvals === 0 &&
      peers.telegram.pendingUpdateIds().length === 0;
    quietPolls = idle && signature === lastSignature ? quietPolls + 1 : 0;
    lastSignature = signature;
    if (quietPolls >= 3) return { settled: true, operator };
  }
  return { settled: false, operator };
}

async function pendingWork(database: ChaosDatabase): Promise<{
  active: number;
  undelivered: number;
  ambiguous: number;
  schedules: number;
  approvals: number;
}> {
  const count = async (sql: string) => Number((await database.read<{ n: number | string }>(sql))[0]?.n ?? 0);
  return {
    active: await count(
      "SELECT count(*) AS n FROM runs WHERE state IN ('queued', 'running', 'interrupt_requested')",
    ),
    undelivered: await count(
      "SELECT count(*) AS n FROM outbox WHERE state IN ('pending', 'sending') AND NOT (kind = 'stream' AND NOT final)",
    ),
    ambiguous: await count("SELECT count(*) AS n FROM outbox WHERE state = 'ambiguous'"),
    schedules:
      (await count("SELECT count(*) AS n FROM schedules WHERE state = 'active'")) +
      (await count("SELECT count(*) AS n FROM schedule_occurrences WHERE state IN ('claimed', 'retrying')")),
    // The driver presses every prompt it sees: a pending request is still to be decided.
    approvals: await count("SELECT count(*) AS n FROM approvals WHERE state = 'pending'"),
  };
}

async function sleepUntil(atMs: number): Promise<void> {
  const waitMs = atMs - Date.now();
  if (waitMs > 0) await Bun.sleep(waitMs);
}

/** The people talking: what they post, when, and the duplicates the platforms add. */
class Traffic {
  /** `offeredAtMs`: when the platform last delivered it (posted or redelivered). */
  readonly sent: Array<SentInput & { sentAtMs: number; offeredAtMs: number }> = [];
  readonly duplicates = { immediate: 0, replays: 0, discordRedeliveries: 0 };
  readonly redeliveries: Array<{ atMs: number; sinceMs: number; ids: string[] }> = [];
  readonly presses = { approve: 0, deny: 0, again: 0, replays: 0 };
  /** Pairing episodes: the user, and what each approval of the code answered. */
  readonly pairings: Array<{ userId: number; redemptions: string[] }> = [];
  /** The `/forget confirm` updates posted, and when. */
  readonly forgets: Array<{ updateKey: string; atMs: number }> = [];
  /** Forget episodes run one after another (each waits for its "Done"). */
  private forgetting: Promise<void> = Promise.resolve();
  private pairing: Promise<void> = Promise.resolve();
  /** Approval calls whose prompt the driver has not pressed yet, and presses made (for replays). */
  private readonly awaitingPress = new Map<string, { place: Place; speaker: string }>();
  private readonly pressed: Array<{ place: Place; updateKey: string }> = [];
  private nextId = 1;

  constructor(
    private readonly cast: Cast,
    private readonly peers: Peers,
    private readonly random: Random,
    private readonly options: ChaosOptions,
    private readonly supervisor: GatewaySupervisor,
  ) {}

  get places(): readonly Place[] {
    return this.cast.places;
  }

  async run(startMs: number): Promise<void> {
    const scheduleSlots = new Set(
      Array.from({ length: Math.max(0, this.options.schedules - 1) }, () =>
        this.random.int(0, this.options.messages - 1),
      ),
    );
    const forgetSlots = new Set(
      Array.from({ length: this.options.forgets ?? 0 }, (_, k) =>
        Math.floor(((k + 0.5) / (this.options.forgets ?? 1)) * this.options.messages * 0.8),
      ),
    );
    const pairSlots = new Set(
      Array.from({ length: this.options.pairings ?? 0 }, (_, k) =>
        Math.floor(((k + 0.3) / (this.options.pairings ?? 1)) * this.options.messages * 0.6),
      ),
    );
    for (let i = 0; i < this.options.messages; i += 1) {
      const jitter = this.random.next() * 0.8;
      await sleepUntil(startMs + ((i + jitter) / this.options.messages) * this.options.trafficMs);
      if (scheduleSlots.has(i)) this.postSchedule();
      if (forgetSlots.has(i)) this.forgetting = this.forgetting.then(() => this.forgetEpisode());
      if (pairSlots.has(i)) this.pairing = this.pairing.then(() => this.pairingEpisode());
      const toolRate = this.options.toolRate ?? 0;
      const roll = this.random.next();
      const mediaRate = this.options.mediaRate ?? 0;
      if (roll < 0.1) this.postIgnorable();
      else if (roll > 1 - mediaRate) await this.postMedia();
      else if (roll < 0.1 + toolRate) this.postToolCall("t");
      else if (roll < 0.1 + 2 * toolRate) this.postToolCall("p");
      else this.postAnswerable();
      // Carol's DM is left out: Telegram redelivers only unconfirmed updates, and a purge takes
      // the receipts of its conversation along, so an old replay there would be a new message.
      const replayable = this.sent.filter((s) => s.place !== this.cast.forgetter.name);
      if (this.random.chance(this.options.replayRate) && replayable.length > 1) {
        const old = this.random.pick(replayable);
        this.cast.byName(old.place).replay(old.updateKey);
        this.duplicates.replays += 1;
      }
    }
    await this.forgetting;
    await this.pairing;
  }

  /**
   * Dave (unlisted) writes; once his code shows, his first update is delivered again (no second
   * code), the operator approves the code through the API (retried while the gateway is down), then
   * approves it again (a second redemption must change nothing); then he writes and is answered.
   * Only one episode: once approved, Dave is allowed for good.
   */
  private async pairingEpisode(): Promise<void> {
    if (this.pairings.length > 0) return;
    const place = this.cast.pairer;
    const userId = Number(place.chat.split(":")[1]);
    const episode = { userId, redemptions: [] as string[] };
    this.pairings.push(episode);
    const id = this.id("i");
    const first = place.post("dave", `${id} ${this.words(3)}`, false);
    this.record(id, place, first, "ignored");
    if (this.random.chance(this.options.duplicateRate)) {
      place.replay(first);
      this.duplicates.immediate += 1;
    }
    // A kill while the code's message is sent leaves it ambiguous; the watching operator sends it
    // again 15 to 25 s later, and another kill can land on that send too: give the code time.
    const deadline = Date.now() + 100_000;
    let code: string | undefined;
    while (!code && Date.now() < deadline) {
      code = codesIn(this.peers.telegram, userId)[0];
      if (!code) await Bun.sleep(200);
    }
    if (!code) return; // checkPairings reports the missing approval
    // The operator keeps trying while gateways die and start (each start takes seconds on a busy machine).
    const approveBy = Date.now() + 180_000;
    // Delivered again before the approval: it must issue no second code. (A redelivery after the
    // approval, which kills cause, must stay a duplicate: checked by the pairing invariant.)
    place.replay(first);
    this.duplicates.replays += 1;
    for (let redemption = 0; redemption < 2; ) {
      const url = this.supervisor.url;
      if (!url) {
        await Bun.sleep(200);
        continue;
      }
      try {
        episode.redemptions.push(await approvePairing({ url, token: OPERATOR_TOKEN }, code));
        redemption += 1;
      } catch {
        // The gateway died during the call: ask again (an approval that did commit then answers
        // "already approved").
        episode.redemptions.push("unknown");
        await Bun.sleep(500);
        if (Date.now() > approveBy) return;
      }
    }
    this.postAnswerable(place);
  }

  /**
   * Carol writes once or twice, then `/forget confirm` (duplicated at times) while an answer may
   * still be on its way; everything she wrote before it is to be purged. Once "Done" shows (or 30 s
   * passed) she writes again, which must be answered in the fresh conversation.
   */
  private async forgetEpisode(): Promise<void> {
    const place = this.cast.forgetter;
    const chatId = Number(place.chat.split(":")[1]);
    const done = () =>
      this.peers.telegram
        .messages(chatId)
        .filter((m) => m.fromBot && m.visibleText.includes("I deleted this conversation")).length;
    for (let k = this.random.int(1, 2); k > 0; k -= 1) {
      const id = this.id("f");
      this.script(id);
      this.record(
        id,
        place,
        place.post("carol", `${id} ${this.words(this.random.int(2, 5))}`, false),
        "purged",
      );
    }
    await Bun.sleep(this.random.int(0, 1_500));
    const doneBefore = done();
    const atMs = Date.now();
    for (const input of this.sent) {
      if (input.place !== place.name || input.forgetAtMs !== undefined) continue;
      input.expect = "purged";
      input.forgetAtMs = atMs;
    }
    const updateKey = place.post("carol", "/forget confirm", false);
    this.forgets.push({ updateKey, atMs });
    if (this.random.chance(this.options.duplicateRate)) {
      place.replay(updateKey);
      this.duplicates.immediate += 1;
    }
    const deadline = Date.now() + 30_000;
    while (done() === doneBefore && Date.now() < deadline) await Bun.sleep(200);
    if (done() > doneBefore) this.postAnswerable(place);
  }

  /** `/in 2s <id> …` in a DM; the scheduled answer is scripted like any other. */
  postSchedule(): void {
    const id = this.id("s");
    const place = this.cast.byName(this.random.pick(["tg-dm-alice", "dc-dm-bob"]));
    this.script(id);
    const updateKey = place.post(place.speakers[0]!, `/in 2s ${id} stretch your legs`, false);
    this.record(id, place, updateKey, "schedule");
  }

  /** Redelivers Discord messages posted shortly before the gateway died or while it was down. */
  async redeliverDiscordAtRisk(deathAtMs: number): Promise<void> {
    const connected = Date.now() + 10_000;
    while (this.peers.discord.connectedClients === 0 && Date.now() < connected) await Bun.sleep(50);
    const ids: string[] = [];
    for (const input of this.sent) {
      if (input.channel !== "discord" || input.offeredAtMs < deathAtMs - DISCORD_AT_RISK_MS) continue;
      this.cast.byName(input.place).replay(input.updateKey);
      // A process killed soon after this copy arrived may have lost it too: it stays at risk.
      input.offeredAtMs = Date.now();
      this.duplicates.discordRedeliveries += 1;
      ids.push(input.id);
    }
    this.redeliveries.push({ atMs: Date.now(), sinceMs: deathAtMs, ids });
  }

  /** An answerable message in `place` (default: a random one). */
  postAnswerable(place: Place = this.random.pick(this.cast.places)): void {
    const id = this.id("q");
    const speaker = this.random.pick(place.speakers);
    this.script(id);
    const updateKey = place.post(speaker, `${id} ${this.words(this.random.int(2, 6))}`, place.needsMention);
    this.record(id, place, updateKey, "answer");
    if (this.random.chance(this.options.duplicateRate)) {
      place.replay(updateKey);
      this.duplicates.immediate += 1;
    }
  }

  /**
   * A message in a Telegram place that the model answers with an MCP tool call: `t` runs
   * `ledger_slow_append` at once (long enough for a kill to land mid-call), `p` calls
   * `notes_append_note`, which waits for the asker's button press. The answer after the tool
   * result starts `a-<id>` and quotes the result.
   */
  postToolCall(kind: "t" | "p"): void {
    const place = this.random.pick(this.cast.places.filter((p) => p.press !== undefined));
    const id = this.id(kind);
    const speaker = this.random.pick(place.speakers);
    this.peers.llm.addRules([
      {
        match: { lastUserContains: id, lastRole: "user" },
        reply:
          kind === "t"
            ? {
                kind: "tool-call",
                toolName: "ledger_slow_append",
                input: { text: id, ms: this.random.int(100, 2_500) },
              }
            : { kind: "tool-call", toolName: "notes_append_note", input: { text: id } },
      },
      {
        match: { lastToolInputContains: `"${id}"`, lastRole: "tool" },
        reply: {
          kind: "text",
          text: `a-${id} done: {{lastToolResult}}`,
          chunks: this.random.int(2, 4),
          chunkDelayMs: this.random.int(40, 200),
        },
      },
    ]);
    const updateKey = place.post(speaker, `${id} ${this.words(this.random.int(2, 5))}`, place.needsMention);
    this.record(id, place, updateKey, "answer", speaker);
    if (kind === "p") this.awaitingPress.set(id, { place, speaker });
    if (this.random.chance(this.options.duplicateRate)) {
      place.replay(updateKey);
      this.duplicates.immediate += 1;
    }
  }

  /**
   * The askers press the approval prompts that have appeared: Approve (the first, then 3 in 4) or Deny, sometimes
   * twice, and the platform delivers some presses again, at once or later.
   */
  pressPrompts(): void {
    for (const [id, { place, speaker }] of this.awaitingPress) {
      const chatId = Number(place.chat.split(":")[1]);
      const prompt = this.peers.telegram
        .messages(chatId)
        .find(
          (m) =>
            m.fromBot && m.buttons && m.visibleText.includes("Approval needed") && m.visibleText.includes(id),
        );
      if (!prompt) continue;
      // The first press approves, so every run has a tool effect to check, whatever the dice say.
      const label = this.presses.approve === 0 || this.random.chance(0.75) ? "Approve" : "Deny";
      const updateKey = place.press?.(speaker, prompt.messageId, label);
      if (!updateKey) continue;
      this.awaitingPress.delete(id);
      this.presses[label === "Approve" ? "approve" : "deny"] += 1;
      this.pressed.push({ place, updateKey });
      if (this.random.chance(0.15) && place.press?.(speaker, prompt.messageId, label))
        this.presses.again += 1;
      if (this.random.chance(this.options.duplicateRate)) {
        place.replay(updateKey);
        this.presses.replays += 1;
      }
      if (this.random.chance(this.options.replayRate * 2) && this.pressed.length > 1) {
        const old = this.random.pick(this.pressed);
        old.place.replay(old.updateKey);
        this.presses.replays += 1;
      }
    }
  }

  /** Media messages posted: the id and the file the gateway must fetch. */
  readonly media: Array<{ id: string; kind: "photo" | "voice"; fileId: string }> = [];
  private photoBytes: Uint8Array | null = null;

  /**
   * A photo (a small JPEG) or a voice note (an Ogg Opus header) captioned `m…`: the model must
   * get the image part or the transcript, and answer once.
   */
  private async postMedia(): Promise<void> {
    const place = this.random.pick(this.cast.places.filter((p) => p.postMedia && !p.needsMention));
    const id = this.id("m");
    const kind = this.random.chance(0.5) ? "photo" : "voice";
    const speaker = this.random.pick(place.speakers);
    this.script(id);
    this.photoBytes ??= new Uint8Array(
      await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 20, g: 120, b: 200 } } })
        .jpeg()
        .toBuffer(),
    );
    const bytes = kind === "photo" ? this.photoBytes : oggOpus(2_000 + this.random.int(0, 500));
    const posted = place.postMedia!(speaker, `${id} ${this.words(2)}`, { kind, bytes, name: `file-${id}` });
    this.record(id, place, posted.updateKey, "answer", speaker);
    this.media.push({ id, kind, fileId: posted.fileId });
    if (this.random.chance(this.options.duplicateRate)) {
      place.replay(posted.updateKey);
      this.duplicates.immediate += 1;
    }
  }

  /** Group chatter without a mention, or a DM from someone no allowlist names. */
  private postIgnorable(): void {
    const id = this.id("i");
    const gated = this.cast.places.filter((p) => p.needsMention);
    const place = this.random.chance(0.5)
      ? this.random.pick(gated)
      : this.random.pick([this.cast.stranger.telegramDm, this.cast.stranger.discordDm]);
    const updateKey = place.post(this.random.pick(place.speakers), `${id} ${this.words(3)}`, false);
    this.record(id, place, updateKey, "ignored");
  }

  /** The model's answer to `id`: marked `a-<id>`, streamed in a few paced chunks. */
  private script(id: string): void {
    this.peers.llm.addRules([
      {
        // Only right after the user's message: a run continued after a tool result whose last
        // user message is this one answers that result (postToolCall's rules).
        match: { lastUserContains: id, lastRole: "user" },
        reply: {
          kind: "text",
          text: `a-${id} ${this.words(this.random.int(4, 14))}`,
          chunks: this.random.int(2, 6),
          chunkDelayMs: this.random.int(40, 300),
        },
      },
    ]);
  }

  private record(
    id: string,
    place: Place,
    updateKey: string,
    expect: SentInput["expect"],
    speaker?: string,
  ): void {
    this.sent.push({
      ...(speaker ? { speaker } : {}),
      id,
      place: place.name,
      channel: place.channel,
      updateKey,
      chat: place.chat,
      expect,
      ordered: place.policy === "queue",
      sentAtMs: Date.now(),
      offeredAtMs: Date.now(),
    });
  }

  private id(prefix: "q" | "s" | "i" | "t" | "p" | "f" | "m"): string {
    const id = `${prefix}${String(this.nextId).padStart(5, "0")}`;
    this.nextId += 1;
    return id;
  }

  private words(count: number): string {
    const vocabulary = [
      "alpha",
      "bravo",
      "charlie",
      "delta",
      "echo",
      "foxtrot",
      "golf",
      "hotel",
      "india",
      "juliet",
    ];
    return Array.from({ length: count }, () => this.random.pick(vocabulary)).join(" ");
  }
}
