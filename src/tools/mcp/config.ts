import { z } from "zod";

/*
 * `mcpServers` in the SWITCHBOARD_CONFIG file, in the shape Claude Desktop and Cursor use: a stdio
 * server has `command`, an HTTP (Streamable HTTP) server has `url`. Our additions are per server:
 * the approval policy, a tool filter, the per-call timeout and the tools safe to run again.
 */

export const SERVER_NAME = /^[a-zA-Z0-9_-]{1,32}$/;
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
export const DEFAULT_START_TIMEOUT_MS = 15_000;

const common = {
  /** "ask": each call waits for a person's approval (chat buttons or /approve); "never": calls run directly. */
  approval: z.enum(["ask", "never"]).default("ask"),
  tools: z
    .strictObject({
      allow: z.array(z.string().min(1)).optional(),
      deny: z.array(z.string().min(1)).default([]),
    })
    .default({ deny: [] }),
  timeoutMs: z.number().int().min(100).max(3_600_000).default(DEFAULT_CALL_TIMEOUT_MS),
  startTimeoutMs: z.number().int().min(100).max(300_000).default(DEFAULT_START_TIMEOUT_MS),
  /** Tool names (as the server names them) that are safe to run a second time after a crash. */
  idempotent: z.array(z.string().min(1)).default([]),
};

const stdioServer = z.strictObject({
  command: z.string().min(1, 'command names the program that runs the server, e.g. "bun"'),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().optional(),
  ...common,
});

const httpServer = z.strictObject({
  url: z.url({
    protocol: /^https?$/,
    error: "url must be an http(s) URL such as https://mcp.example.com/mcp",
  }),
  /** Values may reference the environment as ${VAR}; expanded at connect time, never logged. */
  headers: z.record(z.string(), z.string()).default({}),
  ...common,
});

export type StdioServerConfig = z.output<typeof stdioServer>;
export type HttpServerConfig = z.output<typeof httpServer>;

/** Stdio when it has `command`, HTTP when it has `url`; then that shape's own messages. */
const server = z.unknown().transform((value, ctx): StdioServerConfig | HttpServerConfig => {
  const shape = typeof value === "object" && value !== null ? value : {};
  if ("command" in shape === "url" in shape) {
    ctx.addIssue({
      code: "custom",
      message: 'each MCP server needs either "command" (stdio) or "url" (Streamable HTTP), not both',
    });
    return z.NEVER;
  }
  const parsed = ("command" in shape ? stdioServer : httpServer).safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  }
  return z.NEVER;
});

export const mcpServersSchema = z
  .record(z.string(), server)
  .superRefine((servers, ctx) => {
    for (const name of Object.keys(servers)) {
      if (!SERVER_NAME.test(name)) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `MCP server name "${name}" may use only letters, digits, _ and - (at most 32)`,
        });
      }
    }
  })
  .default({});

export type McpServersConfig = z.output<typeof mcpServersSchema>;
export type McpServerConfig = McpServersConfig[string];

export function isStdio(config: McpServerConfig): config is StdioServerConfig {
  return "command" in config;
}
