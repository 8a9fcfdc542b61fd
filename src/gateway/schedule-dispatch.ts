import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import { type AdapterRoute, adapterOfChannel, routeToAccount } from "../../outbox/adapter-route.ts";
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
  /** Every account's adapter; a schedule answers through its chat's account's. */
  adapters: ReadonlyMap<string, ChannelAdapter>;
  /** The account a conversation key belongs to, when its channel's keys say (ChannelModule.accountOfKey). */
  accountOfKey: (channel: ChannelName, conversationKey: string) => string | null;
  config: Pick<GatewayConfig, "file">;
  agentFor: AgentFilesFor["agentFor"];
  submit: Runtime["submit"];
}): ScheduleDispatch {
  const { adapters, config } = deps;
  return async (request) => {
    const { channel } = request.schedule;
    if (!adapterOfChannel(adapters.values(), channel))
      return { status: "retry", reason: `channel ${channel} is not configured` };
    // The chat's own bot: a schedule made through one account never runs through another.
    const key = request.schedule.chatKey;
    const owner = key === null ? null : deps.accountOfKey(channel, key);
    const route =
      owner === null ? legacyRoute(adapters, channel) : routeToAccount(adapters.values(), channel, owner);
    if (!route.adapter) return { status: "terminal", reason: route.reason };
    const context: RunContext = {
      channel,
      account: owner ?? route.adapter.account,
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

/**
 * A schedule stored before chats were recorded (no chat key) was made through the channel's one
 * bot of the time: the `default` account's (slot `channel`), or the channel's only adapter.
 */
function legacyRoute(adapters: ReadonlyMap<string, ChannelAdapter>, channel: ChannelName): AdapterRoute {
  const candidates = [...adapters.values()].filter((adapter) => adapter.channel === channel);
  const adapter = adapters.get(channel) ?? (candidates.length === 1 ? candidates[0] : undefined);
  return adapter
    ? { adapter }
    : {
        adapter: null,
        reason: `this schedule predates chat keys, so it cannot tell which of the ${channel} accounts made it, and the default account is not configured; make it again in its chat`,
      };
}
