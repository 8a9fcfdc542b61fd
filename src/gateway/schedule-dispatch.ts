import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import type { ScheduleDispatch } from "../../schedules/types.ts";
import type { RunContext } from "../run-context.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { AgentFilesFor } from "./agent-files.ts";
import { settingsForContext } from "./binding-facts.ts";
import type { GatewayConfig } from "./config/index.ts";

/**
 * Turns a due schedule into a run: admitted like a message in the schedule's chat (queued behind
 * what runs there), answered on its channel, deduplicated by the occurrence's idempotency key.
 */
export function scheduleDispatcher(deps: {
  adapters: ReadonlyMap<ChannelName, ChannelAdapter>;
  config: Pick<GatewayConfig, "file">;
  agentFor: AgentFilesFor["agentFor"];
  submit: Runtime["submit"];
}): ScheduleDispatch {
  const { adapters, config } = deps;
  return async (request) => {
    const adapter = adapters.get(request.schedule.channel);
    if (!adapter) return { status: "retry", reason: `channel ${request.schedule.channel} is not configured` };
    const context: RunContext = {
      channel: request.schedule.channel,
      account: adapter.account,
      target: request.schedule.replyTarget,
      surface: "dm",
      delivery: "terminal",
      conversationKey: request.schedule.chatKey ?? `schedule:${request.schedule.id}`,
      principal: { id: `schedule:${request.schedule.id}` },
      origin: "schedule",
    };
    // A chat's schedule runs in the chat's current conversation, so it follows /new. The ingress
    // identity dedupes a repeated dispatch even if /new moved the chat in between.
    const { chatKey } = request.schedule;
    const agent = deps.agentFor(settingsForContext(config.file, context).agentDir);
    if (agent) context.agent = agent;
    const admission = await deps.submit({
      ...(chatKey === null
        ? { conversationId: request.schedule.conversationId }
        : { conversationKey: chatKey }),
      idempotencyKey: request.idempotencyKey,
      ingress: {
        source: "schedule",
        key: request.idempotencyKey,
        payload: { scheduleId: request.schedule.id },
      },
      parts: [{ type: "text", text: `[Scheduled prompt ${request.schedule.id}] ${request.schedule.prompt}` }],
      context,
      policy: "queue",
    }).admission;
    return { status: "ok", runId: admission.runId };
  };
}
