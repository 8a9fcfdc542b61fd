/**
 * WhatsApp's reply latency against Telegram's, in one run: one switchboard process (SQLite) with
 * both channels, facing the Telegram emulator (long polling, Telegram's flood limits on) and the
 * WhatsApp Cloud API emulator (signed webhooks to the gateway's /whatsapp/webhook, status webhooks
 * after every send), and the fake LLM server, which answers at once. Users are paced: each chat
 * sends its next message `--pause-ms` after its previous reply. Both emulators stamp with the same
 * sub-millisecond clock. Latency is from the emulator handing over the user's message (queueing
 * the Telegram update; starting the webhook POST) to the emulator receiving the reply's send.
 * The workloads alternate between the channels (Telegram one chat, WhatsApp one chat, Telegram
 * `--chats` chats, WhatsApp `--chats` chats), so both meet the same process and database.
 *   npx bun bench/whatsapp-latency.ts [--messages 60] [--chats 20] [--per-chat 10] [--pause-ms 1000] [--warm-up 10]
 * WhatsApp's pair rate (about one message every 6 s to one user) is off in the emulator: a user
 * answered within a second and writing again would otherwise wait on it, which is Meta's limit,
 * not switchboard's latency. Its read marks with the typing indicator and its status webhooks stay
 * on, as they are on every real reply.
 * Prints p50/p90/p99 per channel and workload, the difference, and switchboard's per-stage medians
 * from its /metrics histograms for each.
 */
import { REPLY_STAGES } from "../src/gateway/metrics.ts";
import { e2eGatewayEnv } from "../test/e2e/support/gateway-env.ts";
import { startGatewayProcess } from "../test/e2e/support/gateway-process.ts";
import { preciseNow, privateChat, startTelegramEmulator, user } from "../test/emulators/telegram/index.ts";
import { startWhatsAppEmulator, type WhatsAppEmulator } from "../test/emulators/whatsapp/index.ts";
import { startFakeLlmServer } from "../test/support/llm/fake-llm-server.ts";
import { tempDir } from "../test/support/runtime.ts";
import { quantile, stageMedian } from "./support/latency-stats.ts";
import { type Bot, chatTurns, type Turn } from "./support/telegram-bots.ts";
import { argInt } from "./util.ts";

const messages = argInt("--messages", 60);
const chats = argInt("--chats", 20);
const perChat = argInt("--per-chat", 10);
const pauseMs = argInt("--pause-ms", 1000);
const warmUp = Math.max(1, argInt("--warm-up", 10));
const telegramUsers = Array.from({ length: chats }, (_, i) => 920_001 + i);
const whatsappUsers = Array.from({ length: chats }, (_, i) => String(4_915_100_000_001 + i));

const dir = tempDir("switchboard-bench-whatsapp-latency-");
const llm = startFakeLlmServer();
const telegram = startTelegramEmulator({ rateLimits: true, now: preciseNow });
for (const id of telegramUsers) telegram.addChat(privateChat(user(id, `Reader ${id}`)));
const whatsapp = startWhatsAppEmulator({ now: preciseNow, limits: { pairIntervalMs: null } });

const gateway = await startGatewayProcess(
  e2eGatewayEnv({
    dir: dir.path,
    llm,
    // One message per reply on both (WhatsApp has no edits; Telegram's DMs would stream by edits),
    // and the users' pace (up to 60 a minute) above the default per-user flood limit.
    surfaces: {
      "telegram:dm": { delivery: "terminal", messagesPerMinute: 1_000 },
      "whatsapp:dm": { delivery: "terminal", messagesPerMinute: 1_000 },
    },
    extra: {
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.url,
      TELEGRAM_ALLOWED_USERS: telegramUsers.join(","),
      WHATSAPP_ACCESS_TOKEN: whatsapp.accessToken,
      WHATSAPP_PHONE_NUMBER_ID: whatsapp.business.phoneNumberId,
      WHATSAPP_APP_SECRET: whatsapp.appSecret,
      WHATSAPP_VERIFY_TOKEN: "bench-whatsapp-verify-token",
      WHATSAPP_API_ROOT: whatsapp.url,
      WHATSAPP_ALLOWED_USERS: whatsappUsers.join(","),
    },
  }),
);
whatsapp.setWebhookUrl(`${gateway.url}/whatsapp/webhook`);
const metrics = async () => (await fetch(`${gateway.url}/metrics`)).text();

/** Telegram through the shared chat loop (bench/support/telegram-bots.ts). */
const telegramBot: Bot = {
  emulator: telegram,
  pid: gateway.pid,
  retriesRefusedSends: true,
  async stop() {},
};

/**
 * One WhatsApp user's conversation: writes, waits for the reply's send to reach the Cloud API,
 * waits `pauseMs`, writes again, `count` times.
 */
async function whatsappTurns(wa: WhatsAppEmulator, waId: string, count: number): Promise<Turn[]> {
  const turns: Turn[] = [];
  for (let i = 0; i < count; i++) {
    const text = `ping ${waId} ${i}`;
    const seen = wa.calls.length;
    const sentAtMs = preciseNow();
    wa.incoming({ from: waId, name: `Reader ${waId}`, text });
    const reply = await wa.waitFor(
      () =>
        wa.calls.slice(seen).find((call) => {
          const body = call.body as { type?: string; to?: string; text?: { body?: string } } | null;
          return (
            call.route === "messages" &&
            body?.type === "text" &&
            body.to === waId &&
            (body.text?.body ?? "").includes(text) &&
            call.response?.status === 200
          );
        }),
      30_000,
      `the reply to "${text}"`,
    );
    turns.push({ sentAtMs, repliedAtMs: reply.atMs });
    if (pauseMs > 0) await Bun.sleep(pauseMs);
  }
  return turns;
}

type Channel = "telegram" | "whatsapp";

async function workload(channel: Channel, chatCount: number, count: number): Promise<(number | null)[]> {
  const all = await Promise.all(
    channel === "telegram"
      ? telegramUsers.slice(0, chatCount).map((id) => chatTurns(telegramBot, id, { count, pauseMs }))
      : whatsappUsers.slice(0, chatCount).map((id) => whatsappTurns(whatsapp, id, count)),
  );
  return all.flat().map((turn) => (turn.repliedAtMs === null ? null : turn.repliedAtMs - turn.sentAtMs));
}

interface Measured {
  latencies: (number | null)[];
  stages: (number | null)[];
}

async function measure(channel: Channel, chatCount: number, count: number): Promise<Measured> {
  const before = await metrics();
  const latencies = await workload(channel, chatCount, count);
  const after = await metrics();
  return { latencies, stages: REPLY_STAGES.map((stage) => stageMedian(before, after, stage)) };
}

console.error(
  `switchboard with Telegram and WhatsApp: a warm-up of ${warmUp} in each of ${chats} chats per channel, then ${messages} paced messages in one chat and ${perChat} in each of ${chats} chats, alternating channels`,
);
const results: Array<{ label: string; n: number; telegram: Measured; whatsapp: Measured }> = [];
try {
  await Promise.all([workload("telegram", chats, warmUp), workload("whatsapp", chats, warmUp)]);
  for (const [label, chatCount, count] of [
    ["one chat", 1, messages],
    [`${chats} chats`, chats, perChat],
  ] as const) {
    const telegramRun = await measure("telegram", chatCount, count);
    const whatsappRun = await measure("whatsapp", chatCount, count);
    results.push({ label, n: chatCount * count, telegram: telegramRun, whatsapp: whatsappRun });
  }
} catch (error) {
  console.error(`switchboard's last log lines:\n${gateway.logs.slice(-40).join("\n")}`);
  throw error;
} finally {
  await gateway.kill("SIGTERM");
  await telegram.close();
  await whatsapp.close();
  await llm.stop();
  dir.cleanup();
}

const fmt = (ms: number | null) =>
  ms === null || Number.isNaN(ms) ? "    –" : `${ms.toFixed(1).padStart(5)} ms`;
const triple = (values: (number | null)[]) =>
  [0.5, 0.9, 0.99].map((q) => fmt(quantile(values, q))).join("  ");

console.log(
  `\nreply latency, Telegram against WhatsApp in one switchboard process, paced (${pauseMs} ms after each reply), instant model`,
);
for (const { label, n, telegram: t, whatsapp: w } of results) {
  console.log(`\n  ${label} (${n} replies each)            p50       p90       p99`);
  console.log(`    telegram                     ${triple(t.latencies)}`);
  console.log(`    whatsapp                     ${triple(w.latencies)}`);
  const diff = (q: number) => quantile(w.latencies, q) - quantile(t.latencies, q);
  console.log(`    whatsapp − telegram          ${fmt(diff(0.5))}  ${fmt(diff(0.9))}  ${fmt(diff(0.99))}`);
  console.log("    stage medians (telegram / whatsapp):");
  for (const [i, stage] of REPLY_STAGES.entries())
    console.log(`      ${stage.padEnd(12)} ${fmt(t.stages[i] ?? null)} / ${fmt(w.stages[i] ?? null)}`);
}
