/**
 * The baseline for bench/reply-latency.ts: the smallest grammY + AI SDK Telegram bot, no database.
 * Each text message is one generateText call answered with ctx.reply. Run as its own process:
 *   BOT_TOKEN=… TELEGRAM_API_ROOT=… OPENAI_COMPATIBLE_BASE_URL=… bun bench/support/baseline-bot.ts
 * Prints "ready" on stdout once polling.
 *
 * Two switches make it the rungs of a ladder towards what switchboard promises, so the bench can
 * show what each promise costs on its own:
 * - `BASELINE_STREAM=1`: streamText, reading the whole stream (as a bot that previews its answers
 *   and notices a stalled model must), instead of generateText.
 * - `BASELINE_DB=FILE`: durable, in the fewest statements that keep switchboard's promises on a
 *   SQLite file with its pragmas: the update and the user's message in one transaction before the
 *   model is asked (a redelivered update is a duplicate), the conversation's last 40 messages as
 *   the prompt, the answer and its outbox row in one transaction before the send, the row marked
 *   sending before the platform call (so a crash during it leaves the reply visibly ambiguous) and
 *   delivered after it.
 */
import { Database } from "bun:sqlite";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, type ModelMessage, streamText } from "ai";
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
const streaming = process.env.BASELINE_STREAM === "1";
const store = process.env.BASELINE_DB ? openStore(process.env.BASELINE_DB) : null;

async function answer(messages: ModelMessage[]): Promise<string> {
  if (!streaming) return (await generateText({ model, messages })).text;
  let text = "";
  for await (const part of streamText({ model, messages }).fullStream) {
    if (part.type === "text-delta") text += part.text;
    else if (part.type === "error") throw part.error;
  }
  return text;
}

bot.on("message:text", async (ctx) => {
  const chatId = ctx.chat.id;
  const text = ctx.message.text;
  if (!store) {
    await ctx.reply(await answer([{ role: "user", content: text }]));
    return;
  }
  if (!store.admit(ctx.update.update_id, chatId, text)) return; // a redelivery
  const reply = await answer(store.history(chatId));
  const outboxId = store.finish(chatId, reply);
  store.mark(outboxId, "sending");
  await ctx.reply(reply);
  store.mark(outboxId, "delivered");
});
bot.catch((error) => console.error("baseline bot error", error.message));

process.on("SIGTERM", () => void bot.stop().then(() => process.exit(0)));
void bot.start({ onStart: () => console.log("ready") });

function openStore(path: string) {
  const db = new Database(path, { create: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA cache_size = -65536");
  db.exec(`
    CREATE TABLE IF NOT EXISTS updates (update_id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, chat_id INTEGER NOT NULL,
      role TEXT NOT NULL, text TEXT NOT NULL, at_ms INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS messages_by_chat ON messages (chat_id, id);
    CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY, chat_id INTEGER NOT NULL,
      text TEXT NOT NULL, state TEXT NOT NULL, at_ms INTEGER NOT NULL);`);
  const insertUpdate = db.query(
    "INSERT INTO updates (update_id, at_ms) VALUES (?, ?) ON CONFLICT DO NOTHING",
  );
  const insertMessage = db.query("INSERT INTO messages (chat_id, role, text, at_ms) VALUES (?, ?, ?, ?)");
  const lastMessages = db.query<{ role: "user" | "assistant"; text: string }, [number]>(
    "SELECT role, text FROM messages WHERE chat_id = ? ORDER BY id DESC LIMIT 40",
  );
  const insertOutbox = db.query<{ id: number }, [number, string, number]>(
    "INSERT INTO outbox (chat_id, text, state, at_ms) VALUES (?, ?, 'pending', ?) RETURNING id",
  );
  const markState = db.query("UPDATE outbox SET state = ? WHERE id = ?");
  return {
    admit: db.transaction((updateId: number, chatId: number, text: string): boolean => {
      if (insertUpdate.run(updateId, Date.now()).changes === 0) return false;
      insertMessage.run(chatId, "user", text, Date.now());
      return true;
    }).immediate,
    history: (chatId: number): ModelMessage[] =>
      lastMessages
        .all(chatId)
        .reverse()
        .map((m) => ({ role: m.role, content: m.text })),
    finish: db.transaction((chatId: number, text: string): number => {
      insertMessage.run(chatId, "assistant", text, Date.now());
      return insertOutbox.get(chatId, text, Date.now())!.id;
    }).immediate,
    mark: (outboxId: number, state: "sending" | "delivered") => void markState.run(state, outboxId),
  };
}
