/**
 * The gateway's own tool sets, one provider each: the set's name in a surface's `tools`, the tool
 * names it may offer, which of them are safe to run again after a crash, and how it builds them for
 * a run. A new built-in set is one provider here, listed in BUILT_IN_TOOL_PROVIDERS, and its name in
 * BUILT_IN_TOOL_SETS (src/gateway/config/file.ts), which the file's `tools` are checked against.
 */
import type { ToolSet } from "ai";
import type { ScheduleService } from "../../schedules/service.ts";
import { createScheduleTools, SCHEDULE_TOOL_NAMES } from "../../schedules/tools.ts";
import type { AgentFiles } from "../agent/files.ts";
import { AGENT_FILE_TOOL_NAMES, createAgentFileTools } from "../agent/tools.ts";
import type { ChildAgents } from "../children/service.ts";
import { CHILD_TOOL_NAMES, createChildTools } from "../children/tools.ts";
import type { RunContext } from "../run-context.ts";
import { historyScopeOf } from "../search/scope.ts";
import { createHistoryTools, HISTORY_TOOL_NAMES } from "../search/tools.ts";
import { createStateTools, STATE_TOOL_NAMES } from "../state/tools.ts";
import type { StoreBackend } from "../store/backend.ts";
import { createFileTools, SEND_FILE, type SendFileToolOptions } from "../tools/files/send-file.ts";
import { createWebFetchTool, createWebSearchTool, WEB_FETCH, WEB_SEARCH } from "../tools/web/tool.ts";
import type { Clock } from "../util/clock.ts";
import { settingsForContext } from "./binding-facts.ts";
import type { GatewayConfig } from "./config/index.ts";

/** One run's side of a provider's tools. */
export interface ToolRun {
  conversationId: string;
  runId: string;
  /** The run's fencing token in this execution (a spawn is fenced by it). */
  fencingToken: number;
  context: RunContext;
  /** Throws when the run lost ownership; called before every write. */
  fence: () => Promise<void>;
  /** The agent directory generation the run uses. */
  agentFiles: AgentFiles;
  /** Where files the run sends go: its chat, through the outbox. */
  outgoing: SendFileToolOptions;
}

/** The gateway's side: what the providers build their tools with. */
export interface ToolDeps {
  config: GatewayConfig;
  stores: StoreBackend;
  clock: Clock;
  schedules: ScheduleService;
  /** Child agents; null when SWITCHBOARD_CONFIG has no `agents`. */
  children: ChildAgents | null;
}

export interface ToolProvider {
  /** The set's name in a surface's `tools`. */
  readonly set: string;
  /** Every tool it may offer: no MCP tool may take these names, and tool_search never hides them. */
  readonly names: readonly string[];
  /** Of `names`, those safe to run again when a crash cut a call short. */
  readonly idempotent: readonly string[];
  create(run: ToolRun, deps: ToolDeps): ToolSet;
}

/** read_skill and read_resource: they only read. */
const agentFiles: ToolProvider = {
  set: "agent",
  names: AGENT_FILE_TOOL_NAMES,
  idempotent: AGENT_FILE_TOOL_NAMES,
  create: (run) => createAgentFileTools(run.agentFiles),
};

/** history_search and history_read, scoped by the surface's historyScope (the run's user by default); they only read. */
const history: ToolProvider = {
  set: "history",
  names: HISTORY_TOOL_NAMES,
  idempotent: HISTORY_TOOL_NAMES,
  create: ({ conversationId, runId, context }, { config, stores }) => {
    const { historyScope } = settingsForContext(config.file, context);
    const scope = historyScopeOf(historyScope, conversationId, {
      channel: context.channel,
      principalId: context.principal.id,
      ...(context.accountName === undefined ? {} : { accountName: context.accountName }),
      conversationKey: context.conversationKey,
      ...(context.roomKey === undefined ? {} : { roomKey: context.roomKey }),
    });
    if (scope === null) return {};
    return createHistoryTools({ search: stores.search, conversationId, runId, scope });
  },
};

/** send_file: enqueued under a key per tool call, so run again it adds nothing. */
const files: ToolProvider = {
  set: "files",
  names: [SEND_FILE],
  idempotent: [SEND_FILE],
  create: (run) => createFileTools(run.outgoing),
};

/** The state tools save a whole value: run again, they leave the same state (a stale expectedVersion is refused). */
const state: ToolProvider = {
  set: "state",
  names: STATE_TOOL_NAMES,
  idempotent: STATE_TOOL_NAMES,
  create: (run, { stores, clock }) =>
    createStateTools({
      store: stores.state,
      conversationId: run.conversationId,
      runId: run.runId,
      fence: run.fence,
      now: () => clock.now(),
    }),
};

/** web_fetch (unless SWITCHBOARD_WEB_FETCH=off) and web_search (with a backend); they only read. */
const web: ToolProvider = {
  set: "web",
  names: [WEB_FETCH, WEB_SEARCH],
  idempotent: [WEB_FETCH, WEB_SEARCH],
  create: (_run, { config }) => ({
    ...(config.webFetch.enabled ? createWebFetchTool({ allowPrivate: config.webFetch.allowPrivate }) : {}),
    ...(config.webSearch ? createWebSearchTool(config.webSearch) : {}),
  }),
};

/** The schedule tools, for the run's chat; schedule_list only reads. */
const schedules: ToolProvider = {
  set: "schedules",
  names: SCHEDULE_TOOL_NAMES,
  idempotent: ["schedule_list"],
  create: ({ conversationId, context, fence }, deps) =>
    createScheduleTools({
      service: deps.schedules,
      conversation: {
        conversationId,
        chatKey: context.conversationKey,
        replyTarget: context.target,
        channel: context.channel,
      },
      fence,
      timezone: deps.config.timezone,
    }),
};

/**
 * spawn_agent, list_agents, message_agent and stop_agent, only with SWITCHBOARD_CONFIG `agents`.
 * Each is safe to run again after a crash: a spawn and a message are keyed by their tool call (a
 * replay finds the child or the input it made), a stop stops what still runs, list_agents reads.
 */
const childAgents: ToolProvider = {
  set: "agents",
  names: CHILD_TOOL_NAMES,
  idempotent: CHILD_TOOL_NAMES,
  create: (run, { children, config }) =>
    children
      ? createChildTools({
          children,
          agents: config.file.agents,
          caller: {
            conversationId: run.conversationId,
            runId: run.runId,
            fencingToken: run.fencingToken,
            context: run.context,
          },
          fence: run.fence,
        })
      : {},
};

/** In the order their sets join a run's tools, after the MCP servers'. */
export const BUILT_IN_TOOL_PROVIDERS: readonly ToolProvider[] = [
  agentFiles,
  history,
  files,
  state,
  web,
  schedules,
  childAgents,
];
