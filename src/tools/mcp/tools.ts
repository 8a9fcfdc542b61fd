import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { jsonSchema, type ToolSet, tool } from "ai";
import type { Clock } from "../../util/clock.ts";
import type { Logger } from "../../util/log.ts";
import type { McpServersConfig } from "./config.ts";
import { assignNames, type NamedTool } from "./names.ts";
import { McpServer, type ServerStatus } from "./server.ts";

export interface McpToolsOptions {
  servers: McpServersConfig;
  env: Record<string, string | undefined>;
  logger: Logger;
  /** Times connection deadlines and reconnects. Default the system clock. */
  clock?: Clock;
  /** Names the gateway's own tools use; an MCP tool may not take one. */
  reserved?: ReadonlySet<string>;
  version?: string;
  /** Called when a server goes up or down (metrics, readiness). */
  onStatus?: (status: ServerStatus) => void;
}

/** What the runtime needs to know about an offered tool beyond the AI SDK definition. */
export interface McpToolInfo {
  server: string;
  tool: string;
  idempotent: boolean;
}

/**
 * The configured MCP servers as agent tools. `start` connects every server in parallel, each
 * within its own deadline; a server that fails stays down (retrying with backoff) and never stops
 * the gateway. The catalog offered to the model is rebuilt whenever a server's tools change.
 */
export class McpTools {
  private readonly servers: McpServer[];
  private names: NamedTool[] = [];
  /** Servers whose tools are withheld because their names collide (set by a refresh). */
  private readonly collisions = new Map<string, string>();

  constructor(private readonly options: McpToolsOptions) {
    this.servers = Object.entries(options.servers).map(
      ([name, config]) =>
        new McpServer({
          name,
          config,
          env: options.env,
          logger: options.logger,
          ...(options.clock ? { clock: options.clock } : {}),
          version: options.version ?? "0.1.0",
          onChange: () => this.changed(name),
        }),
    );
  }

  /**
   * Connects all servers. Throws only for a configuration error that no restart can fix: two
   * tools whose exposed names collide.
   */
  async start(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.start()));
    const named = assignNames(this.catalogEntries(this.servers), this.options.reserved);
    if (!named.ok) {
      await this.stop();
      throw new Error(named.error);
    }
    this.names = named.tools;
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.stop()));
  }

  /** Whether `name` (as the model sees it) is a tool its server declares safe to run again. */
  isIdempotent(name: string): boolean {
    const named = this.names.find((n) => n.name === name);
    const server = named && this.servers.find((s) => s.name === named.server);
    return server?.config.idempotent.includes(named!.tool) ?? false;
  }

  statuses(): ServerStatus[] {
    return this.servers.map((server) => {
      const status = server.status();
      const collision = this.collisions.get(server.name);
      return collision && status.state === "up"
        ? { ...status, state: "down", error: collision, tools: 0 }
        : status;
    });
  }

  /**
   * Whether calls of `name` (as the model sees it) wait for a person's approval: its server's
   * `approval` is "ask" (the default). A name that is no MCP tool (a built-in) never asks here.
   */
  requiresApproval(name: string): boolean {
    const named = this.names.find((n) => n.name === name);
    const server = named && this.servers.find((s) => s.name === named.server);
    return server !== undefined && server.config.approval !== "never";
  }

  /**
   * Every server's tools as AI SDK tools, with what the runtime needs per name; those of "ask"
   * servers are offered too and wait for approval before they run (see requiresApproval).
   */
  /**
   * The tools the model is offered. With `deliverImages`, image content a call returns is handed
   * to it (to send to the chat as photos) and the model reads what became of each image.
   */
  toolSet(deliverImages?: DeliverImages): { tools: ToolSet; info: Map<string, McpToolInfo> } {
    const tools: ToolSet = {};
    const info = new Map<string, McpToolInfo>();
    const byServer = new Map(this.servers.map((s) => [s.name, s]));
    for (const { server: serverName, tool: toolName, name } of this.names) {
      const server = byServer.get(serverName);
      if (!server || this.collisions.has(serverName)) continue;
      const definition = server.tools().find((t) => t.name === toolName);
      if (!definition) continue;
      tools[name] = tool({
        description: definition.description ?? `${toolName} (MCP server ${serverName})`,
        inputSchema: jsonSchema(definition.inputSchema as Parameters<typeof jsonSchema>[0]),
        execute: async (input: unknown, { abortSignal, toolCallId }) => {
          const result = await server.call(toolName, input, abortSignal);
          const images = result.isError ? [] : result.content.filter((part) => part.type === "image");
          const notes =
            images.length > 0 && deliverImages ? await deliverImages(images, toolCallId, name) : [];
          return toModelOutput(result, notes);
        },
      });
      info.set(name, {
        server: serverName,
        tool: toolName,
        idempotent: server.config.idempotent.includes(toolName),
      });
    }
    return { tools, info };
  }

  private catalogEntries(servers: readonly McpServer[]): Array<{ server: string; tool: string }> {
    return servers.flatMap((server) => server.tools().map((t) => ({ server: server.name, tool: t.name })));
  }

  /** A server's catalog or state changed: rename, refusing a server whose names would collide. */
  private changed(serverName: string): void {
    const server = this.servers.find((s) => s.name === serverName);
    if (server) {
      const others = this.servers.filter((s) => s !== server && !this.collisions.has(s.name));
      const named = assignNames(this.catalogEntries([...others, server]), this.options.reserved);
      if (named.ok) {
        this.collisions.delete(serverName);
        this.names = named.tools;
      } else if (!this.collisions.has(serverName)) {
        this.collisions.set(serverName, named.error);
        this.options.logger.error("mcp.tool_names_collide", { server: serverName, error: named.error });
      }
    }
    const status = this.statuses().find((s) => s.name === serverName);
    if (status) this.options.onStatus?.(status);
  }
}

/** Image content of one call, in order. */
export type McpImage = Extract<CallToolResult["content"][number], { type: "image" }>;

/** Sends a call's images to the chat; returns, per image, what the model reads instead of it. */
export type DeliverImages = (images: McpImage[], toolCallId: string, toolName: string) => Promise<string[]>;

/**
 * What the model gets from a call: the text content, joined; an image reads as `imageNotes`
 * (in order) when it was delivered, else as omitted. A result the server marks as an error
 * becomes a thrown error, so the model sees a failed call rather than an answer.
 */
export function toModelOutput(result: CallToolResult, imageNotes: readonly string[] = []): string {
  let image = 0;
  const text = result.content
    .map((part) => {
      if (part.type === "image" && image < imageNotes.length) return imageNotes[image++]!;
      if (part.type === "text") return part.text;
      if (part.type === "resource_link") return `[resource ${part.uri}]`;
      if (part.type === "resource")
        return "text" in part.resource ? part.resource.text : `[resource ${part.resource.uri}]`;
      return `[${part.type} content omitted]`;
    })
    .join("\n");
  const output = text || (result.structuredContent ? JSON.stringify(result.structuredContent) : "");
  if (result.isError) throw new Error(output || "the tool reported an error without details");
  return output;
}
