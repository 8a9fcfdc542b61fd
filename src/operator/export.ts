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

type ImportStore = Pick<RuntimeStore, "admit" | "acquireRun" | "commitTerminal" | "listActiveRuns">;

/**
 * Restores an export as a new conversation: each run's inputs are admitted (no channel, so
 * nothing is delivered), then the run is settled with its answer and end state. No model is
 * called. Superseded and absorbed turns are left out, as the model never saw them.
 */
export async function importConversation(
  store: ImportStore,
  clock: Clock,
  text: string,
): Promise<{ conversationId: string; sourceConversationId: string; runs: number; messages: number }> {
  const parsed = parseJsonl(text);
  const digest = createHash("sha256").update(text).digest("hex").slice(0, 16);
  const conversationId = newId("conv", clock.now());
  const byRun = new Map<string, typeof parsed.messages>();
  for (const m of [...parsed.messages].sort((a, b) => a.order - b.order)) {
    const list = byRun.get(m.runId) ?? [];
    list.push(m);
    byRun.set(m.runId, list);
  }
  let runs = 0;
  let messages = 0;
  for (const [sourceRunId, turn] of byRun) {
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
      const parts = input.parts.filter((p): p is InputPart => p.type === "text" || p.type === "file");
      const admitted = await store.admit({
        conversation: { id: conversationId },
        idempotencyKey: `import:${digest}:${input.id}`,
        fingerprint: createHash("sha256").update(JSON.stringify(parts)).digest("hex"),
        parts: parts.length > 0 ? parts : [{ type: "text", text: "" }],
        context: { imported: { from: parsed.header.conversationId, run: sourceRunId } },
        policy: "queue",
        coalescePending: true,
        proposedIds: { runId: newId("run", clock.now()), messageId: newId("msg", clock.now()) },
        nowMs: clock.now(),
      });
      runId = admitted.runId;
      messages += 1;
    }
    const acquired = await store.acquireRun({
      runId: runId!,
      owner: "import",
      nowMs: clock.now(),
      leaseMs: 60_000,
    });
    if (!acquired)
      throw new SwitchboardError("state_conflict", `Could not settle the imported run ${runId}.`);
    const answer = turn.find((m) => m.role === "assistant");
    await store.commitTerminal({
      fence: acquired.fence,
      state: state as TerminalRunState,
      assistantParts: (answer?.parts ?? []) as Message["parts"],
      nowMs: clock.now(),
    });
    if (answer) messages += 1;
    runs += 1;
  }
  return { conversationId, sourceConversationId: parsed.header.conversationId, runs, messages };
}
