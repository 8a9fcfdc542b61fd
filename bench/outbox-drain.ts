/**
 * Outbox drain: `--count` queued replies spread over `--chats` private chats, delivered by the real
 * delivery worker through the real Telegram adapter to the Telegram emulator with Telegram's flood
 * limits on (1 message/s per chat, 30/s per bot, sliding windows; 429 with retry_after beyond).
 *   npx bun bench/outbox-drain.ts [--count 10000] [--chats 100]
 * Prints the achieved rate as a fraction of the allowed one (target ≥ 0.95), duplicates (must be
 * 0) and the 429s received after the first (target 0). Exits 1 when a reply is lost or duplicated.
 */

import { loadavg } from "node:os";
import { join } from "node:path";
import { encodeTarget, TelegramAdapter } from "../channels/telegram/index.ts";
import type { ChannelAdapter, ChannelName } from "../channels/types.ts";
import type { OutboxInsert } from "../outbox/types.ts";
import { createDeliveryWorker } from "../outbox/worker.ts";
import { openSqliteStores } from "../src/store/sqlite/index.ts";
import { systemClock } from "../src/util/clock.ts";
import { createLogger } from "../src/util/log.ts";
import {
  privateChat,
  startTelegramEmulator,
  TELEGRAM_RATE_LIMITS,
  user,
} from "../test/emulators/telegram/index.ts";
import { tempDir } from "../test/support/runtime.ts";
import { argInt } from "./util.ts";

const count = argInt("--count", 10_000);
const chats = argInt("--chats", 100);
const FIRST_CHAT_ID = 700_001;
/** Long enough for the slowest realistic drain (10,000 at 30/s is ~334 s) plus a generous margin. */
const deadlineMs = Math.ceil((count / Math.min(30, chats)) * 1000 * 2) + 30_000;

const dir = tempDir("switchboard-bench-outbox-");
const emulator = startTelegramEmulator({ rateLimits: true });
const chatIds = Array.from({ length: chats }, (_, i) => FIRST_CHAT_ID + i);
for (const id of chatIds) emulator.addChat(privateChat(user(id, `Reader ${id}`)));

const stores = openSqliteStores(join(dir.path, "outbox.sqlite"));
const adapter = new TelegramAdapter({ mode: "polling", token: emulator.token, apiRoot: emulator.url });

// Round-robin over the chats, so every chat holds count/chats replies in causal order.
const inserts: OutboxInsert[] = Array.from({ length: count }, (_, i) => {
  const chatId = chatIds[i % chats]!;
  return {
    key: `bench_${i}:0`,
    runId: `run_bench_${i}`,
    conversationId: `conv_bench_${chatId}`,
    channel: "telegram",
    account: adapter.account,
    target: encodeTarget({ chatId }),
    kind: "message",
    markdown: `reply ${i} to chat ${chatId}`,
  };
});
const insertStartMs = performance.now();
await stores.outbox.insert(inserts, systemClock.now());
const insertMs = performance.now() - insertStartMs;

let warnings = 0;
const worker = createDeliveryWorker({
  repo: stores.outbox,
  adapters: new Map<ChannelName, ChannelAdapter>([["telegram", adapter]]),
  clock: systemClock,
  logger: createLogger({
    write: (line) => {
      if ((JSON.parse(line) as { level: string }).level === "warn") warnings += 1;
    },
  }),
});

const startMs = systemClock.now();
const cpuBefore = process.cpuUsage();
await worker.start();
const delivered = () => emulator.rateLimitStats()?.accepted ?? 0;
let lastReportMs = startMs;
while (delivered() < count && systemClock.now() - startMs < deadlineMs) {
  await Bun.sleep(100);
  if (systemClock.now() - lastReportMs >= 10_000) {
    lastReportMs = systemClock.now();
    const seconds = (lastReportMs - startMs) / 1000;
    console.error(`  … ${delivered()}/${count} after ${seconds.toFixed(0)} s`);
  }
}
// Anything still in flight or retried after the count was reached would be a duplicate: wait a beat.
await Bun.sleep(1_500);
await worker.stop();

const cpu = process.cpuUsage(cpuBefore);
const stats = emulator.rateLimitStats()!;
const perRecord = new Map<string, number>();
for (const id of chatIds) {
  for (const message of emulator.messages(id)) {
    if (message.fromBot) perRecord.set(message.text, (perRecord.get(message.text) ?? 0) + 1);
  }
}
const duplicates = [...perRecord.values()].reduce((sum, n) => sum + Math.max(0, n - 1), 0);
const missing = inserts.filter((insert) => !perRecord.has(insert.markdown)).length;
const firstMs = Math.min(...Object.values(stats.perChat).map((chat) => chat.firstAcceptedAtMs ?? startMs));
const lastMs = Math.max(...Object.values(stats.perChat).map((chat) => chat.lastAcceptedAtMs ?? startMs));
const elapsedSeconds = (lastMs - startMs) / 1000;
const allowedPerSecond = Math.min(
  TELEGRAM_RATE_LIMITS.global.limit / (TELEGRAM_RATE_LIMITS.global.windowMs / 1000),
  chats * (TELEGRAM_RATE_LIMITS.perChat.limit / (TELEGRAM_RATE_LIMITS.perChat.windowMs / 1000)),
);
const achievedPerSecond = stats.accepted / elapsedSeconds;
// The sustained rate leaves out the start-up (first message) so it compares pacing only.
const sustainedPerSecond = (stats.accepted - 1) / ((lastMs - firstMs) / 1000);
const ratio = achievedPerSecond / allowedPerSecond;
const ordered = chatIds.every((id) => {
  const numbers = emulator
    .messages(id)
    .filter((message) => message.fromBot)
    .map((message) => Number(/^reply (\d+)/.exec(message.text)?.[1]));
  return numbers.every((n, i) => i === 0 || n > numbers[i - 1]!);
});

console.log(`\noutbox drain (${count} replies over ${chats} chats, Telegram emulator with flood limits)`);
console.log(`  inserted in                          ${insertMs.toFixed(0).padStart(9)} ms`);
console.log(`  drained in                           ${elapsedSeconds.toFixed(1).padStart(9)} s`);
console.log(`  allowed rate                         ${allowedPerSecond.toFixed(1).padStart(9)} /s`);
console.log(
  `  achieved rate                        ${achievedPerSecond.toFixed(2).padStart(9)} /s   ratio ${ratio.toFixed(3)} (target ≥ 0.95)`,
);
console.log(`  sustained rate (first → last)        ${sustainedPerSecond.toFixed(2).padStart(9)} /s`);
console.log(`  delivered / missing                  ${String(stats.accepted).padStart(9)} / ${missing}`);
console.log(`  duplicates                           ${String(duplicates).padStart(9)}   (must be 0)`);
console.log(
  `  429s received (after the first)      ${String(stats.rejected).padStart(9)} (${Math.max(0, stats.rejected - 1)}, target 0) by scope ${JSON.stringify(stats.rejectedByScope)}`,
);
console.log(`  per-chat order kept                  ${String(ordered).padStart(9)}`);
console.log(`  worker warnings                      ${String(warnings).padStart(9)}`);
console.log(
  `  process CPU (worker + emulator)      ${((cpu.user + cpu.system) / 1e6).toFixed(1).padStart(9)} s   load average ${loadavg()
    .map((n) => n.toFixed(1))
    .join(" ")}`,
);

if (missing > 0) {
  const stuck = (
    await Promise.all(
      (["pending", "sending", "ambiguous", "failed"] as const).map((state) => stores.outbox.list({ state })),
    )
  ).flat();
  for (const record of stuck) {
    console.log(
      `  stuck: ${record.key} ${record.state} attempts ${record.attempts} ${record.lastError ?? ""} next ${record.nextAttemptAtMs - systemClock.now()} ms`,
    );
  }
}
await emulator.close();
stores.close();
dir.cleanup();
if (duplicates > 0 || missing > 0 || !ordered) process.exit(1);
