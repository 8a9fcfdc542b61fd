import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { type Clock, systemClock, type Timer } from "../../util/clock.ts";
import type { Logger } from "../../util/log.ts";
import { isStdio, type McpServerConfig } from "./config.ts";
import { expandVariables, restartDelayMs, toolAllowed } from "./names.ts";
import { supervised } from "./supervise.ts";

export type ServerState = "starting" | "up" | "down" | "stopped";

export interface ServerStatus {
  name: string;
  state: ServerState;
  /** Why it is down (never a secret: header values are not part of it). */
  error: string | null;
  tools: number;
  restarts: number;
}

export interface McpServerOptions {
  name: string;
  config: McpServerConfig;
  env: Record<string, string | undefined>;
  logger: Logger;
  /** Times the start deadline and reconnects. Default the system clock. */
  clock?: Clock;
  /** Called whenever the server's catalog or state changes. */
  onChange: () => void;
  version: string;
}

class ConnectFailure extends Error {}

/**
 * One configured MCP server: connects (within `startTimeoutMs`), keeps its filtered tool catalog,
 * refreshes it on `tools/list_changed`, and reconnects with backoff when the connection ends (a
 * stdio child that exits is started again). Calls are bounded by `timeoutMs`.
 */
export class McpServer {
  private client: Client | null = null;
  private catalog: Tool[] = [];
  private state: ServerState = "starting";
  private error: string | null = null;
  private restarts = 0;
  private attempt = 0;
  private retryTimer: Timer | null = null;
  private stopping = false;
  /** The end of the stdio server's stderr, quoted when it fails (servers print why there). */
  private stderrTail = "";

  private readonly clock: Clock;

  constructor(private readonly options: McpServerOptions) {
    this.clock = options.clock ?? systemClock;
  }

  get name(): string {
    return this.options.name;
  }

  get config(): McpServerConfig {
    return this.options.config;
  }

  status(): ServerStatus {
    return {
      name: this.name,
      state: this.state,
      error: this.error,
      tools: this.state === "up" ? this.catalog.length : 0,
      restarts: this.restarts,
    };
  }

  /** The offered tools while the server is up (allow/deny applied); none while it is down. */
  tools(): readonly Tool[] {
    return this.state === "up" ? this.catalog : [];
  }

  /** First connection. Resolves either way; a failure leaves the server down and retrying. */
  async start(): Promise<void> {
    await this.connect();
  }

  async call(tool: string, input: unknown, signal?: AbortSignal): Promise<CallToolResult> {
    const client = this.client;
    if (!client || this.state !== "up") {
      throw new Error(
        `MCP server "${this.name}" is not available right now (${this.error ?? this.state}); try again later`,
      );
    }
    const result = await client.callTool(
      { name: tool, arguments: (input ?? {}) as Record<string, unknown> },
      undefined,
      { timeout: this.config.timeoutMs, ...(signal ? { signal } : {}) },
    );
    return result as CallToolResult;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.retryTimer?.cancel();
    this.retryTimer = null;
    const client = this.client;
    this.client = null;
    this.setState("stopped", null);
    await client?.close().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.stopping) return;
    let transport: Transport;
    // The SDK (with ajv, about 80 modules) loads only in a gateway that has an MCP server.
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    try {
      transport = await this.transport();
    } catch (error) {
      this.fail(error);
      return;
    }
    const client = new Client(
      { name: "switchboard", version: this.options.version },
      {
        listChanged: {
          tools: { autoRefresh: false, debounceMs: 100, onChanged: () => void this.refresh(client) },
        },
      },
    );
    const deadline = this.config.startTimeoutMs;
    let timer: Timer | undefined;
    try {
      await Promise.race([
        (async () => {
          await client.connect(transport, { timeout: deadline });
          this.catalog = await this.listTools(client);
        })(),
        new Promise<never>((_, reject) => {
          timer = this.clock.setTimer(deadline, () =>
            reject(new ConnectFailure(`did not answer within startTimeoutMs (${deadline} ms)`)),
          );
        }),
      ]);
    } catch (error) {
      timer?.cancel();
      // Not awaited: closing a stuck child takes seconds, and the start deadline has passed.
      void client.close().catch(() => {});
      this.fail(error);
      return;
    }
    timer?.cancel();
    if (this.stopping) {
      await client.close().catch(() => {});
      return;
    }
    this.client = client;
    this.attempt = 0;
    client.onclose = () => {
      if (this.client !== client) return;
      this.client = null;
      this.fail(new Error(isStdio(this.config) ? "the server process exited" : "the connection closed"));
    };
    this.setState("up", null);
    this.options.logger.info("mcp.server_up", { server: this.name, tools: this.catalog.length });
  }

  private async transport(): Promise<Transport> {
    const { config } = this;
    if (isStdio(config)) {
      const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
      const run = supervised(config.command, config.args);
      const transport = new StdioClientTransport({
        command: run.command,
        args: run.args,
        env: config.env,
        ...(config.cwd ? { cwd: config.cwd } : {}),
        stderr: "pipe",
      });
      this.stderrTail = "";
      transport.stderr?.on("data", (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-400);
      });
      return transport;
    }
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(config.headers)) {
      const expanded = expandVariables(value, this.options.env);
      if (!expanded.ok) {
        throw new ConnectFailure(
          `header ${key} references \${${expanded.missing}}, which is not set; set it in the gateway's environment`,
        );
      }
      headers[key] = expanded.value;
    }
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js"
    );
    return new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers } });
  }

  private async listTools(client: Client): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools.filter((t) => toolAllowed(t.name, this.config.tools));
  }

  private async refresh(client: Client): Promise<void> {
    if (this.client !== client) return;
    try {
      this.catalog = await this.listTools(client);
      this.options.logger.info("mcp.tools_changed", { server: this.name, tools: this.catalog.length });
      this.options.onChange();
    } catch (error) {
      this.options.logger.warn("mcp.tools_refresh_failed", { server: this.name, error: describe(error) });
    }
  }

  private fail(error: unknown): void {
    if (this.stopping) return;
    const stderr = isStdio(this.config) ? this.stderrTail.trim() : "";
    const reason = stderr ? `${describe(error)}; its stderr ends with: ${stderr}` : describe(error);
    const delayMs = restartDelayMs(this.attempt);
    this.attempt += 1;
    if (this.state === "up") this.restarts += 1;
    this.setState("down", reason);
    this.options.logger.warn("mcp.server_down", {
      server: this.name,
      error: reason,
      retryInMs: delayMs,
      hint: isStdio(this.config)
        ? "check the command, its arguments and the server's own log on stderr"
        : "check the URL, the headers' variables and that the server is reachable",
    });
    this.retryTimer = this.clock.setTimer(
      delayMs,
      () => {
        this.retryTimer = null;
        void this.connect();
      },
      { unref: true },
    );
  }

  private setState(state: ServerState, error: string | null): void {
    this.state = state;
    this.error = error;
    this.options.onChange();
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
