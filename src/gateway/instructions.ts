/** The system prompt: what the agent is told at each step of a run. */
import type { AgentFiles } from "../agent/files.ts";
import { agentFilesSummary } from "../agent/prompt.ts";
import { type RunContext, readRunContext } from "../run-context.ts";
import type { RuntimeOptions } from "../runtime/runtime.ts";
import { stateBlock } from "../state/slots.ts";
import type { StoreBackend } from "../store/backend.ts";
import type { AgentFilesFor } from "./agent-files.ts";
import { type GatewayConfig, surfacePolicy } from "./config/index.ts";

/** The runtime's `instructions`: the run's system prompt, then the conversation's saved state. */
export function systemPrompt(
  config: GatewayConfig,
  deps: { stores: Pick<StoreBackend, "state">; agentFilesOf: AgentFilesFor["agentFilesOf"] },
): NonNullable<RuntimeOptions["instructions"]> {
  return async ({ conversationId, context, nowMs }) => {
    const run = readRunContext(context);
    const state = stateBlock(await deps.stores.state.loadState(conversationId));
    const instructions = instructionsFor(config, run, nowMs, deps.agentFilesOf(run));
    return state ? `${instructions}\n\n${state}` : instructions;
  };
}

const timeFormats = new Map<string, Intl.DateTimeFormat>();

/** Creating an Intl formatter is costly; one per zone is reused for every step. */
function localTimeFormat(timeZone: string): Intl.DateTimeFormat {
  let format = timeFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-GB", { timeZone, dateStyle: "full", timeStyle: "short" });
    timeFormats.set(timeZone, format);
  }
  return format;
}

/**
 * The system prompt: the instructions (SWITCHBOARD_INSTRUCTIONS or the config file, else the agent
 * directory's INSTRUCTIONS.md, else the default), the surface's additions, the skills and
 * resources summary, and where and when we are.
 */
export function instructionsFor(
  config: GatewayConfig,
  context: RunContext | null,
  nowMs: number,
  files?: AgentFiles,
): string {
  const parts = [
    config.instructionsSource === "default" && files?.instructions ? files.instructions : config.instructions,
  ];
  if (context) {
    const policy = surfacePolicy(config.file, context.channel, context.surface);
    if (policy.instructions) parts.push(policy.instructions);
  }
  const summary = files ? agentFilesSummary(files) : "";
  if (summary) parts.push(summary);
  if (context) {
    const where =
      context.surface === "dm"
        ? "a direct conversation"
        : context.surface === "group"
          ? "a group chat"
          : "a thread";
    const who = context.principal.name ? ` with ${context.principal.name}` : "";
    parts.push(
      context.origin === "schedule"
        ? `This turn was started by a schedule the user created; answer the scheduled prompt directly. Channel: ${context.channel}.`
        : `You are talking on ${context.channel} in ${where}${who}.`,
    );
  }
  // To the minute: the system prompt then stays the same for every step of a run (and every
  // message) within a minute, so a provider's prompt cache can serve the tools, the instructions
  // and the history before it instead of reading them again.
  const minute = new Date(nowMs - (nowMs % 60_000));
  const local = localTimeFormat(config.timezone).format(minute);
  parts.push(`Current time: ${local} (${config.timezone}; ${minute.toISOString().slice(0, 16)}Z).`);
  return parts.join("\n\n");
}
