import { join } from "node:path";
import type { TelegramEmulator } from "../../test/emulators/telegram/index.ts";
import type { FakeLlmServer } from "../../test/support/llm/fake-llm-server.ts";

export interface BaselineProcess {
  pid: number;
  stop(): Promise<void>;
}

/** The baseline bot's rungs (see baseline-bot.ts): streamed model calls, a durable SQLite file. */
export interface BaselineVariant {
  stream?: boolean;
  dbFile?: string;
}

/** Starts bench/support/baseline-bot.ts against `emulator` and `llm`; resolves once it polls. */
export async function startBaselineBot(
  emulator: TelegramEmulator,
  llm: FakeLlmServer,
  variant: BaselineVariant = {},
): Promise<BaselineProcess> {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "baseline-bot.ts")], {
    env: {
      PATH: process.env.PATH ?? "",
      BOT_TOKEN: emulator.token,
      TELEGRAM_API_ROOT: emulator.url,
      OPENAI_COMPATIBLE_BASE_URL: llm.openaiBaseUrl,
      ...(variant.stream ? { BASELINE_STREAM: "1" } : {}),
      ...(variant.dbFile ? { BASELINE_DB: variant.dbFile } : {}),
    },
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = child.stdout.getReader();
  let out = "";
  while (!out.includes("ready")) {
    const read = await reader.read();
    if (read.done) throw new Error(`The baseline bot exited before polling (exit ${await child.exited}).`);
    out += new TextDecoder().decode(read.value);
  }
  return {
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await child.exited;
    },
  };
}
