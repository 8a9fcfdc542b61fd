/**
 * The baseline for bench/reply-latency.ts: the smallest grammY + AI SDK Telegram bot, no database.
 * Each text message is one generateText call answered with ctx.reply. Run as its own process:
 *   BOT_TOKEN=… TELEGRAM_API_ROOT=… OPENAI_COMPATIBLE_BASE_URL=… bun bench/support/baseline-bot.ts
 * Prints "ready" on stdout once polling.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText } from "ai";
import { Bot } from "grammy";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`Set ${name}; the benchmark passes it to the baseline bot.`);
  return value;
}

const provider = createOpenAICompatible({
  name: "baseline",
  baseURL: required("OPENAI_COMPATIBLE_BASE_URL"),
  includeUsage: true,
});
const model = provider.chatModel("test-model");
const bot = new Bot(required("BOT_TOKEN"), { client: { apiRoot: required("TELEGRAM_API_ROOT") } });

bot.on("message:text", async (ctx) => {
  const { text } = await generateText({ model, prompt: ctx.message.text });
  await ctx.reply(text);
});
bot.catch((error) => console.error("baseline bot error", error.message));

process.on("SIGTERM", () => void bot.stop().then(() => process.exit(0)));
void bot.start({ onStart: () => console.log("ready") });
