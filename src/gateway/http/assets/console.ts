/**
 * The operator console: a token sign-in (kept in sessionStorage) and three tabs over the operator
 * API. The live view of a conversation reads the SSE endpoint with fetch() so it can send the
 * Authorization header (EventSource cannot), resuming with Last-Event-ID after a drop.
 */
import type { OutboxRecord, OutboxState } from "../../../../outbox/types.ts";
import type { Schedule } from "../../../../schedules/types.ts";
import type { ConversationSummary } from "../../../operator/types.ts";
import type { RuntimeEvent } from "../../../runtime/events.ts";
import type { ApprovalRecord, MessagePageItem } from "../../../runtime/store.ts";
import type { MessagePart, RunState } from "../../../runtime/types.ts";
import { byId, formatTime, h, idCell, preview, timeCell } from "./dom.js";
import { readEventStream } from "./event-stream.js";
import { renderMarkdown } from "./markdown.js";

type Tab = "conversations" | "outbox" | "approvals" | "schedules";
type OutboxAction = "retry" | "resolve-delivered" | "resolve-failed" | "cancel";

const TOKEN_KEY = "switchboard.operatorToken";
const OUTBOX_STATES: OutboxState[] = ["pending", "sending", "delivered", "failed", "ambiguous", "cancelled"];
/** Runs whose messages no longer count in the conversation. */
const SET_ASIDE: RunState[] = ["superseded", "absorbed"];

const view = byId("view");
const state = {
  tab: "conversations" as Tab,
  outboxFilter: "" as OutboxState | "",
  showEndedSchedules: false,
  showDecidedApprovals: false,
  live: null as AbortController | null,
};

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function api<T>(path: string, init: { method?: "GET" | "POST"; body?: unknown } = {}): Promise<T> {
  const response = await fetch(path, {
    method: init.method ?? "GET",
    headers: {
      authorization: `Bearer ${token() ?? ""}`,
      "x-switchboard-actor": "console",
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const body = (await response.json().catch(() => null)) as {
    error?: { code: string; message: string };
  } | null;
  if (!response.ok) {
    const error = new ApiError(
      response.status,
      body?.error?.code ?? "http",
      body?.error?.message ?? `HTTP ${response.status}`,
    );
    if (response.status === 401) signOut(error.message);
    throw error;
  }
  return body as T;
}

// ---------- sign-in ----------

function signOut(message?: string): void {
  sessionStorage.removeItem(TOKEN_KEY);
  state.live?.abort();
  byId("tabs").hidden = true;
  byId("logout").hidden = true;
  view.hidden = true;
  byId("login").hidden = false;
  const error = byId("login-error");
  error.hidden = !message;
  error.textContent = message ?? "";
}

async function signIn(event: Event): Promise<void> {
  event.preventDefault();
  const input = byId<HTMLInputElement>("token");
  sessionStorage.setItem(TOKEN_KEY, input.value.trim());
  try {
    await api("/api/conversations?limit=1");
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) signOut(messageOf(error));
    return;
  }
  input.value = "";
  showApp();
}

function showApp(): void {
  byId("login").hidden = true;
  byId("tabs").hidden = false;
  byId("logout").hidden = false;
  view.hidden = false;
  void openTab(state.tab);
}

async function openTab(tab: Tab): Promise<void> {
  state.tab = tab;
  state.live?.abort();
  for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>("#tabs button")))
    button.classList.toggle("active", button.dataset.tab === tab);
  view.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  try {
    if (tab === "conversations") await showConversations();
    else if (tab === "outbox") await showOutbox();
    else if (tab === "approvals") await showApprovals();
    else await showSchedules();
  } catch (error) {
    view.replaceChildren(h("p", { class: "error" }, messageOf(error)));
  }
}

// ---------- conversations ----------

async function showConversations(): Promise<void> {
  const { items: conversations } = await api<{ items: ConversationSummary[] }>(
    "/api/conversations?limit=100",
  );
  const rows = conversations.map((c) =>
    h(
      "tr",
      { class: "clickable", "data-id": c.id, onclick: () => void showConversation(c.id) },
      idCell(c.id),
      idCell(c.key),
      h("td", { class: "num" }, String(c.runs)),
      h("td", { class: "num" }, String(c.activeRuns)),
      timeCell(c.lastActivityAtMs ?? c.createdAtMs, Date.now()),
    ),
  );
  view.replaceChildren(
    h("h2", {}, "Conversations"),
    table(["Id", "Key", "Runs", "Active", "Last activity"], rows, "No conversations yet."),
  );
}

async function showConversation(id: string): Promise<void> {
  state.live?.abort();
  const page = await api<{ conversation: ConversationSummary; items: MessagePageItem[] }>(
    `/api/conversations/${encodeURIComponent(id)}?limit=200`,
  );
  const live = h("ol", { class: "live", id: "live-events" });
  const messages = h("div", { class: "messages", id: "messages" });
  renderMessages(messages, [...page.items].reverse());
  view.replaceChildren(
    h(
      "p",
      {},
      h(
        "button",
        { type: "button", class: "link", onclick: () => void openTab("conversations") },
        "← all conversations",
      ),
    ),
    h("h2", {}, "Conversation ", h("span", { class: "mono" }, id)),
    h(
      "p",
      { class: "muted" },
      page.conversation.key ?? "no channel key",
      ` · ${page.conversation.runs} runs`,
    ),
    h(
      "div",
      { class: "split" },
      h("section", {}, h("h3", {}, "Messages"), messages),
      h("section", {}, h("h3", {}, "Live"), live),
    ),
  );
  const abort = new AbortController();
  state.live = abort;
  let refresh: ReturnType<typeof setTimeout> | undefined;
  void followEvents(id, abort.signal, (event) => {
    showLiveEvent(live, event);
    if (event.type === "terminal" || event.type === "admission") {
      clearTimeout(refresh);
      refresh = setTimeout(async () => {
        const next = await api<{ items: MessagePageItem[] }>(
          `/api/conversations/${encodeURIComponent(id)}?limit=200`,
        );
        renderMessages(messages, [...next.items].reverse());
      }, 200);
    }
  });
}

function renderMessages(container: HTMLElement, items: MessagePageItem[]): void {
  const nodes = items.map((item) => {
    const setAside = SET_ASIDE.includes(item.runState);
    const body = h("div", { class: "bubble-text" });
    renderMarkdown(body, partsText(item.message.parts) || "(no text)");
    return h(
      "article",
      {
        class: `bubble ${item.message.role}${setAside ? " set-aside" : ""}`,
        "data-run-state": item.runState,
      },
      body,
      h(
        "div",
        { class: "bubble-meta" },
        `${item.message.role} · ${formatTime(item.message.createdAtMs)} · `,
        badge(item.runState),
        h("span", { class: "mono" }, ` ${item.message.runId}`),
      ),
    );
  });
  container.replaceChildren(...(nodes.length ? nodes : [h("p", { class: "muted" }, "No messages.")]));
}

function partsText(parts: MessagePart[]): string {
  return parts
    .map((part) => {
      if (part.type === "text") return part.text;
      if (part.type === "tool-call") return `🔧 ${part.toolName}`;
      if (part.type === "file") return `📎 ${part.name ?? part.ref}`;
      return "";
    })
    .filter(Boolean)
    .join("\n\n");
}

function showLiveEvent(list: HTMLElement, event: RuntimeEvent): void {
  if ("delta" in event) {
    const id = `delta-${event.runId}`;
    const existing = document.getElementById(id);
    if (existing) existing.textContent += event.delta;
    else
      list.prepend(
        h(
          "li",
          {},
          h("span", { class: "mono" }, `${event.runId} `),
          h("span", { id, class: "delta" }, event.delta),
        ),
      );
    return;
  }
  const label =
    event.type === "run-state" || event.type === "terminal"
      ? badge(event.state)
      : event.type === "admission"
        ? h("span", {}, event.outcome)
        : event.type === "checkpoint"
          ? h("span", {}, `step ${event.step}`)
          : event.type === "tool-status"
            ? h("span", {}, `${event.toolName} ${event.status}`)
            : event.type === "state"
              ? h("span", {}, `${event.slot} v${event.version} by ${event.actor}`)
              : h("span", {}, event.reason);
  list.prepend(
    h(
      "li",
      { "data-type": event.type },
      h("span", { class: "mono" }, `${event.runId} `),
      `${event.type} `,
      label,
    ),
  );
  while (list.children.length > 100) list.lastElementChild?.remove();
}

/** Reads the conversation's SSE endpoint with fetch, reconnecting after the last id it saw. */
async function followEvents(
  id: string,
  signal: AbortSignal,
  onEvent: (event: RuntimeEvent) => void,
): Promise<void> {
  let lastEventId = null as string | null;
  while (!signal.aborted) {
    try {
      const response = await fetch(`/api/conversations/${encodeURIComponent(id)}/events`, {
        headers: {
          authorization: `Bearer ${token() ?? ""}`,
          accept: "text/event-stream",
          ...(lastEventId === null ? {} : { "last-event-id": lastEventId }),
        },
        signal,
      });
      if (response.status === 401) return signOut("The operator token was refused.");
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
      await readEventStream(response, (frame) => {
        if (frame.id !== null) lastEventId = frame.id;
        if (frame.data !== null) onEvent(JSON.parse(frame.data) as RuntimeEvent);
      });
    } catch {
      if (signal.aborted) return;
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

// ---------- outbox ----------

async function showOutbox(): Promise<void> {
  const query = state.outboxFilter ? `?state=${state.outboxFilter}&limit=200` : "?limit=200";
  const { items: records } = await api<{ items: OutboxRecord[] }>(`/api/outbox${query}`);
  const filter = h(
    "select",
    {
      id: "outbox-filter",
      onchange: (event) => {
        state.outboxFilter = (event.target as HTMLSelectElement).value as OutboxState | "";
        void openTab("outbox");
      },
    },
    h("option", { value: "" }, "all states"),
    ...OUTBOX_STATES.map((s) => h("option", { value: s, selected: s === state.outboxFilter }, s)),
  );
  const rows = records.map((record) =>
    h(
      "tr",
      { "data-id": record.id },
      idCell(record.id),
      h("td", {}, badge(record.state)),
      h("td", {}, `${record.channel}`),
      idCell(record.conversationId),
      h("td", { class: "num" }, String(record.attempts)),
      timeCell(record.updatedAtMs, Date.now()),
      h(
        "td",
        { class: "text", title: record.markdown },
        preview(record.markdown, 60),
        record.lastError ? h("div", { class: "error small" }, record.lastError) : null,
      ),
      h("td", { class: "actions" }, ...outboxButtons(record)),
    ),
  );
  view.replaceChildren(
    h("div", { class: "toolbar" }, h("h2", {}, "Outbox"), h("label", {}, "State ", filter)),
    table(["Id", "State", "Channel", "Conversation", "Attempts", "Updated", "Text", ""], rows, "No records."),
  );
}

function outboxButtons(record: OutboxRecord): HTMLElement[] {
  const stuck = record.state === "ambiguous" || record.state === "failed";
  const button = (action: OutboxAction, label: string, kind = "secondary") =>
    h(
      "button",
      {
        type: "button",
        class: kind,
        "data-action": action,
        onclick: () => void outboxAction(record, action),
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

async function outboxAction(record: OutboxRecord, action: OutboxAction): Promise<void> {
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
  await openTab("outbox");
}

// ---------- approvals ----------

/** Tool calls waiting for a person (pending first by default); an operator approves or denies. */
async function showApprovals(): Promise<void> {
  const all = h("input", {
    type: "checkbox",
    id: "show-decided",
    checked: state.showDecidedApprovals,
    onchange: (event) => {
      state.showDecidedApprovals = (event.target as HTMLInputElement).checked;
      void openTab("approvals");
    },
  });
  const approvals = await api<ApprovalRecord[]>(
    `/api/approvals?limit=100${state.showDecidedApprovals ? "" : "&state=pending"}`,
  );
  const rows = approvals.map((a) =>
    h(
      "tr",
      { "data-id": a.id },
      idCell(a.id),
      h("td", {}, badge(a.state)),
      h("td", { class: "mono" }, a.toolName),
      h(
        "td",
        { class: "text mono small", title: JSON.stringify(a.input) },
        preview(JSON.stringify(a.input), 80),
      ),
      idCell(a.conversationId),
      timeCell(a.createdAtMs, Date.now()),
      timeCell(a.state === "pending" ? a.expiresAtMs : a.decidedAtMs, Date.now()),
      h("td", {}, a.decidedBy ?? "—"),
      h("td", { class: "actions" }, ...approvalButtons(a)),
    ),
  );
  view.replaceChildren(
    h("div", { class: "toolbar" }, h("h2", {}, "Approvals"), h("label", {}, all, " show decided")),
    table(
      ["Id", "State", "Tool", "Arguments", "Conversation", "Asked", "Expires / decided", "By", ""],
      rows,
      state.showDecidedApprovals ? "No approval requests." : "Nothing waits for a decision.",
    ),
  );
}

function approvalButtons(a: ApprovalRecord): HTMLElement[] {
  if (a.state !== "pending") return [];
  const path = (decision: string) => `/api/approvals/${encodeURIComponent(a.id)}/${decision}`;
  return [
    postButton("approve", "Approve the call", "secondary", path("approve"), "approvals"),
    postButton("deny", "Deny the call", "danger", path("deny"), "approvals"),
  ];
}

// ---------- schedules ----------

async function showSchedules(): Promise<void> {
  const schedules = await api<Schedule[]>(`/api/schedules${state.showEndedSchedules ? "?all=1" : ""}`);
  const ended = h("input", {
    type: "checkbox",
    id: "show-ended",
    checked: state.showEndedSchedules,
    onchange: (event) => {
      state.showEndedSchedules = (event.target as HTMLInputElement).checked;
      void openTab("schedules");
    },
  });
  const rows = schedules.map((s) =>
    h(
      "tr",
      { "data-id": s.id },
      idCell(s.id),
      h("td", {}, badge(s.state)),
      h("td", {}, timing(s)),
      timeCell(s.nextAtMs, Date.now()),
      idCell(s.chatKey),
      idCell(s.conversationId),
      h(
        "td",
        { class: "text", title: s.prompt },
        preview(s.prompt, 60),
        s.lastError ? h("div", { class: "error small" }, s.lastError) : null,
      ),
      h("td", { class: "actions" }, ...scheduleButtons(s)),
    ),
  );
  view.replaceChildren(
    h("div", { class: "toolbar" }, h("h2", {}, "Schedules"), h("label", {}, ended, " show ended")),
    table(["Id", "State", "When", "Next run", "Chat", "Conversation", "Prompt", ""], rows, "No schedules."),
  );
}

function timing(s: Schedule): string {
  if (s.kind === "at") return `once at ${formatTime(s.spec.atMs)}`;
  if (s.spec.type === "cron") return `cron ${s.spec.expression} (${s.timezone})`;
  return `every ${Math.round(s.spec.intervalMs / 60000)} min`;
}

function scheduleButtons(s: Schedule): HTMLElement[] {
  const act = (action: "pause" | "resume" | "cancel", label: string, kind = "secondary") =>
    postButton(action, label, kind, `/api/schedules/${encodeURIComponent(s.id)}/${action}`, "schedules");
  return [
    s.state === "active" && act("pause", "Pause"),
    s.state === "paused" && act("resume", "Resume"),
    (s.state === "active" || s.state === "paused") && act("cancel", "End schedule", "danger"),
  ].filter((b): b is HTMLButtonElement => b !== false);
}

/** A button that POSTs `path`, says what the record's state became, and reopens `tab`. */
function postButton(action: string, label: string, kind: string, path: string, tab: Tab): HTMLButtonElement {
  return h(
    "button",
    {
      type: "button",
      class: kind,
      "data-action": action,
      onclick: async () => {
        try {
          const updated = await api<{ id: string; state: string }>(path, { method: "POST" });
          toast(`${updated.id} is now ${updated.state}.`);
        } catch (error) {
          toast(messageOf(error), true);
        }
        await openTab(tab);
      },
    },
    label,
  );
}

// ---------- shared ----------

function badge(value: string): HTMLElement {
  return h("span", { class: `badge state-${value}`, "data-state": value }, value);
}

function table(headings: string[], rows: HTMLElement[], empty: string): HTMLElement {
  if (rows.length === 0) return h("p", { class: "muted" }, empty);
  const head = h("thead", {}, h("tr", {}, ...headings.map((t) => h("th", {}, t))));
  return h("div", { class: "table-wrap" }, h("table", {}, head, h("tbody", {}, ...rows)));
}

/** The note dialog; null when the operator cancelled. */
function askNote(title: string, required: boolean): Promise<string | null> {
  const dialog = byId<HTMLDialogElement>("note-dialog");
  const input = byId<HTMLTextAreaElement>("note-input");
  const error = byId("note-error");
  byId("note-title").textContent = title;
  byId("note-label").textContent = required
    ? "Note (required): what did you check on the platform?"
    : "Note (optional)";
  input.value = "";
  error.hidden = true;
  dialog.showModal();
  return new Promise((resolve) => {
    const form = byId<HTMLFormElement>("note-form");
    const cancel = byId("note-cancel");
    const finish = (value: string | null) => {
      form.removeEventListener("submit", onSubmit);
      cancel.removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      dialog.close();
      resolve(value);
    };
    const onSubmit = (event: Event) => {
      event.preventDefault();
      const note = input.value.trim();
      if (required && note === "") {
        error.textContent = "Write a note: it is kept in the record's history.";
        error.hidden = false;
        return;
      }
      finish(note);
    };
    const onCancel = () => finish(null);
    form.addEventListener("submit", onSubmit);
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
  });
}

let toastTimer: ReturnType<typeof setTimeout> | undefined;
function toast(message: string, isError = false): void {
  const element = byId("toast");
  element.textContent = message;
  element.classList.toggle("error", isError);
  element.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    element.hidden = true;
  }, 4000);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

byId("login-form").addEventListener("submit", (event) => void signIn(event));
byId("logout").addEventListener("click", () => signOut());
for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>("#tabs button")))
  button.addEventListener("click", () => void openTab(button.dataset.tab as Tab));
if (token()) showApp();
else signOut();
