/**
 * Conversations: the list (channel, who, newest message), and one conversation newest first with
 * "Load older", command replies among the messages, and its live event stream.
 */
import type { OutboxRecord } from "../../../../../outbox/types.ts";
import type { ChildNode } from "../../../../children/tree.ts";
import type {
  CommandInput,
  ConversationListItem,
  ConversationSummary,
  ConversationUsage,
} from "../../../../operator/types.ts";
import type { RuntimeEvent } from "../../../../runtime/events.ts";
import type { MessagePageItem } from "../../../../runtime/store.ts";
import type { MessagePart, RunState } from "../../../../runtime/types.ts";
import { formatTime, h, idCell, preview, timeCell } from "../dom.js";
import { readEventStream } from "../event-stream.js";
import { renderMarkdown } from "../markdown.js";
import { api, authHeaders, messageOf, type Page, withQuery } from "./api.js";
import { conversationUsageLine } from "./budgets.js";
import { childTreeSection } from "./children.js";
import { href, navigate, type Route } from "./router.js";
import { loadSettings, settingsSection } from "./settings.js";
import { badge, pagedTable, toast } from "./ui.js";

/** Runs whose messages no longer count in the conversation. */
const SET_ASIDE: RunState[] = ["superseded", "absorbed"];

interface ConversationPage {
  conversation: ConversationSummary;
  model: string | null;
  items: MessagePageItem[];
  nextCursor: string | null;
  commands: CommandInput[];
  children: ChildNode[];
}

export async function showConversations(view: HTMLElement, route: Route, live: AbortSignal): Promise<void> {
  if (route.id) return showConversation(view, route.id, live);
  const list = await pagedTable<ConversationListItem>({
    headings: ["Id", "Channel", "With", "Last message", "Runs", "Active", "Last activity"],
    empty: "No conversations yet.",
    load: (cursor) => api<Page<ConversationListItem>>(withQuery("/api/conversations", { cursor, limit: 50 })),
    row: (c) =>
      h(
        "tr",
        { class: "clickable", "data-id": c.id, onclick: () => navigate({ tab: "conversations", id: c.id }) },
        idCell(c.id),
        h("td", {}, c.channel ?? "—"),
        h("td", { title: c.key ?? "" }, c.title ?? c.key ?? "—"),
        h(
          "td",
          { class: "text" },
          c.lastMessage
            ? `${c.lastMessage.role === "user" ? "" : "↳ "}${preview(c.lastMessage.text, 60)}`
            : "—",
        ),
        h("td", { class: "num" }, String(c.runs)),
        h("td", { class: "num" }, String(c.activeRuns)),
        timeCell(c.lastActivityAtMs, Date.now()),
      ),
  });
  view.replaceChildren(h("h2", {}, "Conversations"), list);
}

async function showConversation(view: HTMLElement, id: string, live: AbortSignal): Promise<void> {
  const path = `/api/conversations/${encodeURIComponent(id)}`;
  const [page, replies, usage, settings] = await Promise.all([
    api<ConversationPage>(withQuery(path, { limit: 50 })),
    api<Page<OutboxRecord>>(withQuery("/api/outbox", { conversation: id, limit: 200 })),
    api<ConversationUsage>(`${path}/usage`),
    loadSettings(id),
  ]);
  // Command exchanges are no messages: the command as received, and its reply (an outbox record of no run).
  const commands: Array<{ createdAtMs: number; node: () => HTMLElement }> = [
    // Replies first: newest first, a reply in the same millisecond as its command goes above it.
    ...replies.items
      .filter((r) => !r.runId.startsWith("run_"))
      .map((r) => ({ createdAtMs: r.createdAtMs, node: () => commandNode(r) })),
    ...page.commands.map((c) => ({ createdAtMs: c.atMs, node: () => commandInputNode(c) })),
  ];
  const liveList = h("ol", { class: "live", id: "live-events" });
  const messages = h("div", { class: "messages", id: "messages" });
  let cursor = page.nextCursor;
  const older = h("button", { type: "button", class: "secondary", id: "load-older" }, "Load older");
  // Command replies are shown with the page whose time span they fall in; the last page takes the rest.
  let shownFromMs = Number.POSITIVE_INFINITY;
  const render = (items: MessagePageItem[], append: boolean) => {
    const upToMs = append ? shownFromMs : Number.POSITIVE_INFINITY;
    shownFromMs =
      cursor === null ? Number.NEGATIVE_INFINITY : (items.at(-1)?.message.createdAtMs ?? shownFromMs);
    const inSpan = commands.filter((r) => r.createdAtMs < upToMs && r.createdAtMs >= shownFromMs);
    const nodes = [...items.map(messageNode), ...inSpan.map((c) => c.node())].sort(
      (a, b) => Number(b.dataset.at) - Number(a.dataset.at),
    );
    if (append) messages.append(...nodes);
    else messages.replaceChildren(...(nodes.length ? nodes : [h("p", { class: "muted" }, "No messages.")]));
  };
  render(page.items, false);
  older.hidden = cursor === null;
  older.addEventListener("click", async () => {
    if (cursor === null) return;
    try {
      const next = await api<ConversationPage>(withQuery(path, { cursor, limit: 50 }));
      cursor = next.nextCursor;
      render(next.items, true);
    } catch (error) {
      toast(messageOf(error), true);
    }
    older.hidden = cursor === null;
  });
  view.replaceChildren(
    h("p", {}, h("a", { href: href({ tab: "conversations" }) }, "← all conversations")),
    h("h2", {}, "Conversation ", h("span", { class: "mono" }, id)),
    h(
      "p",
      { class: "muted" },
      page.conversation.key ?? "no channel key",
      ` · ${page.conversation.runs} runs · `,
      h("a", { href: href({ tab: "runs", query: { conversation: id } }) }, "its runs"),
      " · ",
      h("a", { href: href({ tab: "outbox", query: { conversation: id } }) }, "its replies"),
    ),
    conversationUsageLine(usage),
    h(
      "div",
      { class: "split" },
      h("section", {}, h("h3", {}, "Messages, newest first"), messages, older),
      h("section", {}, h("h3", {}, "Live"), liveList),
    ),
    ...(page.children.length > 0 ? [childTreeSection(page.children)] : []),
    settingsSection(settings),
  );
  let refresh: ReturnType<typeof setTimeout> | undefined;
  void followEvents(id, live, (event) => {
    showLiveEvent(liveList, event);
    if (event.type === "terminal" || event.type === "admission") {
      clearTimeout(refresh);
      refresh = setTimeout(async () => {
        const next = await api<ConversationPage>(withQuery(path, { limit: 50 }));
        cursor = next.nextCursor;
        render(next.items, false);
        older.hidden = cursor === null;
      }, 200);
    }
  });
}

function messageNode(item: MessagePageItem): HTMLElement {
  const setAside = SET_ASIDE.includes(item.runState);
  const body = h("div", { class: "bubble-text" });
  renderMarkdown(body, partsText(item.message.parts) || "(no text)");
  return h(
    "article",
    {
      class: `bubble ${item.message.role}${setAside ? " set-aside" : ""}`,
      "data-run-state": item.runState,
      "data-at": String(item.message.createdAtMs),
    },
    body,
    h(
      "div",
      { class: "bubble-meta" },
      `${item.message.role} · ${formatTime(item.message.createdAtMs)} · `,
      badge(item.runState),
      " ",
      h("a", { class: "mono", href: href({ tab: "runs", id: item.message.runId }) }, item.message.runId),
    ),
  );
}

function commandInputNode(input: CommandInput): HTMLElement {
  return h(
    "article",
    { class: "bubble user command", "data-at": String(input.atMs), "data-command": input.command },
    h("div", { class: "bubble-text mono" }, input.text || `/${input.command}`),
    h("div", { class: "bubble-meta" }, `command · ${formatTime(input.atMs)}`),
  );
}

function commandNode(record: OutboxRecord): HTMLElement {
  const body = h("div", { class: "bubble-text" });
  const media = record.kind === "message" ? record.media : null;
  renderMarkdown(body, record.markdown || (media ? "" : "(empty)"));
  return h(
    "article",
    { class: "bubble assistant command", "data-at": String(record.createdAtMs), "data-outbox": record.id },
    media ? h("div", { class: "bubble-file mono" }, `📎 ${media.filename} (${media.mimeType})`) : null,
    body,
    h(
      "div",
      { class: "bubble-meta" },
      `command reply · ${formatTime(record.createdAtMs)} · `,
      badge(record.state),
      " ",
      h("a", { class: "mono", href: href({ tab: "outbox", id: record.id }) }, record.id),
    ),
  );
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

/** Reads the conversation's SSE endpoint with fetch (which can send the token), resuming after the last id. */
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
          ...authHeaders(),
          accept: "text/event-stream",
          ...(lastEventId === null ? {} : { "last-event-id": lastEventId }),
        },
        signal,
      });
      if (response.status === 401) return;
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
