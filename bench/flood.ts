/**
 * A flood at machine speed: `--chats` users (50) each write again the moment their previous reply
 * shows, for `--seconds` (30), against switchboard and then the minimal grammY + AI SDK bot, each
 * facing its own Telegram emulator with Telegram's flood limits and sub-millisecond accounting (1
 * message per second per chat, 30 per second per bot). Fifty chats ask for up to 50 replies a
 * second, so the bot's 30 per second is the bound: the rate is measured against it over the
 * middle of the flood (from 2 s after the start to the end of the writing), when every chat has a
 * message waiting. Prints, per bot: replies accepted, the rate and its ratio to 30/s, the 429s the
 * emulator answered, and replies lost (a 429 never retried; that user writes again 1 s later).
 *   npx bun bench/flood.ts [--chats 50] [--seconds 30]
 */
import { preciseNow } from "../test/emulators/telegram/index.ts";
import { startFakeLlmServer } from "../test/support/llm/fake-llm-server.ts";
import { tempDir } from "../test/support/runtime.ts";
import { type Bot, chatTurns, cpuMs, startBaseline, startProduct } from "./support/telegram-bots.ts";
import { argInt } from "./util.ts";

const chats = argInt("--chats", 50);
const seconds = argInt("--seconds", 30);
const BOT_LIMIT_PER_SECOND = 30;
const WARM_UP_MS = 2_000;
const FIRST_USER_ID = 920_001;
const userIds = Array.from({ length: chats }, (_, i) => FIRST_USER_ID + i);

interface FloodResult {
  replies: number;
  lost: number;
  perSecond: number;
  rejected: number;
  cpuPerReplyMs: number | null;
}

async function flood(bot: Bot): Promise<FloodResult> {
  // One reply in each chat first: connections, JIT, prepared statements.
  await Promise.all(userIds.map((id) => chatTurns(bot, id, { count: 1, pauseMs: 0 })));
  await Bun.sleep(1_100); // every chat's window open again
  const rejectedBefore = bot.emulator.rateLimitStats()?.rejected ?? 0;
  const cpuBefore = cpuMs(bot.pid);
  const startMs = preciseNow();
  const untilMs = startMs + seconds * 1000;
  const turns = (
    await Promise.all(
      userIds.map((id) => chatTurns(bot, id, { count: Number.MAX_SAFE_INTEGER, pauseMs: 0, untilMs })),
    )
  ).flat();
  const cpuAfter = cpuMs(bot.pid);
  const windowStart = startMs + WARM_UP_MS;
  const inWindow = turns.filter(
    (t) => t.repliedAtMs !== null && t.repliedAtMs >= windowStart && t.repliedAtMs <= untilMs,
  ).length;
  const replies = turns.filter((t) => t.repliedAtMs !== null).length;
  return {
    replies,
    lost: turns.length - replies,
    perSecond: inWindow / ((untilMs - windowStart) / 1000),
    rejected: (bot.emulator.rateLimitStats()?.rejected ?? 0) - rejectedBefore,
    cpuPerReplyMs:
      cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) / Math.max(1, replies),
  };
}

const llm = startFakeLlmServer();
const dir = tempDir("switchboard-bench-flood-");
const results: Array<[string, FloodResult]> = [];
try {
  console.error(`switchboard: ${chats} chats writing at machine speed for ${seconds} s`);
  const product = await startProduct({ dir: dir.path, llm, userIds });
  try {
    results.push(["switchboard", await flood(product)]);
  } catch (error) {
    console.error(`switchboard's last log lines:\n${product.logs?.slice(-40).join("\n")}`);
    throw error;
  } finally {
    await product.stop();
  }
  console.error("baseline (grammY + AI SDK, no database): the same flood");
  const baseline = await startBaseline(llm, userIds);
  try {
    results.push(["baseline", await flood(baseline)]);
  } finally {
    await baseline.stop();
  }
} finally {
  await llm.stop();
  dir.cleanup();
}

console.log(
  `\nflood: ${chats} chats at machine speed for ${seconds} s, Telegram emulator (1/s per chat, ${BOT_LIMIT_PER_SECOND}/s per bot)`,
);
console.log("                 replies   lost   rate (2 s on)   ratio   429s received   CPU per reply");
for (const [label, r] of results) {
  console.log(
    `  ${label.padEnd(13)} ${String(r.replies).padStart(8)} ${String(r.lost).padStart(6)}   ${r.perSecond.toFixed(2).padStart(7)} /s    ${(r.perSecond / BOT_LIMIT_PER_SECOND).toFixed(3)}   ${String(r.rejected).padStart(13)}   ${r.cpuPerReplyMs === null ? "–" : `${r.cpuPerReplyMs.toFixed(2)} ms`}`,
  );
}
console.log("  target: switchboard ≥ 0.95 of the limit with 0 429s received");
