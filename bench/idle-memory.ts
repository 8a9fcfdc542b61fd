/**
 * Memory of an idle Telegram-only gateway against the minimal grammY + AI SDK bot
 * (bench/support/baseline-bot.ts), each its own process facing the Telegram emulator, measured
 * `--settle-ms` after start: resident set (from /proc, Linux) and, for the gateway, its JS heap
 * from /metrics. Platform SDKs load only for configured channels, so no discord.js or Bolt here.
 *   npx bun bench/idle-memory.ts [--settle-ms 4000]
 */
import { readFileSync } from "node:fs";
import { e2eGatewayEnv } from "../test/e2e/support/gateway-env.ts";
import { startGatewayProcess } from "../test/e2e/support/gateway-process.ts";
import { privateChat, startTelegramEmulator, user } from "../test/emulators/telegram/index.ts";
import { startFakeLlmServer } from "../test/support/llm/fake-llm-server.ts";
import { tempDir } from "../test/support/runtime.ts";
import { startBaselineBot } from "./support/baseline-process.ts";
import { argInt } from "./util.ts";

const settleMs = argInt("--settle-ms", 4000);
const MB = 1024 * 1024;

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(status.match(/^VmRSS:\s+(\d+) kB/m)?.[1]) / 1024;
}

const llm = startFakeLlmServer();
const dir = tempDir("switchboard-bench-memory-");

const emulator = startTelegramEmulator({});
emulator.addChat(privateChat(user(1, "Reader")));
const gateway = await startGatewayProcess(
  e2eGatewayEnv({
    dir: dir.path,
    llm,
    extra: {
      TELEGRAM_BOT_TOKEN: emulator.token,
      TELEGRAM_API_ROOT: emulator.url,
      TELEGRAM_ALLOWED_USERS: "1",
    },
  }),
);
await Bun.sleep(settleMs);
const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
const heapMb = Number(metrics.match(/^switchboard_js_heap_used_bytes (\S+)/m)?.[1]) / MB;
const gatewayRss = rssMb(gateway.pid);
await gateway.kill("SIGTERM");
await emulator.close();

const baselineEmulator = startTelegramEmulator({});
const baseline = await startBaselineBot(baselineEmulator, llm);
await Bun.sleep(settleMs);
const baselineRss = rssMb(baseline.pid);
await baseline.stop();
await baselineEmulator.close();
await llm.stop();
dir.cleanup();

console.log(`\nidle memory, ${settleMs} ms after start, Telegram only`);
console.log(`  switchboard   RSS ${gatewayRss.toFixed(0).padStart(4)} MB   JS heap ${heapMb.toFixed(1)} MB`);
console.log(
  `  baseline      RSS ${baselineRss.toFixed(0).padStart(4)} MB   ratio ${(gatewayRss / baselineRss).toFixed(2)}`,
);
