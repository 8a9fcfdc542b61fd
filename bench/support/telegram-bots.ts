/**
 * The two bots the Telegram benches race: switchboard (`switchboard start` as its own process,
 * SQLite, DMs delivered as one terminal message) and the minimal grammY + AI SDK bot
 * (bench/support/baseline-bot.ts, no database), each facing its own Telegram emulator with
 * Telegram's flood limits and sub-millisecond stamps, and the fake LLM server, which answers at
 * once. Plus the users' side: a chat that writes, waits for the reply, pauses, writes again.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { e2eGatewayEnv } from "../../test/e2e/support/gateway-env.ts";
import { type GatewayProcess, startGatewayProcess } from "../../test/e2e/support/gateway-process.ts";
import {
  preciseNow,
  privateChat,
  startTelegramEmulator,
  type TelegramEmulator,
  user,
} from "../../test/emulators/telegram/index.ts";
import type { FakeLlmServer } from "../../test/support/llm/fake-llm-server.ts";
import { type BaselineVariant, startBaselineBot } from "./baseline-process.ts";

export interface Bot {
  emulator: TelegramEmulator;
  /** The bot's process, for its CPU time. */
  pid: number;
  /** Prometheus text, for the product only. */
  metrics?: () => Promise<string>;
  /** The product's log lines, shown when a workload fails. */
  logs?: string[];
  /** Whether a send refused with a 429 is sent again (switchboard) or lost (the baseline). */
  retriesRefusedSends: boolean;
  stop(): Promise<void>;
}

/** An emulator enforcing Telegram's flood limits with sub-millisecond stamps, one DM per user. */
function newEmulator(userIds: readonly number[]): TelegramEmulator {
  const emulator = startTelegramEmulator({ rateLimits: true, now: preciseNow });
  for (const id of userIds) emulator.addChat(privateChat(user(id, `Reader ${id}`)));
  return emulator;
}

/**
 * Switchboard; `cpuProfDir` runs it under bun's sampling profiler (written there at its exit),
 * `sqlTraceFile` counts its SQL statements (bench/support/sql-trace.ts, written there at its stop).
 */
export async function startProduct(options: {
  dir: string;
  llm: FakeLlmServer;
  userIds: readonly number[];
  cpuProfDir?: string;
  sqlTraceFile?: string;
  /** Its own database file in `dir` (default gateway.sqlite), for a second gateway in one run. */
  dbFile?: string;
  /** More environment, e.g. OTEL_EXPORTER_OTLP_ENDPOINT. */
  env?: Record<string, string>;
  /** Flags for bun itself, before the CLI, e.g. `--smol`. */
  bunFlags?: readonly string[];
}): Promise<Bot> {
  const emulator = newEmulator(options.userIds);
  const cli = join(import.meta.dir, "..", "..", "src", "cli", "main.ts");
  const profiler =
    options.cpuProfDir === undefined
      ? []
      : ["--cpu-prof", "--cpu-prof-md", "--cpu-prof-interval=100", `--cpu-prof-dir=${options.cpuProfDir}`];
  const tracer =
    options.sqlTraceFile === undefined ? [] : ["--preload", join(import.meta.dir, "sql-trace.ts")];
  const gateway: GatewayProcess = await startGatewayProcess(
    e2eGatewayEnv({
      dir: options.dir,
      llm: options.llm,
      ...(options.dbFile === undefined ? {} : { dbFile: options.dbFile }),
      // One message per reply, as the baseline sends (the default for DMs streams by edits); the
      // benches' users write up to 60 a minute, over the default per-user flood limit.
      surfaces: { "telegram:dm": { delivery: "terminal", messagesPerMinute: 1_000 } },
      extra: {
        TELEGRAM_BOT_TOKEN: emulator.token,
        TELEGRAM_API_ROOT: emulator.url,
        TELEGRAM_ALLOWED_USERS: options.userIds.join(","),
        ...(options.sqlTraceFile === undefined ? {} : { SWITCHBOARD_SQL_TRACE: options.sqlTraceFile }),
        ...options.env,
      },
    }),
    undefined,
    undefined,
    [process.execPath, ...(options.bunFlags ?? []), ...profiler, ...tracer, cli, "start"],
  );
  return {
    emulator,
    pid: gateway.pid,
    metrics: async () => (await fetch(`${gateway.url}/metrics`)).text(),
    logs: gateway.logs,
    retriesRefusedSends: true,
    async stop() {
      await gateway.kill("SIGTERM");
      await emulator.close();
    },
  };
}

export async function startBaseline(
  llm: FakeLlmServer,
  userIds: readonly number[],
  variant: BaselineVariant = {},
): Promise<Bot> {
  const emulator = newEmulator(userIds);
  const bot = await startBaselineBot(emulator, llm, variant);
  return {
    emulator,
    pid: bot.pid,
    retriesRefusedSends: false,
    async stop() {
      await bot.stop();
      await emulator.close();
    },
  };
}

/** One reply as its user saw it: sent and answered (ms, precise clock), or lost to a 429. */
export interface Turn {
  sentAtMs: number;
  /** When the emulator accepted the reply; null when it was refused (429) and never resent. */
  repliedAtMs: number | null;
}

/**
 * One user's conversation with `bot`: writes, waits for the reply, waits `pauseMs`, writes again,
 * `count` times or until `untilMs` (precise clock) passes. A reply refused with a 429 is waited for
 * again only from a bot that sends it again; one lost that way is written again after 1 s.
 */
export async function chatTurns(
  bot: Bot,
  userId: number,
  options: { count: number; pauseMs: number; untilMs?: number },
): Promise<Turn[]> {
  const emulator = bot.emulator;
  const turns: Turn[] = [];
  const from = user(userId, `Reader ${userId}`);
  for (let i = 0; i < options.count && preciseNow() < (options.untilMs ?? Infinity); i++) {
    const text = `ping ${userId} ${i}`;
    const seen = emulator.calls.length;
    const sentAtMs = preciseNow();
    emulator.incoming({ chat: privateChat(from), from, text });
    // The reply's sendMessage, answered (`accepted`: answered ok).
    const replyCall = (accepted: boolean) =>
      emulator.calls
        .slice(seen)
        .find(
          (call) =>
            call.method === "sendMessage" &&
            Number(call.params.chat_id) === userId &&
            String(call.params.text).includes(text) &&
            (accepted ? call.response?.ok === true : call.response !== undefined),
        );
    const reply = await emulator.waitFor(() => replyCall(false), 30_000, `the reply to "${text}"`);
    // The baseline does not retry a 429: that reply is lost. Switchboard retries, so a rejected
    // attempt is followed by an accepted one.
    const accepted =
      reply.response?.ok === true
        ? reply
        : bot.retriesRefusedSends
          ? await emulator
              .waitFor(() => replyCall(true), 5_000, `the accepted reply to "${text}"`)
              .catch(() => null)
          : null;
    turns.push({ sentAtMs, repliedAtMs: accepted ? accepted.atMs : null });
    // A user whose reply never came writes again a second later, not at machine speed.
    const pauseMs = accepted ? options.pauseMs : Math.max(options.pauseMs, 1000);
    if (pauseMs > 0) await Bun.sleep(pauseMs);
  }
  return turns;
}

/**
 * CPU time (user + system) the process has used, in ms, from /proc (Linux); null elsewhere.
 * Unlike latency it does not depend on how cold the machine is after each pause: it is the work.
 */
export function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command (which may hold spaces), from the 3rd on: utime is the 14th, stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return null;
  }
}
const CLOCK_TICKS_PER_SECOND = 100;
