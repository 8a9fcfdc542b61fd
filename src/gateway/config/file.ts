/**
 * The JSON file named by SWITCHBOARD_CONFIG (docs/configuration.md): its schema, and reading it with
 * errors that say where the file is wrong.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import type { PlatformChannel } from "../../../channels/module.ts";
import { budgetsSchema } from "../../budgets/config.ts";
import { agentEntryProblems, agentLimitsSchema, agentsSchema } from "../../children/config.ts";
import { modelSpecProblem } from "../../models/spec.ts";
import { DEFAULT_SCHEMA_BUDGET_BYTES } from "../../runtime/tool-catalog.ts";
import { mcpServersSchema } from "../../tools/mcp/config.ts";
import { type Env, fail, nonEmpty } from "../../util/env.ts";
import { closest } from "../../util/suggest.ts";
import { CHANNEL_MODULES, PLATFORM_CHANNELS } from "../channels.ts";
import { type AccountNames, accountsSchema } from "./accounts-schema.ts";
import { bindingSchema } from "./bindings.ts";
import { describeConfigIssues, parseConfigJson } from "./file-errors.ts";
import { MODEL_NAME, modelsSchema, pickableModels } from "./models.ts";
import { SURFACE_KEY_HINT, SURFACE_KEYS, surfaceOverrideSchema } from "./surfaces.ts";

/** The gateway's own tool sets, named beside the MCP servers in a surface's `tools`. */
export const BUILT_IN_TOOL_SETS = [
  "web",
  "schedules",
  "agent",
  "state",
  "history",
  "files",
  "agents",
] as const;

/** Each channel's own section of the file (`"<channel>": {…}`), from its module; {} when absent. */
function channelSections(): { [name in PlatformChannel]?: z.ZodDefault<z.ZodObject> } {
  return Object.fromEntries(
    PLATFORM_CHANNELS.flatMap((name) => {
      const section = CHANNEL_MODULES[name].fileSection;
      return section ? [[name, section.default({})]] : [];
    }),
  );
}

/** The JSON file named by SWITCHBOARD_CONFIG. Versioned so its meaning can evolve. */
const fileSchema = z
  .object({
    /** The config format; 1, the only one so far, when absent. */
    version: z.literal(1).default(1),
    instructions: z.string().max(50_000).optional(),
    instructionsFile: z.string().optional(),
    surfaces: z
      .record(
        z.string().refine((key) => SURFACE_KEYS.includes(key), SURFACE_KEY_HINT),
        surfaceOverrideSchema,
      )
      .default({}),
    /** Settings by match, the first that matches wins over `surfaces` (docs/configuration.md "Bindings"). */
    bindings: z.array(bindingSchema).max(1000).default([]),
    allowBots: z.boolean().default(false),
    /** Named bots per channel, secrets by `${VAR}` (docs/configuration.md "Accounts"). */
    accounts: accountsSchema,
    ...channelSections(),
    mcpServers: mcpServersSchema,
    /** The deferred tool catalog: above budgetBytes of schemas the model searches with tool_search. */
    toolCatalog: z
      .object({
        budgetBytes: z.number().int().min(1024).max(10_000_000).default(DEFAULT_SCHEMA_BUDGET_BYTES),
        /** Tools (as the model sees them) always offered, besides the built-in ones. */
        pinned: z.array(z.string().min(1)).max(100).default([]),
      })
      .strict()
      .default({ budgetBytes: DEFAULT_SCHEMA_BUDGET_BYTES, pinned: [] }),
    /** How long a tool call waits for a decision before it counts as denied ("expired"). */
    approvalTimeoutMs: z
      .number()
      .int()
      .min(1000)
      .max(30 * 86_400_000)
      .default(86_400_000),
    models: modelsSchema,
    /** Token and cost budgets per user and per surface (src/budgets, docs/configuration.md "Budgets"). */
    budgets: budgetsSchema(SURFACE_KEYS, SURFACE_KEY_HINT).optional(),
    /** Child agents a run may start with spawn_agent (docs/configuration.md "Child agents"). */
    agents: agentsSchema,
    agentLimits: agentLimitsSchema,
  })
  .strict()
  .superRefine((file, ctx) => {
    const known = [...BUILT_IN_TOOL_SETS, ...Object.keys(file.mcpServers)];
    const models = Object.keys(file.models).filter((key) => key !== "default");
    for (const problem of agentEntryProblems(file.agents, { toolSets: known, models }))
      ctx.addIssue({ code: "custom", ...problem });
    const checkTools = (tools: readonly string[] | undefined, path: Array<string | number>) => {
      for (const [i, name] of (tools ?? []).entries()) {
        if (known.includes(name)) continue;
        const close = closest(name, known);
        ctx.addIssue({
          code: "custom",
          path: [...path, "tools", i],
          message: `"${name}" is not a tool set${close ? ` (did you mean "${close}"?)` : ""}; tool sets are ${known.join(", ")} (the built-in ones and the names in mcpServers)`,
        });
      }
    };
    for (const [key, surface] of Object.entries(file.surfaces)) checkTools(surface.tools, ["surfaces", key]);
    // A model name means one model everywhere, so /model and the console name the same thing.
    const specs = new Map(Object.entries(pickableModels(file)));
    for (const [index, binding] of file.bindings.entries()) {
      checkTools(binding.tools, ["bindings", index]);
      for (const [name, spec] of Object.entries(binding.models ?? {})) {
        const before = specs.get(name);
        if (before !== undefined && before !== spec)
          ctx.addIssue({
            code: "custom",
            path: ["bindings", index, "models", name],
            message: `"${name}" is already the model ${before}; a name means one model everywhere, so give ${spec} another name`,
          });
        specs.set(name, before ?? spec);
      }
      const model = binding.model;
      if (model === undefined) continue;
      const names = [...Object.keys(pickableModels(file)), ...Object.keys(binding.models ?? {})];
      const isName = MODEL_NAME.test(model) && model !== "offline";
      const problem = isName ? (names.includes(model) ? null : "name") : modelSpecProblem(model);
      if (problem === null) continue;
      ctx.addIssue({
        code: "custom",
        path: ["bindings", index, "model"],
        message:
          problem === "name"
            ? `"${model}" is not one of the models named in "models" or this binding's "models" (${names.join(", ") || "none"}); name one, or give a model spec such as "openrouter:anthropic/claude-sonnet-4"`
            : `"${model}" is not a model spec (${problem}); use "openrouter:<id>", "openai-compatible:<id>", "offline", or a name from "models"`,
      });
    }
  });

export type FileConfig = z.output<typeof fileSchema> & {
  /**
   * Set by loadConfig once the accounts are read (their ids come from expanded secrets): each
   * channel's account ids to their names, for binding facts. Absent: every account is `default`.
   */
  accountNames?: AccountNames;
};

/** The file at `path` (the defaults when unset), and the directory its relative paths start from. */
export function readFileConfig(path: string | undefined): { file: FileConfig; baseDir: string } {
  if (!path) return { file: fileSchema.parse({}), baseDir: process.cwd() };
  const full = resolve(path);
  if (!existsSync(full))
    fail(
      "SWITCHBOARD_CONFIG",
      `points at ${full}, which does not exist`,
      "SWITCHBOARD_CONFIG=./switchboard.json",
    );
  const json = parseConfigJson(readFileSync(full, "utf8"));
  if (!json.ok)
    fail(
      "SWITCHBOARD_CONFIG",
      `(${full}) is not valid JSON: ${json.problem}`,
      'a file containing {"version": 1}',
    );
  const parsed = fileSchema.safeParse(json.value, { reportInput: true });
  if (!parsed.success) {
    fail(
      "SWITCHBOARD_CONFIG",
      `(${full}) is invalid: ${describeConfigIssues(fileSchema, parsed.error.issues, () => SURFACE_KEYS).join("; ")}`,
      'see docs/configuration.md; e.g. {"version":1,"surfaces":{"telegram:dm":{"inputPolicy":"queue"}}}',
    );
  }
  return { file: parsed.data, baseDir: dirname(full) };
}

/** Only the SWITCHBOARD_CONFIG file (for the CLI, which needs its `models` and nothing else). */
export function loadFileConfig(env: Env): FileConfig {
  return readFileConfig(nonEmpty(env, "SWITCHBOARD_CONFIG")).file;
}
