/**
 * Global search. An id (`run_…`, `obx_…`, `conv_…`, `ap_…`) opens that record; other words search
 * the message history (the store's full-text search) and, on the server, every conversation whose
 * user id, user name or channel key contains them, most recently active first. Filters: channel,
 * the state of a message's run, and a date range.
 */
import type { ConversationListItem, RunDetail } from "../../../../operator/types.ts";
import type { SearchHit } from "../../../../search/store.ts";
import { h, idCell, timeCell } from "../dom.js";
import { ApiError, api, type Page, withQuery } from "./api.js";
import { href, navigate, type Route, replaceQuery, type Tab } from "./router.js";
import { choice, table, textFilter } from "./ui.js";

const CHANNELS = ["telegram", "discord", "slack", "whatsapp", "matrix", "web", "api"] as const;
const RUN_STATES = [
  "completed",
  "failed",
  "interrupted",
  "superseded",
  "absorbed",
  "cancelled",
  "awaiting_approval",
  "queued",
  "running",
];
/** How many matching conversations one search shows (the most recently active). */
const PEOPLE_SHOWN = 100;

const ID_TABS: Array<[RegExp, Tab, string]> = [
  [/^run_/, "runs", "/api/runs/"],
  [/^obx_/, "outbox", "/api/outbox/"],
  [/^conv_/, "conversations", "/api/conversations/"],
];

export async function showSearch(view: HTMLElement, route: Route): Promise<void> {
  const { q = "", channel, state, from, to } = route.query;
  const form = h(
    "form",
    {
      id: "search-form",
      class: "toolbar",
      onsubmit: (event) => {
        event.preventDefault();
        replaceQuery({ q: (document.getElementById("search-q") as HTMLInputElement).value.trim() });
      },
    },
    h("h2", {}, "Search"),
    h("input", {
      id: "search-q",
      type: "search",
      value: q,
      placeholder: "an id, a user, or words",
      autofocus: true,
    }),
    h("button", { type: "submit" }, "Search"),
    choice("search-channel", "channel", CHANNELS, channel, (value) => replaceQuery({ channel: value })),
    choice("search-state", "run state", RUN_STATES, state, (value) => replaceQuery({ state: value })),
    textFilter("search-from", "From", from, (value) => replaceQuery({ from: value }), "date"),
    textFilter("search-to", "To", to, (value) => replaceQuery({ to: value }), "date"),
  );
  if (q === "") {
    view.replaceChildren(
      form,
      h(
        "p",
        { class: "muted" },
        "Type an id (run_…, obx_…, conv_…), a user's name or id, or words from a message.",
      ),
    );
    return;
  }
  const idRoute = ID_TABS.find(([pattern]) => pattern.test(q));
  if (idRoute) {
    const [, tab, path] = idRoute;
    try {
      await api(`${path}${encodeURIComponent(q)}`);
      navigate({ tab, id: q });
      return;
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
      view.replaceChildren(
        form,
        h("p", { class: "muted", id: "search-empty" }, `No ${tab.replace(/s$/, "")} ${q}.`),
      );
      return;
    }
  }
  const fromMs = from ? Date.parse(`${from}T00:00:00`) : Number.NEGATIVE_INFINITY;
  const toMs = to ? Date.parse(`${to}T23:59:59.999`) : Number.POSITIVE_INFINITY;
  const inRange = (ms: number | null) => ms !== null && ms >= fromMs && ms <= toMs;
  const noneWhenInvalid = (error: unknown): never[] => {
    if (error instanceof ApiError && error.code === "input_invalid") return [];
    throw error;
  };
  const [hits, matched] = await Promise.all([
    api<SearchHit[]>(withQuery("/api/search", { q, limit: 100 })).catch(noneWhenInvalid),
    api<Page<ConversationListItem>>(withQuery("/api/conversations", { q, limit: PEOPLE_SHOWN })).catch(
      (error: unknown): Page<ConversationListItem> => ({ items: noneWhenInvalid(error), nextCursor: null }),
    ),
  ]);
  const conversations = matched.items;
  const byChannel = (c: ConversationListItem) =>
    !channel || c.channel === channel || c.key?.startsWith(`${channel}:`);
  const people = conversations.filter((c) => byChannel(c) && inRange(c.lastActivityAtMs ?? c.createdAtMs));
  const runOf = state || channel ? await runFacts(hits.map((hit) => hit.runId)) : new Map<string, RunFacts>();
  const messages = hits.filter(
    (hit) =>
      inRange(hit.atMs) &&
      (!channel || runOf.get(hit.runId)?.channel === channel) &&
      (!state || runOf.get(hit.runId)?.state === state),
  );
  view.replaceChildren(
    form,
    h("h3", {}, `Conversations with a matching user (${people.length})`),
    table(
      ["Conversation", "Channel", "With", "Last activity"],
      people.map((c) =>
        h(
          "tr",
          {
            "data-id": c.id,
            class: "clickable",
            onclick: () => navigate({ tab: "conversations", id: c.id }),
          },
          idCell(c.id),
          h("td", {}, c.channel ?? "—"),
          h("td", {}, c.title ?? c.key ?? "—"),
          timeCell(c.lastActivityAtMs, Date.now()),
        ),
      ),
      "No user matches.",
    ),
    ...(matched.nextCursor === null
      ? []
      : [
          h(
            "p",
            { class: "muted", id: "search-more-people" },
            `Showing the ${PEOPLE_SHOWN} most recently active; more conversations match: search with more of the name.`,
          ),
        ]),
    h("h3", {}, `Messages (${messages.length})`),
    table(
      ["When", "Role", "Match", "Conversation", "Run"],
      messages.map((hit) =>
        h(
          "tr",
          { "data-ref": hit.ref, class: "hit" },
          timeCell(hit.atMs, Date.now()),
          h("td", {}, hit.role),
          h("td", { class: "text" }, snippet(hit.snippet)),
          h(
            "td",
            {},
            h(
              "a",
              { class: "mono", href: href({ tab: "conversations", id: hit.conversationId }) },
              hit.conversationId,
            ),
          ),
          h("td", {}, h("a", { class: "mono", href: href({ tab: "runs", id: hit.runId }) }, hit.runId)),
        ),
      ),
      "No message matches.",
    ),
  );
}

interface RunFacts {
  state: string;
  /** The channel the run came from (its context); null for runs no channel started. */
  channel: string | null;
}

/** The state and channel of each run (read only when a state or channel filter is set; at most 100 hits). */
async function runFacts(runIds: string[]): Promise<Map<string, RunFacts>> {
  const unique = [...new Set(runIds)];
  const details = await Promise.all(
    unique.map((id) => api<RunDetail>(`/api/runs/${encodeURIComponent(id)}`).catch(() => null)),
  );
  return new Map(
    details
      .filter((d) => d !== null)
      .map((d) => {
        const context = d.run.context as { channel?: unknown } | null;
        const channel = typeof context?.channel === "string" ? context.channel : null;
        return [d.run.id, { state: d.run.state, channel }];
      }),
  );
}

/** The matching passage with its [bracketed] matches marked (as text, never as HTML). */
function snippet(text: string): HTMLElement {
  const cell = h("span", {});
  for (const [i, piece] of text.split(/\[([^\]]*)\]/).entries())
    cell.append(i % 2 === 1 ? h("mark", {}, piece) : piece);
  return cell;
}
