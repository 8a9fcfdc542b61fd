/**
 * A conversation as a file: the versioned JSONL export (docs/export-format.md), its Markdown
 * rendering, and the import that restores an export as a new conversation.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import type { OutboxRecord } from "../../outbox/types.ts";
import type { Schedule } from "../../schedules/types.ts";
import { SwitchboardError } from "../errors.ts";
import type { RunRecord, RuntimeStore } from "../runtime/store.ts";
import {
  type InputPart,
  type Message,
  type RunState,
  TERMINAL_RUN_STATES,
  type TerminalRunState,
} from "../runtime/types.ts";
import type { Clock } from "../util/clock.ts";
import { newId } from "../util/ids.ts";
import type { OperatorRuntimeStore } from "./runtime-store.ts";

/** The JSONL format version this build writes and reads. */
export const EXPORT_FORMAT_VERSION = 1;

export interface ConversationExport {
  header: { type: "switchboard-export"; version: number; conversationId: string; exportedAtMs: number };
  messages: Array<{ type: "message"; order: number; runState: RunState } & Omit<Message, "conversationId">>;
  runs: Array<{ type: "run" } & Omit<RunRecord, "context" | "owner" | "fencingToken" | "leaseExpiresAtMs">>;
  schedules: Array<{ type: "schedule" } & Schedule>;
  outbox: Array<{ type: "outbox" } & OutboxRecord>;
}

type ExportStore = Pick<RuntimeStore, "listMessages" | "loadRun">;

/** Reads everything the export holds: messages in order, their runs with usage, schedules, outbox history. */
export async function readConversationExport(
  stores: {
    runtime: ExportStore;
    schedules: (conversationId: string) => Promise<Schedule[]>;
    outbox: (conversationId: string) => Promise<OutboxRecord[]>;
  },
  conversationId: string,
  nowMs: number,
): Promise<ConversationExport> {
  const messages: ConversationExport["messages"] = [];
  let after = 0;
  for (;;) {
    const page = await stores.runtime.listMessages(conversationId, { afterOrder: after, limit: 500 });
    for (const item of page.items) {
      const { conversationId: _, ...message } = item.message;
      messages.push({ type: "message", order: item.order, runState: item.runState, ...message });
    }
    if (page.nextAfterOrder === null) break;
    after = page.nextAfterOrder;
  }
  const runs: ConversationExport["runs"] = [];
  for (const runId of new Set(messages.map((m) => m.runId))) {
    const view = await stores.runtime.loadRun(runId);
    if (!view) continue;
    const { context: _c, owner: _o, fencingToken: _f, leaseExpiresAtMs: _l, ...run } = view.run;
    runs.push({ type: "run", ...run });
  }
  const schedules = (await stores.schedules(conversationId)).map((s) => ({
    type: "schedule" as const,
    ...s,
  }));
  const outbox = (await stores.outbox(conversationId)).map((r) => ({ type: "outbox" as const, ...r }));
  return {
    header: {
      type: "switchboard-export",
      version: EXPORT_FORMAT_VERSION,
      conversationId,
      exportedAtMs: nowMs,
    },
    messages,
    runs,
    schedules,
    outbox,
  };
}

/** One JSON object per line: the header, then messages, runs, schedules and outbox records. */
export function toJsonl(exported: ConversationExport): string {
  return `${[
    exported.header,
    ...exported.messages,
    ...exported.runs,
    ...exported.schedules,
    ...exported.outbox,
  ]
    .map((line) => JSON.stringify(line))
    .join("\n")}\n`;
}

/** The transcript for people: each message under its role and time; files and tools named. */
export function toMarkdown(exported: ConversationExport, options: { maxChars?: number } = {}): string {
  const lines = [`# Conversation ${exported.header.conversationId}`, ""];
  for (const m of exported.messages) {
    if (m.runState === "superseded" || m.runState === "absorbed") continue;
    const when = new Date(m.createdAtMs).toISOString().replace(".000Z", "Z");
    const note = m.role === "assistant" && m.runState !== "completed" ? ` (${m.runState})` : "";
    lines.push(`**${m.role === "user" ? "You" : "Assistant"}** · ${when}${note}`, "");
    const body = m.parts
      .map((p) =>
        p.type === "text"
          ? p.text
          : p.type === "file"
            ? `[file ${p.name ?? p.ref}]`
            : p.type === "tool-call"
              ? `[tool ${p.toolName}]`
              : "",
      )
      .filter((t) => t !== "")
      .join("\n");
    lines.push(body === "" ? "_(empty)_" : body, "");
  }
  const runsWithUsage = exported.runs.filter((r) => r.usage.inputTokens !== undefined);
  const tokens = runsWithUsage.reduce(
    (n, r) => n + (r.usage.inputTokens ?? 0) + (r.usage.outputTokens ?? 0),
    0,
  );
  lines.push(
    `---`,
    `${exported.runs.length} runs · ${tokens} tokens · ${exported.schedules.length} schedules`,
  );
  const text = `${lines.join("\n")}\n`;
  const max = options.maxChars;
  if (max === undefined || text.length <= max) return text;
  return `${text.slice(0, max)}\n\n_(cut here: the full export is \`switchboard conversations export ${exported.header.conversationId}\`)_\n`;
}

const partSchema = z.union([
  z.object({ type: z.literal("text"), text: z.string() }).passthrough(),
  z.object({ type: z.literal("file"), ref: z.string() }).passthrough(),
  z.object({ type: z.string() }).passthrough(),
]);
const headerSchema = z.object({
  type: z.literal("switchboard-export"),
  version: z.number().int(),
  conversationId: z.string(),
  exportedAtMs: z.number(),
});
const messageSchema = z.object({
  type: z.literal("message"),
  order: z.number(),
  id: z.string(),
  runId: z.string(),
  role: z.enum(["user", "assistant"]),
  parts: z.array(partSchema),
  status: z.string(),
  runState: z.string(),
  createdAtMs: z.number(),
});
const lineSchema = z.object({ type: z.enum(["message", "run", "schedule", "outbox"]) }).passthrough();

/** A parsed export; `input_invalid` naming the line and what is wrong for anything else. */
export function parseJsonl(text: string): {
  header: z.infer<typeof headerSchema>;
  messages: z.infer<typeof messageSchema>[];
} {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const refuse = (line: number, problem: string): never => {
    throw new SwitchboardError("input_invalid", `Not a switchboard export: line ${line}: ${problem}.`, {
      details: { line },
    });
  };
  const json = (raw: string, line: number): unknown => {
    try {
      return JSON.parse(raw);
    } catch {
      return refuse(line, "not JSON (the file is cut short or corrupt)");
    }
  };
  if (lines.length === 0) refuse(1, "the file is empty");
  const header = headerSchema.safeParse(json(lines[0]!, 1));
  if (!header.success)
    refuse(1, 'the first line must be the header {"type":"switchboard-export","version":1,…}');
  const version = header.data!.version;
  if (version > EXPORT_FORMAT_VERSION)
    refuse(
      1,
      `format version ${version} is newer than this switchboard reads (${EXPORT_FORMAT_VERSION}); upgrade switchboard`,
    );
  if (version < 1) refuse(1, `format version ${version} does not exist`);
  const messages: z.infer<typeof messageSchema>[] = [];
  lines.slice(1).forEach((raw, index) => {
    const line = index + 2;
    const value = json(raw, line);
    const kind = lineSchema.safeParse(value);
    if (!kind.success) refuse(line, `"type" must be message, run, schedule or outbox`);
    if (kind.data!.type !== "message") return;
    const message = messageSchema.safeParse(value);
    if (!message.success)
      refuse(
        line,
        `a message ${message.error!.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      );
    messages.push(message.data!);
  });
  return { header: header.data!, messages };
}

type RestoreStore = Pick<
  OperatorRuntimeStore,
  "admit" | "acquireRun" | "commitTerminal" | "loadConversation"
>;
type TurnMessage = ReturnType<typeof parseJsonl>["messages"][number];

/**
 * Writes settled turns into `conversationId`: each run's inputs are admitted (a context with no
 * channel: nothing is ever delivered, no reply target, no authority), then the run is settled with
 * its answer and end state under a fresh fence. No model is called. Superseded and absorbed turns
 * are left out, as the model never saw them. Idempotent per `keyPrefix`: a repeat finds its
 * admissions and leaves the runs it already settled alone.
 */
async function restoreTurns(
  store: RestoreStore,
  clock: Clock,
  target: { conversationId: string; keyPrefix: string; context: unknown },
  source: readonly TurnMessage[],
): Promise<{ runs: number; messages: number }> {
  const byRun = new Map<string, TurnMessage[]>();
  for (const m of [...source].sort((a, b) => a.order - b.order)) {
    const list = byRun.get(m.runId) ?? [];
    list.push(m);
    byRun.set(m.runId, list);
  }
  let runs = 0;
  let messages = 0;
  for (const turn of byRun.values()) {
    const state = turn[0]!.runState;
    if (
      state === "superseded" ||
      state === "absorbed" ||
      !TERMINAL_RUN_STATES.includes(state as TerminalRunState)
    )
      continue;
    const inputs = turn.filter((m) => m.role === "user");
    if (inputs.length === 0) continue;
    let runId: string | null = null;
    for (const input of inputs) {
      const parts = input.parts.filter((p) => p.type === "text" || p.type === "file") as InputPart[];
      const admitted = await store.admit({
        conversation: { id: target.conversationId },
        idempotencyKey: `${target.keyPrefix}:${input.id}`,
        fingerprint: createHash("sha256").update(JSON.stringify(parts)).digest("hex"),
        parts: parts.length > 0 ? parts : [{ type: "text", text: "" }],
        context: target.context,
        policy: "queue",
        coalescePending: true,
        proposedIds: { runId: newId("run", clock.now()), messageId: newId("msg", clock.now()) },
        nowMs: clock.now(),
      });
      runId = admitted.runId;
      messages += 1;
    }
    const answer = turn.find((m) => m.role === "assistant");
    if (answer) messages += 1;
    runs += 1;
    const acquired = await store.acquireRun({
      runId: runId!,
      owner: "restore",
      nowMs: clock.now(),
      leaseMs: 60_000,
    });
    // Null: settled by an earlier attempt of the same request.
    if (!acquired) continue;
    await store.commitTerminal({
      fence: acquired.fence,
      state: state as TerminalRunState,
      assistantParts: (answer?.parts ?? []) as Message["parts"],
      nowMs: clock.now(),
    });
  }
  return { runs, messages };
}

/** Restores an export as a new conversation (see restoreTurns). */
export async function importConversation(
  store: RestoreStore,
  clock: Clock,
  text: string,
): Promise<{ conversationId: string; sourceConversationId: string; runs: number; messages: number }> {
  const parsed = parseJsonl(text);
  const digest = createHash("sha256").update(text).digest("hex").slice(0, 16);
  const conversationId = newId("conv", clock.now());
  const restored = await restoreTurns(
    store,
    clock,
    {
      conversationId,
      keyPrefix: `import:${digest}`,
      context: { imported: { from: parsed.header.conversationId } },
    },
    parsed.messages,
  );
  return { conversationId, sourceConversationId: parsed.header.conversationId, ...restored };
}

export interface BranchResult {
  outcome: "created" | "duplicate";
  conversationId: string;
  sourceConversationId: string;
  /** The last run of the copied prefix. */
  throughRunId: string;
  runs: number;
  messages: number;
}

/**
 * Copies the settled prefix of a conversation, through `throughRunId` (default: up to the first
 * run still active), into a new conversation whose id derives from the request, so a retry returns
 * the same copy. The copy carries no authority (no channel, no reply target), no fences (its runs
 * are new) and no pending effects (settled runs only; no schedules, no outbox records).
 */
export async function branchConversation(
  store: RestoreStore,
  clock: Clock,
  source: ConversationExport,
  throughRunId: string | undefined,
): Promise<BranchResult> {
  const sourceId = source.header.conversationId;
  const ordered = [...source.messages].sort((a, b) => a.order - b.order);
  const runOrder: string[] = [];
  for (const m of ordered) if (!runOrder.includes(m.runId)) runOrder.push(m.runId);
  const settled = (runId: string) => {
    const state = ordered.find((m) => m.runId === runId)!.runState;
    return TERMINAL_RUN_STATES.includes(state as TerminalRunState);
  };
  let through = throughRunId;
  if (through === undefined) {
    const firstActive = runOrder.findIndex((id) => !settled(id));
    const prefix = firstActive === -1 ? runOrder : runOrder.slice(0, firstActive);
    through = prefix.at(-1);
    if (through === undefined)
      throw new SwitchboardError(
        "state_conflict",
        `Conversation ${sourceId} has no settled run to branch from yet.`,
      );
  } else if (!runOrder.includes(through)) {
    throw new SwitchboardError(
      "input_invalid",
      `Run ${through} is not a run of conversation ${sourceId}; list them with \`switchboard runs list --conversation ${sourceId}\`.`,
      { details: { field: "through" } },
    );
  } else if (!settled(through)) {
    throw new SwitchboardError("state_conflict", `Run ${through} is still active; branch at a settled run.`, {
      details: { runId: through },
    });
  }
  const prefixRuns = new Set(runOrder.slice(0, runOrder.indexOf(through) + 1));
  if ([...prefixRuns].some((id) => !settled(id)))
    throw new SwitchboardError("state_conflict", `The prefix through ${through} holds a run still active.`);
  const conversationId = `conv_br_${createHash("sha256").update(`${sourceId}\n${through}`).digest("hex").slice(0, 24)}`;
  const existed = (await store.loadConversation(conversationId)) !== null;
  const restored = await restoreTurns(
    store,
    clock,
    {
      conversationId,
      keyPrefix: `branch:${conversationId}`,
      context: { branched: { from: sourceId, through } },
    },
    ordered.filter((m) => prefixRuns.has(m.runId)) as TurnMessage[],
  );
  return {
    outcome: existed ? "duplicate" : "created",
    conversationId,
    sourceConversationId: sourceId,
    throughRunId: through,
    ...restored,
  };
}
