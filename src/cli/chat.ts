import { createInterface } from "node:readline/promises";
import type { InboundMessage } from "../../channels/types.ts";
import { SCHEDULE_COMMANDS } from "../../schedules/parse.ts";
import { createScheduleService } from "../../schedules/service.ts";
import { loadAgentFiles } from "../agent/files.ts";
import { isSwitchboardError } from "../errors.ts";
import { createChatCommands } from "../gateway/commands.ts";
import { DEFAULT_ACCOUNT, loadConfig } from "../gateway/config/index.ts";
import { instructionsFor } from "../gateway/instructions.ts";
import { createModelChoices, registryModelsOf } from "../gateway/model-choice.ts";
import { createModelRegistry } from "../models/registry.ts";
import { toUsage } from "../models/usage.ts";
import { Runtime } from "../runtime/runtime.ts";
import { openStoreBackend } from "../store/open-backend.ts";
import { systemClock } from "../util/clock.ts";
import { newId } from "../util/ids.ts";

/**
 * Where the terminal chat sits for surface settings (a `web:dm` default model applies to it) and
 * for the chat commands, which speak of a channel and a surface.
 */
const WHERE = { channel: "web", surface: "dm" } as const;

const NO_SCHEDULES =
  "The terminal chat has no schedules: a schedule's answer is delivered to a chat channel. Set them in Telegram, Discord, Slack or the web chat.";

/**
 * `switchboard chat`: a terminal conversation with the agent on the same runtime and database as
 * the gateway (conversation key `cli:local:<user>`), answers streamed as they are written. Chat
 * commands (/status, /stop, /new, /model, /goal, /help, …) are answered as on every channel, at
 * once, also while an answer is being written; other lines are answered in order.
 */
export async function runChat(env: Record<string, string | undefined>): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (isSwitchboardError(error, "config_invalid")) {
      process.stderr.write(`switchboard: configuration error: ${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
  const clock = systemClock;
  const agentFiles = loadAgentFiles(config.agentDir);
  const stores = await openStoreBackend(config.database);
  const registry = createModelRegistry(config.modelEnv, { named: registryModelsOf(config.file) });
  const models = createModelChoices({ registry, file: config.file, store: stores.runtime, clock });
  const runtime = new Runtime({
    store: stores.runtime,
    models: registry.chain,
    // The model /status names is the one the run uses: picked with /model, else the surface's default.
    modelsFor: async ({ conversationId }) =>
      models.chain((await models.current(conversationId, { ...WHERE, account: DEFAULT_ACCOUNT })).name),
    readUsage: toUsage,
    inputPolicy: "queue",
    instructions: ({ nowMs }) => instructionsFor(config, null, nowMs, agentFiles),
  });
  const commands = createChatCommands({
    runtime,
    store: stores.runtime,
    state: stores.state,
    outbox: stores.outbox,
    // Never started: the schedule commands are refused here; /status reads the (empty) list.
    schedules: createScheduleService({
      repository: stores.schedules,
      clock,
      dispatch: async () => ({ status: "terminal", reason: "the terminal chat runs no schedules" }),
    }),
    defaultTimezone: config.timezone,
    clock,
    notify: () => {},
    models,
    showsReplies: true,
  });
  const user = env.USER ?? "user";
  const key = `cli:local:${user}`;
  const out = process.stdout;
  runtime.subscribe((event) => {
    if (event.type === "assistant-delta") out.write(event.delta);
    if (event.type === "attempt-reset") out.write("\n[retrying]\n");
  });

  const command = async (text: string): Promise<string | null> => {
    const name = commands.match(text);
    if (name === null) return null;
    if ((SCHEDULE_COMMANDS as readonly string[]).includes(name)) return NO_SCHEDULES;
    const message: InboundMessage = {
      ...WHERE,
      account: "local",
      updateKey: newId("cli"),
      principal: { id: user, isBot: false },
      conversationKey: key,
      replyTarget: key,
      text,
      addressedToBot: true,
      attachments: [],
      receivedAtMs: clock.now(),
    };
    const conversationId = await stores.runtime.resolveConversationKey(key, clock.now());
    return (await commands.run(name, { message, conversationId, source: "cli:local" })).text;
  };

  out.write(`switchboard chat — ${registry.describe()}. /help lists the commands, /exit quits.\n`);
  const rl = createInterface({ input: process.stdin, output: out, terminal: process.stdin.isTTY ?? false });
  /** Answers submitted and not finished; each prints its end, in order. */
  let answering = 0;
  let answered: Promise<void> = Promise.resolve();
  const prompt = () => {
    if (process.stdin.isTTY && answering === 0) out.write("> ");
  };
  try {
    prompt();
    // The async iterator buffers lines typed (or piped) while an answer is written: none is lost,
    // and the end of input ends the chat.
    for await (const raw of rl) {
      const line = raw.trim();
      if (line === "/exit" || line === "/quit") break;
      if (line === "") {
        prompt();
        continue;
      }
      const reply = await command(line);
      if (reply !== null) {
        // On a line of its own when it comes in the middle of an answer.
        out.write(`${answering > 0 ? "\n" : ""}${reply}\n`);
        prompt();
        continue;
      }
      const ticket = runtime.submit({
        conversationKey: key,
        idempotencyKey: newId("cli"),
        parts: [{ type: "text", text: line }],
      });
      answering += 1;
      answered = answered.then(async () => {
        try {
          const result = await ticket.result;
          out.write(
            result.state === "completed"
              ? "\n"
              : `\n[${result.state}${result.error ? `: ${result.error}` : ""}]\n`,
          );
        } catch (error) {
          out.write(`\n[failed: ${error instanceof Error ? error.message : String(error)}]\n`);
        } finally {
          answering -= 1;
        }
        prompt();
      });
    }
    await answered;
  } finally {
    rl.close();
    await runtime.close({ gracePeriodMs: 2000 });
    await stores.close();
  }
}
