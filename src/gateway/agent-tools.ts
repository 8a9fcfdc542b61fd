/**
 * The agent's tools as the runtime takes them: the built-in sets (tool-providers.ts) and the MCP
 * servers' tools, picked per surface; which of them may run again after a crash; which tool_search
 * never hides.
 */

import type { ToolSet } from "ai";
import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import { adapterOfChannel } from "../../outbox/adapter-route.ts";
import { mediaRefusal } from "../../outbox/media.ts";
import type { DeliveryWorker } from "../../outbox/worker.ts";
import { type RunContext, readRunContext } from "../run-context.ts";
import type { ToolContext } from "../runtime/execute.ts";
import type { RuntimeOptions } from "../runtime/runtime.ts";
import type { SendFileToolOptions } from "../tools/files/send-file.ts";
import { deliverToolImages } from "../tools/files/tool-images.ts";
import type { McpTools } from "../tools/mcp/tools.ts";
import type { Logger } from "../util/log.ts";
import type { AgentFilesFor } from "./agent-files.ts";
import { settingsForContext } from "./binding-facts.ts";
import { BUILT_IN_TOOL_PROVIDERS, type ToolDeps, type ToolRun } from "./tool-providers.ts";
import { pickToolSets } from "./tool-sets.ts";

/** The gateway's own tool names. */
const BUILT_IN_TOOLS: ReadonlySet<string> = new Set(BUILT_IN_TOOL_PROVIDERS.flatMap((p) => p.names));

/** Names no MCP tool may take: the gateway's own tools and the runtime's (read_output, tool_search). */
export const RESERVED_TOOL_NAMES: ReadonlySet<string> = new Set([
  ...BUILT_IN_TOOLS,
  "read_output",
  "tool_search",
]);

const IDEMPOTENT_BUILT_IN_TOOLS: ReadonlySet<string> = new Set(
  BUILT_IN_TOOL_PROVIDERS.flatMap((p) => p.idempotent),
);

/** How long send_file may take to download a file from a URL. */
const FILE_DOWNLOAD_TIMEOUT_MS = 60_000;

export interface AgentToolsDeps extends ToolDeps {
  /** Every account's adapter (file limits are the channel's, the same for each account). */
  adapters: ReadonlyMap<string, ChannelAdapter>;
  logger: Logger;
  mcp: McpTools;
  /** Woken when a run enqueued files. */
  worker: Pick<DeliveryWorker, "notify">;
  agentFilesOf: AgentFilesFor["agentFilesOf"];
}

export function agentTools(
  deps: AgentToolsDeps,
): Required<Pick<RuntimeOptions, "idempotent" | "toolCatalog" | "tools">> {
  const { config, mcp, logger } = deps;
  return {
    // Each built-in set says which of its tools are safe (tool-providers.ts); of the MCP tools,
    // those a server's config lists as idempotent.
    idempotent: (name) => IDEMPOTENT_BUILT_IN_TOOLS.has(name) || mcp.isIdempotent(name),
    // The gateway's own tools stay offered when a large MCP catalog is deferred to tool_search.
    toolCatalog: {
      budgetBytes: config.file.toolCatalog.budgetBytes,
      pinned: (name) => BUILT_IN_TOOLS.has(name) || config.file.toolCatalog.pinned.includes(name),
    },
    tools: (ctx) => {
      const context = readRunContext(ctx.context);
      if (!context) return {};
      const agentFiles = deps.agentFilesOf(context, ctx.runId);
      logger.debug("run.agent_files", {
        runId: ctx.runId,
        root: agentFiles.root,
        version: agentFiles.version,
      });
      const run: ToolRun = {
        conversationId: ctx.conversationId,
        runId: ctx.runId,
        fencingToken: ctx.fencingToken,
        context,
        fence: ctx.assertOwned,
        agentFiles,
        outgoing: outgoingFiles(ctx, context, deps),
      };
      const sets = new Map<string, ToolSet>();
      const { tools: mcpTools, info } = mcp.toolSet((images, toolCallId, toolName) =>
        deliverToolImages(run.outgoing, images, toolCallId, toolName),
      );
      for (const [name, definition] of Object.entries(mcpTools)) {
        const server = info.get(name)?.server ?? "";
        sets.set(server, { ...sets.get(server), [name]: definition });
      }
      // An MCP server named like a built-in set shares the name: a surface's `tools` picks both.
      for (const provider of BUILT_IN_TOOL_PROVIDERS)
        sets.set(provider.set, { ...sets.get(provider.set), ...provider.create(run, deps) });
      // A child agent run as an entry of `agents` has that entry's tool sets; `self` its caller's.
      const profile = context.child?.profile;
      const chosen = profile
        ? config.file.agents[profile]?.tools
        : settingsForContext(config.file, context).tools;
      return pickToolSets(sets, chosen);
    },
  };
}

/** send_file's (and MCP images') way out: the run's chat, through the outbox, within its channel's limits. */
function outgoingFiles(ctx: ToolContext, context: RunContext, deps: AgentToolsDeps): SendFileToolOptions {
  const { config, stores } = deps;
  return {
    runId: ctx.runId,
    destination: {
      channel: context.channel,
      account: context.account,
      target: context.target,
      ...(context.replyTo === undefined ? {} : { replyTo: context.replyTo }),
    },
    blobs: stores.blobs,
    maxFileBytes: config.media.maxFileBytes,
    fetch: config.webFetch.enabled
      ? {
          allowPrivate: config.webFetch.allowPrivate,
          timeoutMs: FILE_DOWNLOAD_TIMEOUT_MS,
          maxRedirects: 5,
        }
      : null,
    listMessages: (page) => stores.runtime.listMessages(ctx.conversationId, page),
    refusal: (file) => {
      const adapter = adapterOfChannel(deps.adapters.values(), context.channel);
      return mediaRefusal(file, context.channel, adapter?.files?.limits);
    },
    enqueue: async (files) => {
      const ids = await ctx.enqueueFiles(files);
      deps.worker.notify();
      return ids;
    },
  };
}
