/** Outbox: records with a state filter, one record's detail (text, target, history) and the actions. */
import type { OutboxRecord, OutboxState } from "../../../../../outbox/types.ts";
import { h, idCell, preview, timeCell } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { api, messageOf, type Page, withQuery } from "./api.js";
import { href, navigate, type Route, replaceQuery } from "./router.js";
import { askNote, badge, choice, fields, pagedTable, table, textFilter, toast } from "./ui.js";

type OutboxAction = "retry" | "resolve-delivered" | "resolve-failed" | "cancel";

const OUTBOX_STATES = [
  "pending",
  "sending",
  "delivered",
  "failed",
  "ambiguous",
  "cancelled",
] as const satisfies readonly OutboxState[];

function outboxRow(record: OutboxRecord, reload: () => void): HTMLElement {
  return h(
    "tr",
    { "data-id": record.id },
    idCell(record.id),
    h("td", {}, badge(record.state)),
    h("td", {}, record.channel),
    idCell(record.conversationId),
    h("td", { class: "num" }, String(record.attempts)),
    timeCell(record.updatedAtMs, Date.now()),
    h(
      "td",
      { class: "text", title: record.markdown },
      h(
        "a",
        { href: href({ tab: "outbox", id: record.id }), class: "detail-link" },
        preview(record.markdown, 60) || "(empty)",
      ),
      record.lastError ? h("div", { class: "error small" }, record.lastError) : null,
    ),
    h("td", { class: "actions" }, ...outboxButtons(record, reload)),
  );
}

export async function showOutbox(view: HTMLElement, route: Route): Promise<void> {
  if (route.id) return showRecord(view, route.id);
  const { state, conversation } = route.query;
  const reload = () => navigate({ tab: "outbox", query: route.query });
  const list = await pagedTable<OutboxRecord>({
    headings: ["Id", "State", "Channel", "Conversation", "Attempts", "Updated", "Text", ""],
    empty: "No records.",
    load: (cursor) =>
      api<Page<OutboxRecord>>(withQuery("/api/outbox", { state, conversation, cursor, limit: 100 })),
    row: (record) => outboxRow(record, reload),
  });
  view.replaceChildren(
    h(
      "div",
      { class: "toolbar" },
      h("h2", {}, "Outbox"),
      choice("outbox-filter", "state", OUTBOX_STATES, state, (value) => replaceQuery({ state: value })),
      textFilter("outbox-conversation", "Conversation", conversation, (value) =>
        replaceQuery({ conversation: value }),
      ),
    ),
    list,
  );
}

async function showRecord(view: HTMLElement, id: string): Promise<void> {
  const record = await api<OutboxRecord>(`/api/outbox/${encodeURIComponent(id)}`);
  const reload = () => navigate({ tab: "outbox", id: record.id });
  const text = h("div", { class: "bubble-text", id: "outbox-text" });
  renderMarkdown(text, record.markdown || "(empty)");
  const isRun = record.runId.startsWith("run_");
  view.replaceChildren(
    h("p", {}, h("a", { href: href({ tab: "outbox" }) }, "← all records")),
    h("h2", {}, "Outbox record ", h("span", { class: "mono" }, record.id)),
    h("div", { class: "actions", id: "record-actions" }, ...outboxButtons(record, reload)),
    fields([
      ["State", badge(record.state)],
      [
        "Target",
        h(
          "span",
          { class: "mono", id: "outbox-target" },
          `${record.channel} · ${record.account} · ${record.target}`,
        ),
      ],
      [
        "Conversation",
        h(
          "a",
          { href: href({ tab: "conversations", id: record.conversationId }), id: "outbox-conversation" },
          record.conversationId,
        ),
      ],
      [
        "Run",
        isRun
          ? h("a", { href: href({ tab: "runs", id: record.runId }), id: "outbox-run" }, record.runId)
          : `${record.runId} (a command's reply, not a model run)`,
      ],
      ["Key", h("span", { class: "mono" }, record.key)],
      ["Attempts", String(record.attempts)],
      ["Delivered as", record.receipt ? record.receipt.messageIds.join(", ") : null],
      ["Last error", record.lastError],
    ]),
    h("h3", {}, "Text"),
    text,
    h("h3", {}, "History"),
    table(
      ["When", "Who", "What", "Note"],
      record.history.map((entry) =>
        h(
          "tr",
          { class: "history" },
          timeCell(entry.atMs, Date.now()),
          h("td", { class: "mono" }, entry.actor),
          h("td", {}, entry.action),
          h("td", { class: "text" }, entry.note ?? ""),
        ),
      ),
      "No history.",
    ),
  );
}

function outboxButtons(record: OutboxRecord, reload: () => void): HTMLElement[] {
  const stuck = record.state === "ambiguous" || record.state === "failed";
  const button = (action: OutboxAction, label: string, kind = "secondary") =>
    h(
      "button",
      {
        type: "button",
        class: kind,
        "data-action": action,
        onclick: () => void outboxAction(record, action, reload),
      },
      label,
    );
  return [
    stuck && button("retry", "Retry"),
    stuck && button("resolve-delivered", "Resolve delivered"),
    stuck && button("resolve-failed", "Resolve failed"),
    (stuck || record.state === "pending") && button("cancel", "Never send", "danger"),
  ].filter((b): b is HTMLButtonElement => b !== false);
}

async function outboxAction(record: OutboxRecord, action: OutboxAction, reload: () => void): Promise<void> {
  const resolving = action === "resolve-delivered" || action === "resolve-failed";
  const titles: Record<OutboxAction, string> = {
    retry: "Send it again",
    "resolve-delivered": "Mark as delivered (it is on the platform)",
    "resolve-failed": "Mark as failed (it is not on the platform)",
    cancel: "Never send it",
  };
  const note = await askNote(`${titles[action]}: ${record.id}`, resolving);
  if (note === null) return;
  const path = `/api/outbox/${encodeURIComponent(record.id)}/${resolving ? "resolve" : action}`;
  const body = resolving
    ? { outcome: action === "resolve-delivered" ? "delivered" : "failed", note }
    : note
      ? { note }
      : {};
  try {
    const updated = await api<OutboxRecord>(path, { method: "POST", body });
    toast(`${updated.id} is now ${updated.state}.`);
  } catch (error) {
    toast(messageOf(error), true);
  }
  reload();
}
