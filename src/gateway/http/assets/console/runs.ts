/** Runs: the list with state and conversation filters, and one run's detail. */
import type { RunDetail, RunListItem } from "../../../../operator/types.ts";
import type { RunState } from "../../../../runtime/types.ts";
import { h, idCell, timeCell } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { api, type Page, withQuery } from "./api.js";
import { childTreeSection } from "./children.js";
import { href, navigate, type Route, replaceQuery } from "./router.js";
import { badge, choice, cost, duration, fields, pagedTable, table, textFilter, tokens } from "./ui.js";

// Browser code imports types only; tsc checks this list against RunState.
export const RUN_STATES = [
  "queued",
  "running",
  "interrupt_requested",
  "completed",
  "interrupted",
  "superseded",
  "failed",
  "timeout",
  "policy_stop",
  "absorbed",
  "cancelled",
  "awaiting_approval",
] as const satisfies readonly RunState[];

/** Where the run came from, as its context says (a run admitted by a test or tool has none). */
function origin(context: unknown): { channel: string | null; surface: string | null; who: string | null } {
  const c = (context ?? {}) as {
    channel?: string;
    surface?: string;
    principal?: { id?: string; name?: string };
  };
  return {
    channel: c.channel ?? null,
    surface: c.surface ?? null,
    who: c.principal?.name ?? c.principal?.id ?? null,
  };
}

function runDuration(run: { startedAtMs: number | null; finishedAtMs: number | null }): number | null {
  if (run.startedAtMs === null) return null;
  return (run.finishedAtMs ?? Date.now()) - run.startedAtMs;
}

export function runRow(run: RunListItem): HTMLElement {
  const from = origin(run.context);
  return h(
    "tr",
    { "data-id": run.id, class: "clickable", onclick: () => navigate({ tab: "runs", id: run.id }) },
    idCell(run.id),
    h("td", {}, badge(run.state)),
    h("td", {}, [from.channel, from.surface].filter(Boolean).join(" · ") || "—"),
    h("td", { class: "mono small" }, run.model ?? "—"),
    h("td", { class: "num" }, duration(runDuration(run))),
    h("td", { class: "num" }, tokens(run.usage)),
    h("td", { class: "num" }, cost(run.usage, run.costComplete)),
    timeCell(run.createdAtMs, Date.now()),
  );
}

export async function showRuns(view: HTMLElement, route: Route): Promise<void> {
  if (route.id) return showRun(view, route.id);
  const { state, conversation } = route.query;
  const list = await pagedTable<RunListItem>({
    headings: ["Id", "State", "Surface", "Model", "Duration", "Tokens", "Cost", "Created"],
    empty: "No runs match.",
    load: (cursor) =>
      api<Page<RunListItem>>(withQuery("/api/runs", { state, conversation, cursor, limit: 50 })),
    row: runRow,
  });
  view.replaceChildren(
    h(
      "div",
      { class: "toolbar" },
      h("h2", {}, "Runs"),
      choice("runs-state", "state", RUN_STATES, state, (value) => replaceQuery({ state: value })),
      textFilter("runs-conversation", "Conversation", conversation, (value) =>
        replaceQuery({ conversation: value }),
      ),
    ),
    list,
  );
}

async function showRun(view: HTMLElement, id: string): Promise<void> {
  const detail = await api<RunDetail>(`/api/runs/${encodeURIComponent(id)}`);
  const { run } = detail;
  const from = origin(run.context);
  const answer = h("div", { class: "bubble-text answer", id: "run-answer" });
  renderMarkdown(answer, detail.answerText || "(no answer yet)");
  view.replaceChildren(
    h("p", {}, h("a", { href: href({ tab: "runs" }) }, "← all runs")),
    h("h2", {}, "Run ", h("span", { class: "mono" }, run.id)),
    fields([
      ["State", badge(run.state)],
      [
        "Conversation",
        h(
          "a",
          { href: href({ tab: "conversations", id: run.conversationId }), id: "run-conversation" },
          run.conversationId,
        ),
      ],
      ["Channel", [from.channel, from.surface].filter(Boolean).join(" · ") || null],
      ["From", from.who],
      ["Model", detail.steps.at(-1)?.model ?? null],
      ["Duration", duration(runDuration(run))],
      ["Usage", `${tokens(detail.usage)} · cost ${cost(detail.usage, run.costComplete)}`],
      ["Stop reason", run.stopReason],
      ["Error", run.error],
      ...(detail.childOf
        ? ([
            [
              "Child agent of",
              h(
                "a",
                { href: href({ tab: "runs", id: detail.childOf.parentRunId }), id: "run-parent" },
                `${detail.childOf.parentRunId} (as ${detail.childOf.handle}, ${detail.childOf.agent})`,
              ),
            ],
          ] as Array<[string, Node]>)
        : []),
    ]),
    h("h3", {}, "Steps"),
    table(
      ["Step", "Model", "Finish", "Duration", "Tokens", "Cost"],
      detail.steps.map((s) =>
        h(
          "tr",
          { "data-step": String(s.step) },
          h("td", { class: "num" }, String(s.step)),
          h("td", { class: "mono small" }, s.model),
          h("td", {}, s.finishReason),
          h("td", { class: "num" }, duration(s.finishedAtMs - s.startedAtMs)),
          h("td", { class: "num" }, tokens(s.usage)),
          h("td", { class: "num" }, cost(s.usage)),
        ),
      ),
      "No model step yet.",
    ),
    h("h3", {}, "Tool calls"),
    table(
      ["Tool", "Outcome", "Started", "Duration", "Attempts", "Call id"],
      detail.toolCalls.map((c) =>
        h(
          "tr",
          { "data-tool-call": c.toolCallId },
          h("td", { class: "mono" }, c.toolName),
          h("td", {}, badge(c.outcome)),
          timeCell(c.startedAtMs, Date.now()),
          h("td", { class: "num" }, duration(c.durationMs)),
          h("td", { class: "num" }, String(c.attempts)),
          idCell(c.toolCallId),
        ),
      ),
      "No tool calls.",
    ),
    ...(detail.children.length > 0 ? [childTreeSection(detail.children)] : []),
    h("h3", {}, "Answer"),
    answer,
  );
}
