/** The system prompt: what the agent is told at each step of a run. */
import type { AgentFiles } from "../agent/files.ts";
import { agentFilesSummary } from "../agent/prompt.ts";
import { type RunContext, readRunContext } from "../run-context.ts";
import type { RuntimeOptions } from "../runtime/runtime.ts";
import { stateBlock } from "../state/slots.ts";
import type { StoreBackend } from "../store/backend.ts";
import type { AgentFilesFor } from "./agent-files.ts";
import { settingsForContext } from "./binding-facts.ts";
import type { GatewayConfig } from "./config/index.ts";

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

/**
 * What a child agent is told on top: its answer goes to the agent that started it, not to the
 * person, so it answers with its findings in full and does not ask the person anything.
 */
function childNote(child: NonNullable<RunContext["child"]>, extra: string | undefined): string {
  const lines = [
    `You are the child agent "${child.agent}" (${child.handle}), started by another agent to do the task in the first message. ` +
      "Your final answer goes to that agent, not to the person: give your findings in full, and do not ask questions back. " +
      `You have at most ${child.maxSteps} steps.`,
  ];
  if (extra) lines.push(extra);
  return lines.join("\n\n");
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
  const entry = context?.child?.profile ? config.file.agents[context.child.profile] : undefined;
  // A child agent with its own directory takes that directory's INSTRUCTIONS.md first.
  const ownFiles =
    (config.instructionsSource === "default" || entry?.agentDir !== undefined) && files?.instructions;
  const parts = [ownFiles || config.instructions];
  if (context) {
    const policy = settingsForContext(config.file, context);
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
  if (context?.child) parts.push(childNote(context.child, entry?.instructions));
  // To the minute: the system prompt then stays the same for every step of a run (and every
  // message) within a minute, so a provider's prompt cache can serve the tools, the instructions
  // and the history before it instead of reading them again.
  const minute = new Date(nowMs - (nowMs % 60_000));
  const local = localTimeFormat(config.timezone).format(minute);
  parts.push(`Current time: ${local} (${config.timezone}; ${minute.toISOString().slice(0, 16)}Z).`);
  return parts.join("\n\n");
}
