/**
 * The chaos driver: a real gateway process between the Telegram, Discord and WhatsApp emulators, the
 * Matrix homeserver emulator and the fake LLM server (scripted streaming answers). It plays a fixed opening (opening.ts: every traffic kind,
 * then every kill point, once), then random traffic for the rest of the traffic budget: messages
 * from several people in DMs, groups, a forum topic and a thread, duplicates and replays of
 * updates, tool calls and approvals, media, `/in 2s` schedules, platform faults, and SIGKILLs at
 * random moments and at kill points. When the traffic is over it lets the gateway settle (playing
 * the operator for ambiguous records) and checks the invariants from the outside.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { type MatrixEmulator, startMatrixEmulator } from "../emulators/matrix/index.ts";
import { botUser, startTelegramEmulator, type TelegramEmulator } from "../emulators/telegram/index.ts";
import { startWhatsAppEmulator } from "../emulators/whatsapp/index.ts";
import { startHttpMcpServer } from "../fixtures/mcp/http-server.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { type Cast, chaosConfig, createCast, SUPPORT_BOT } from "./cast.ts";
import { type ChaosDatabase, type ChaosEngine, openChaosDatabase } from "./database.ts";
import { type FaultCounts, FaultInjector } from "./faults.ts";
import { checkInvariants, type Violation } from "./invariants.ts";
import { restart, runKills } from "./kills.ts";
import { readLeases } from "./leases.ts";
import { playOpening } from "./opening.ts";
import type { OperatorDecision } from "./operator.ts";
import { resolveAmbiguous } from "./operator.ts";
import type { ChaosOptions } from "./options.ts";
import { seededRandom } from "./random.ts";
import {
  isMatrixReply,
  type MediaOutcome,
  type PairingOutcome,
  readChats,
  readDatabase,
  readMatrix,
  readModelLog,
  readTelegramSends,
  readWhatsApp,
  type Snapshot,
} from "./snapshot.ts";
import { GatewaySupervisor, KILL_POINTS } from "./supervisor.ts";
import { codesIn, OPERATOR_TOKEN, type Peers, Traffic } from "./traffic.ts";
import { type ReplyTimes, type RssSample, readReplyTimes, rssMbOf } from "./vitals.ts";

export type { ChaosOptions };

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
    /** Tool calls of the idempotent tool (`r…`); `toolCalls` counts both kinds. */
    idempotentToolCalls: number;
    stops: number;
    exports: number;
    /** Answerable messages on WhatsApp (`answerable` counts them too). */
    whatsapp: number;
    /** Answerable messages on Matrix, DMs and the mention-gated room (`answerable` counts them too). */
    matrix: number;
  };
  /** Conversation API calls: messages to api conversations, proactive sends, and repeated requests. */
  api: { messages: number; sends: number; repeats: number };
  /** Messages answered with `spawn_agent` (waited for and not), and their children by final link state. */
  spawns: { waited: number; notWaited: number; children: Record<string, number> };
  kills: {
    sigkills: number;
    killPoints: Record<string, number>;
    killPointsMissed: string[];
    restarts: number;
    /** Deaths after which the waiting standby took over (standby mode). */
    takeovers: number;
  };
  faults: FaultCounts & { total: number };
  duplicates: {
    immediate: number;
    replays: number;
    discordRedeliveries: number;
    apiRepeats: number;
    editsAndDeletes: number;
  };
  /**
   * WhatsApp webhook POSTs (messages and statuses), and how many of them needed more than one
   * attempt (the gateway was down or died before answering 200): Meta's own redeliveries.
   */
  whatsappWebhooks: { posts: number; redelivered: number };
  /**
   * Matrix: sync events the homeserver brought again (duplicates and replays, one after a restart),
   * the send faults the homeserver answered with, sends killed right after the homeserver stored
   * their event, and transactions sent again under the same txnId (deduped: shown once).
   */
  matrix: {
    replayedEvents: number;
    faults: { rateLimited: number; serverErrors: number; resetsAfterEffect: number };
    killedMidSend: number;
    retriedSameTxn: number;
  };
  /**
   * Per Telegram account: the inputs its bot received, the outbox records sent through it and the
   * messages it sent (the `same-account` invariant holds each delivery to its input's account).
   */
  accounts: Array<{
    channel: string;
    name: string;
    account: string;
    inputs: number;
    records: number;
    botMessages: number;
  }>;
  /** Outbox records and bot messages `same-account` tied to the account of the input they name. */
  accountTied: { records: number; messages: number };
  /** Button presses on approval prompts, and how many were pressed again or replayed. */
  presses: { approve: number; deny: number; again: number; replays: number };
  pairings: PairingOutcome[];
  /** Approval requests by final state. */
  approvals: Record<string, number>;
  /** Lines the tools appended (each effect once). */
  toolEffects: number;
  /**
   * Idempotent tool calls the recovery ran again after a death cut the first attempt short (the
   * gateways' `tool.run_again` log lines, since a death before the call's first line leaves one effect).
   */
  toolReruns: number;
  /** Runs by final state (superseded and interrupted ones included). */
  runs: Record<string, number>;
  /** Calls that answer inputs. */
  modelCalls: number;
  /** Calls that answer none (summarising compaction). */
  housekeepingModelCalls: number;
  repeatedModelCalls: number;
  resumedRuns: number;
  ambiguousRecords: number;
  /**
   * Records settled by the platform's own status report (WhatsApp's status webhooks): sends a
   * death or a lost answer left `sending`, which ended delivered with no operator.
   */
  resolvedByPlatformStatus: number;
  /** WhatsApp sends left `sending` by a SIGKILL right after WhatsApp accepted them (the opening makes one). */
  whatsappKilledMidSend: number;
  /** Approval decisions sent as a new message: their prompt was resolved as delivered without a receipt. */
  outcomesAsMessages: number;
  operator: OperatorDecision[];
  settled: boolean;
  elapsedMs: number;
  /**
   * Where the time went: the opening's traffic kinds and kill chain, the random traffic, settling,
   * and the final stop (with the peers' start before them and clean-up after, they make up
   * `elapsedMs`); across all of it, the time spent waiting for gateways to start and standbys to
   * take over.
   */
  timing: {
    openingKindsMs: number;
    openingChainMs: number;
    randomMs: number;
    settleMs: number;
    stopMs: number;
    startingMs: number;
    takeoverMs: number;
  };
  /** Where the run's database and config are kept (only when there were violations). */
  keptDir: string | null;
  violations: Violation[];
  /**
   * Under the chaos: every message users posted (chats and the conversation API), reply times
   * (post to delivered), and the active gateway's RSS sampled every `RSS_EVERY_MS`.
   */
  vitals: { userMessages: number; reply: ReplyTimes; rss: RssSample[]; startedAtMs: number };
}

const TICK_MS = 200;
/**
 * Meta redelivers a webhook that was not answered 200 for days; here every 500 ms for five minutes,
 * longer than any run, so a webhook sent while the gateway was down reaches the next one.
 */
const WHATSAPP_REDELIVERY_DELAYS_MS = Array.from({ length: 600 }, () => 500);
/** How long a WhatsApp send of unknown outcome waits for its status before it is ambiguous. */
const WHATSAPP_STATUS_WAIT_MS = 8_000;
/** Random messages are never closer than this on average, when the opening left little of the budget. */
const MIN_MESSAGE_GAP_MS = 150;

/** How often the active gateway's RSS is sampled. */
const RSS_EVERY_MS = 30_000;

/**
 * The random phase's kills: the options' counts, or, with `killEveryMs`, about one death episode
 * that often over the 70% of the window runKills spreads them over; half of them armed restarts
 * (each kill point at least twice), the rest plain SIGKILLs.
 */
export function killCadence(
  options: Pick<ChaosOptions, "killEveryMs" | "randomKills" | "killPointRounds">,
  windowMs: number,
): { randomKills: number; killPointRounds: number } {
  if (!options.killEveryMs)
    return { randomKills: options.randomKills, killPointRounds: options.killPointRounds };
  const episodes = Math.floor((windowMs * 0.7) / options.killEveryMs);
  const killPointRounds = Math.max(2, Math.floor(episodes / 2 / KILL_POINTS.length));
  return { randomKills: Math.max(1, episodes - killPointRounds * KILL_POINTS.length), killPointRounds };
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
  const telegram = startTelegramEmulator();
  // The support account's bot, on the same emulator (its own updates, chats, calls and faults).
  const support = telegram.addBot({
    token: SUPPORT_BOT.token,
    bot: botUser(SUPPORT_BOT.id, SUPPORT_BOT.username, "Support"),
  });
  const peers: Peers = {
    telegram,
    telegramAccounts: { [SUPPORT_BOT.name]: support },
    discord: startDiscordEmulator({ heartbeatIntervalMs: 1_000 }),
    // The pair rate (one message per user every ~6 s) is left to the e2e tests: here it would only
    // stretch the run. Statuses come as Meta sends them: sent, then delivered, each in its own POST.
    whatsapp: startWhatsAppEmulator({
      limits: { pairIntervalMs: null },
      webhook: { redeliveryDelaysMs: WHATSAPP_REDELIVERY_DELAYS_MS, attemptTimeoutMs: 5_000 },
    }),
    matrix: startMatrixEmulator(),
    llm: startFakeLlmServer(),
  };
  const cast = createCast(peers.telegram, peers.discord, peers.whatsapp, peers.matrix, support);
  const telegramBots = [peers.telegram, ...Object.values(peers.telegramAccounts)];
  const database = await openChaosDatabase(options.engine ?? "sqlite", dir.path);
  const configPath = join(dir.path, "switchboard.json");
  const notesFile = join(dir.path, "notes.txt");
  const mcp = startHttpMcpServer({ notesFile });
  writeFileSync(
    configPath,
    JSON.stringify(
      chaosConfig(mcp.url, options.approvalTimeoutMs, {
        apiRoot: peers.telegram.url,
        allowedUsers: cast.supportAllowed,
      }),
    ),
  );
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
    [SUPPORT_BOT.tokenVariable]: SUPPORT_BOT.token,
    SWITCHBOARD_TRANSCRIPTION_MODEL: "openai-compatible:whisper-1",
    DISCORD_BOT_TOKEN: peers.discord.token,
    DISCORD_API_URL: peers.discord.apiUrl,
    DISCORD_ALLOWED_USERS: cast.discordAllowed,
    WHATSAPP_ACCESS_TOKEN: peers.whatsapp.accessToken,
    WHATSAPP_PHONE_NUMBER_ID: peers.whatsapp.business.phoneNumberId,
    WHATSAPP_APP_SECRET: peers.whatsapp.appSecret,
    WHATSAPP_VERIFY_TOKEN: "chaos-whatsapp-verify-token",
    WHATSAPP_API_ROOT: peers.whatsapp.url,
    WHATSAPP_ALLOWED_USERS: cast.whatsappAllowed,
    WHATSAPP_STATUS_WAIT_MS: String(WHATSAPP_STATUS_WAIT_MS),
    MATRIX_HOMESERVER_URL: peers.matrix.url,
    MATRIX_ACCESS_TOKEN: peers.matrix.bot.token,
    MATRIX_ALLOWED_USERS: cast.matrixAllowed,
  });
  const supervisor = new GatewaySupervisor(env, dir.path, { standby: options.standby === true });
  const faults = new FaultInjector(
    telegramBots,
    peers.discord,
    peers.whatsapp,
    peers.matrix,
    random,
    options.faultRate,
  );
  const traffic = new Traffic(cast, peers, random, options, supervisor);
  let keptDir: string | null = null;
  let ticker: ReturnType<typeof setInterval> | undefined;
  const rss: RssSample[] = [];
  const rssSampler = setInterval(() => {
    const mb = supervisor.pid === null ? null : rssMbOf(supervisor.pid);
    if (mb !== null) rss.push({ atMs: Date.now(), mb });
  }, RSS_EVERY_MS);
  try {
    await supervisor.start();
    log(`gateway up at ${supervisor.url}; ${database.engine} database ${database.location}`);
    const trafficStart = Date.now();
    // Each gateway listens on a port of its own: the app's callback URL follows the running one
    // (webhooks sent meanwhile fail and are redelivered there).
    let webhookUrl: string | null = null;
    const followGateway = () => {
      const url = supervisor.url && `${supervisor.url}/whatsapp/webhook`;
      if (!url || url === webhookUrl) return;
      webhookUrl = url;
      peers.whatsapp.setWebhookUrl(url);
    };
    followGateway();
    ticker = setInterval(() => {
      followGateway();
      faults.tick(Date.now());
      traffic.pressPrompts();
    }, TICK_MS);
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
    const opening = await playOpening({
      cast,
      peers,
      traffic,
      supervisor,
      faults,
      database,
      random,
      armedWindowMs: options.armedWindowMs,
      log,
    });
    log(
      `opening played in ${opening.kindsMs + opening.chainMs} ms (traffic kinds ${opening.kindsMs}, kill chain ${opening.chainMs})`,
    );
    // The random traffic fills the rest of the budget, or spreads over a minimum span when the
    // opening (slow on a busy machine) used it all.
    const randomStart = Date.now();
    const endMs = Math.max(trafficStart + options.trafficMs, randomStart + 10_000);
    const messages = options.rate
      ? Math.max(1, Math.round((options.rate * (endMs - randomStart)) / 1000))
      : options.messages;
    const window = {
      startMs: randomStart,
      endMs: Math.max(endMs, randomStart + messages * (options.rate ? 0 : MIN_MESSAGE_GAP_MS)),
    };
    const kills = killCadence(options, window.endMs - window.startMs);
    log(
      `random traffic: ${messages} messages over ${Math.round((window.endMs - window.startMs) / 1000)} s; ${kills.randomKills} random kills, each kill point armed ${kills.killPointRounds} times`,
    );
    const chaos = runKills({ ...options, ...kills }, random, supervisor, traffic, window, log);
    await traffic.run(window.startMs, window.endMs, messages);
    await chaos;
    trafficOver = true;
    await watching;
    faults.quiesce();
    if (!supervisor.running) await restart(supervisor, traffic);
    const settleStart = Date.now();
    log("traffic over; settling");

    const { settled, operator: afterTraffic } = await settle(
      options.settleTimeoutMs,
      database,
      peers,
      supervisor,
      traffic,
      log,
    );
    const chats = [...new Set(cast.everyPlace.map((p) => p.chat))];
    const snapshot: Snapshot = {
      sent: traffic.sent,
      leases: await readLeases(database),
      ...(await readDatabase(database)),
      pairings: await pairingOutcomes(database, traffic, peers),
      media: mediaOutcomes(traffic, peers),
      botMessages: chatsOf(peers, chats),
      ...readModelLog(peers.llm.requests()),
      unconfirmedUpdates: [
        ...peers.telegram.pendingUpdateIds(),
        ...Object.entries(peers.telegramAccounts).flatMap(([name, bot]) =>
          bot.pendingUpdateIds().map((id) => `${name}:${id}`),
        ),
      ],
      ...readWhatsApp(peers.whatsapp, chats),
      ...readMatrix(peers.matrix),
      spawns: traffic.spawns,
      api: traffic.api,
      toolEffects: existsSync(notesFile) ? readFileSync(notesFile, "utf8").split("\n").filter(Boolean) : [],
      botSends: readTelegramSends(telegramBots),
      accountChats: accountChatsOf(cast),
    };
    const reply = await readReplyTimes(database, traffic.sent);
    const stopStart = Date.now();
    await supervisor.stop();
    const stopMs = Date.now() - stopStart;
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
        toolCalls: traffic.sent.filter((s) => s.id.startsWith("t") || s.id.startsWith("r")).length,
        approvals: traffic.sent.filter((s) => s.id.startsWith("p")).length,
        forgets: traffic.forgets.length,
        purged: traffic.sent.filter((s) => s.expect === "purged").length,
        photos: traffic.media.filter((m) => m.kind === "photo").length,
        voiceNotes: traffic.media.filter((m) => m.kind === "voice").length,
        idempotentToolCalls: traffic.sent.filter((s) => s.id.startsWith("r")).length,
        stops: traffic.commands.filter((c) => c.name === "stop").length,
        exports: traffic.commands.filter((c) => c.name === "export").length,
        whatsapp: traffic.sent.filter((s) => s.channel === "whatsapp" && s.expect === "answer").length,
        matrix: traffic.sent.filter((s) => s.channel === "matrix" && s.expect === "answer").length,
      },
      api: {
        messages: traffic.api.filter((a) => a.kind === "message").length,
        sends: traffic.api.filter((a) => a.kind === "send").length,
        repeats: traffic.duplicates.apiRepeats,
      },
      spawns: {
        waited: traffic.spawns.filter((s) => s.wait).length,
        notWaited: traffic.spawns.filter((s) => !s.wait).length,
        children: snapshot.children.reduce<Record<string, number>>(
          (byState, c) => Object.assign(byState, { [c.state]: (byState[c.state] ?? 0) + 1 }),
          {},
        ),
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
      whatsappWebhooks: {
        posts: peers.whatsapp.deliveries().length,
        redelivered: peers.whatsapp.deliveries().filter((d) => d.attempts.length > 1).length,
      },
      matrix: {
        replayedEvents: replayedMatrixEvents(peers.matrix, chats),
        faults: matrixFaultsMet(peers.matrix),
        killedMidSend: opening.matrixKilledMidSend,
        retriedSameTxn: checked.matrixRetriedSameTxn,
      },
      presses: { ...traffic.presses },
      accounts: snapshot.accountChats.map((a) => ({
        channel: a.channel,
        name: a.name,
        account: a.account,
        inputs: traffic.sent.filter((s) => s.account === a.account).length,
        records: snapshot.outbox.filter((r) => r.channel === a.channel && r.account === a.account).length,
        botMessages: snapshot.botSends.filter((m) => m.channel === a.channel && m.account === a.account)
          .length,
      })),
      accountTied: checked.accountTied,
      pairings: snapshot.pairings,
      approvals: snapshot.approvals.reduce<Record<string, number>>(
        (byState, a) => Object.assign(byState, { [a.state]: (byState[a.state] ?? 0) + 1 }),
        {},
      ),
      toolEffects: snapshot.toolEffects.length,
      toolReruns: countLogEvents(dir.path, "tool.run_again"),
      runs: snapshot.runs.reduce<Record<string, number>>(
        (byState, r) => Object.assign(byState, { [r.state]: (byState[r.state] ?? 0) + 1 }),
        {},
      ),
      modelCalls: snapshot.modelRequests.length,
      housekeepingModelCalls: snapshot.housekeepingCalls,
      repeatedModelCalls: checked.repeatedModelCalls,
      resumedRuns: checked.resumedRuns,
      ambiguousRecords: checked.ambiguousRecords,
      resolvedByPlatformStatus: checked.resolvedByPlatformStatus,
      whatsappKilledMidSend: opening.whatsappKilledMidSend,
      outcomesAsMessages: checked.outcomesAsMessages,
      operator: [...duringTraffic, ...afterTraffic],
      settled,
      elapsedMs: Date.now() - started,
      timing: {
        openingKindsMs: opening.kindsMs,
        openingChainMs: opening.chainMs,
        randomMs: settleStart - randomStart,
        settleMs: stopStart - settleStart,
        stopMs,
        startingMs: supervisor.stats.startingMs,
        takeoverMs: supervisor.stats.takeoverMs,
      },
      keptDir,
      violations,
      vitals: { userMessages: traffic.sent.length + traffic.api.length, reply, rss, startedAtMs: started },
    };
  } finally {
    clearInterval(ticker);
    clearInterval(rssSampler);
    await supervisor.stop().catch(() => {});
    faults.quiesce();
    await peers.telegram.close();
    await peers.discord.close();
    await peers.whatsapp.close();
    await peers.matrix.close();
    await peers.llm.stop();
    await mcp.stop();
    await database.close({ keep: keptDir !== null });
    if (keptDir === null) dir.cleanup();
  }
}

/** The bots' visible messages in `chats` (a named Telegram account's chats are keyed `tg@<name>:…`). */
function chatsOf(peers: Peers, chats: readonly string[]) {
  return readChats(
    chats,
    peers.telegram,
    peers.discord,
    peers.whatsapp,
    peers.matrix,
    peers.telegramAccounts,
  );
}

function pendingTelegramUpdates(peers: Peers): number {
  return [peers.telegram, ...Object.values(peers.telegramAccounts)].reduce(
    (sum, bot: TelegramEmulator) => sum + bot.pendingUpdateIds().length,
    0,
  );
}

/** Where each Telegram bot is a member: the chats of the cast's places it talks in. */
function accountChatsOf(cast: Cast): Snapshot["accountChats"] {
  const byAccount = new Map<string, Set<string>>();
  for (const place of cast.everyPlace) {
    if (place.channel !== "telegram" || place.account === undefined) continue;
    const chats = byAccount.get(place.account) ?? new Set<string>();
    chats.add(place.chat.split(":")[1]!);
    byAccount.set(place.account, chats);
  }
  return [...byAccount].map(([account, chats]) => ({
    channel: "telegram",
    name: account === String(SUPPORT_BOT.id) ? SUPPORT_BOT.name : "default",
    account,
    chatIds: [...chats],
  }));
}

/** What each media message became: downloads of its file, and what the model was shown of it. */
function mediaOutcomes(traffic: Traffic, peers: Peers): MediaOutcome[] {
  const requests = peers.llm.requests();
  return traffic.media.map((m) => {
    const shown = requests.filter((r) => r.lastUserText.includes(m.id));
    return {
      id: m.id,
      kind: m.kind,
      downloadsCompleted: m.bot.files.downloads(m.fileId).completed,
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
          (chat) => chatsOf(peers, [chat])[chat] ?? [],
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
    const webhooks = peers.whatsapp.deliveries();
    const unanswered = webhooks.filter((d) => d.state !== "delivered").length;
    const signature = JSON.stringify([
      work,
      peers.llm.requests().length,
      pendingTelegramUpdates(peers),
      webhooks.length,
      unanswered,
    ]);
    if (work.ambiguous > 0 && supervisor.url) {
      const decided = await resolveAmbiguous(
        { url: supervisor.url, token: OPERATOR_TOKEN },
        (chat) => chatsOf(peers, [chat])[chat] ?? [],
      );
      for (const decision of decided) log(`operator: ${decision.action} ${decision.id}`);
      operator.push(...decided);
      quietPolls = 0;
      continue;
    }
    const idle =
      work.active + work.undelivered + work.schedules + work.approvals === 0 &&
      pendingTelegramUpdates(peers) === 0 &&
      unanswered === 0;
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

/** How many lines of the kept gateway logs (gateway-<n>.log in `dir`) carry `event`. */
function countLogEvents(dir: string, event: string): number {
  const marker = `"event":"${event}"`;
  return readdirSync(dir)
    .filter((name) => /^gateway-\d+\.log$/.test(name))
    .reduce(
      (sum, name) =>
        sum +
        readFileSync(join(dir, name), "utf8")
          .split("\n")
          .filter((l) => l.includes(marker)).length,
      0,
    );
}

/** Events the homeserver put into the sync stream more than once (duplicates and replays). */
function replayedMatrixEvents(matrix: MatrixEmulator, chats: readonly string[]): number {
  return chats
    .filter((chat) => chat.startsWith("mx:"))
    .reduce((sum, chat) => {
      const roomId = chat.slice(3);
      return sum + (matrix.world.room(roomId)?.events.length ?? 0) - matrix.events(roomId).length;
    }, 0);
}

/** The send faults the homeserver answered with (armed faults not yet met are not counted). */
function matrixFaultsMet(matrix: MatrixEmulator): ChaosReport["matrix"]["faults"] {
  const met = matrix
    .callsOf("send")
    .filter(isMatrixReply)
    .map((c) => c.fault);
  return {
    rateLimited: met.filter((f) => f === "rate_limited").length,
    serverErrors: met.filter((f) => f === "server_error").length,
    resetsAfterEffect: met.filter((f) => f === "reset_after_effect").length,
  };
}
