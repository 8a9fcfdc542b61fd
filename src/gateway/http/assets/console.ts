/**
 * The operator console: a token sign-in (kept in sessionStorage), a view per tab (console/*.ts)
 * picked by the URL's hash (console/router.ts), and live updates: the open list reloads when
 * `GET /api/events` says something changed, and the nav badge counts replies that need a person.
 * Event streams are read with fetch() so they can send the Authorization header.
 */
import type { Dashboard } from "../../dashboard.ts";
import { ApiError, api, authHeaders, messageOf, setToken, token, whenUnauthorized } from "./console/api.js";
import { showApprovals } from "./console/approvals.js";
import { showBudgets } from "./console/budgets.js";
import { showConversations } from "./console/conversations.js";
import { showDashboard } from "./console/dashboard.js";
import { showOutbox } from "./console/outbox.js";
import { navigate, parseRoute, type Route, type Tab } from "./console/router.js";
import { showRuns } from "./console/runs.js";
import { showSchedules } from "./console/schedules.js";
import { showSearch } from "./console/search.js";
import { byId, h } from "./dom.js";
import { readEventStream } from "./event-stream.js";

const view = byId("view");
/** Ends the open view's own streams (a conversation's live events) when another view opens. */
let viewStreams: AbortController | null = null;
/** Ends the change stream on sign-out. */
let changeStream: AbortController | null = null;
/** Bumped per render, so a slow render of an older route never paints over a newer one. */
let renderSeq = 0;

function signOut(message?: string): void {
  setToken(null);
  viewStreams?.abort();
  changeStream?.abort();
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
  setToken(input.value.trim());
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
  void render(false);
  changeStream = new AbortController();
  void followChanges(changeStream.signal);
}

/** Renders the route in the URL; `quiet` (a live refresh) keeps the current content until the new one is ready. */
async function render(quiet: boolean): Promise<void> {
  if (!token()) return;
  const route = parseRoute(location.hash);
  const seq = ++renderSeq;
  viewStreams?.abort();
  viewStreams = new AbortController();
  for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>("#tabs button")))
    button.classList.toggle("active", button.dataset.tab === route.tab);
  const target = quiet ? h("main") : view;
  if (!quiet) view.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  try {
    await show(target, route, viewStreams.signal);
    if (seq === renderSeq && quiet) view.replaceChildren(...Array.from(target.childNodes));
  } catch (error) {
    if (seq === renderSeq) view.replaceChildren(h("p", { class: "error" }, messageOf(error)));
  }
  if (route.tab !== "dashboard") void refreshBadge();
}

async function show(target: HTMLElement, route: Route, live: AbortSignal): Promise<void> {
  switch (route.tab) {
    case "dashboard":
      return setBadge(await showDashboard(target));
    case "runs":
      return showRuns(target, route);
    case "conversations":
      return showConversations(target, route, live);
    case "outbox":
      return showOutbox(target, route);
    case "approvals":
      return showApprovals(target, route);
    case "schedules":
      return showSchedules(target, route);
    case "budgets":
      return showBudgets(target, route);
    case "search":
      return showSearch(target, route);
  }
}

/** Replies a person must look at (ambiguous or failed), on the Dashboard and Outbox tabs. */
function setBadge(dashboard: Dashboard): void {
  const stuck = dashboard.outbox.ambiguous + dashboard.outbox.failed;
  for (const tab of ["dashboard", "outbox"]) {
    const button = document.querySelector<HTMLButtonElement>(`#tabs button[data-tab="${tab}"]`);
    if (!button) continue;
    button.querySelector(".nav-badge")?.remove();
    if (stuck > 0)
      button.append(
        h("span", { class: "nav-badge", title: `${stuck} replies ambiguous or failed` }, String(stuck)),
      );
  }
}

async function refreshBadge(): Promise<void> {
  try {
    setBadge(await api<Dashboard>("/api/dashboard"));
  } catch {
    // A standby has no dashboard: no badge.
  }
}

/**
 * Follows `GET /api/events`; each change reloads the open view (at most every half second) unless
 * it is a conversation, which follows its own stream, or a dialog is open.
 */
async function followChanges(signal: AbortSignal): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const route = parseRoute(location.hash);
      const busy = byId<HTMLDialogElement>("note-dialog").open || document.activeElement?.tagName === "INPUT";
      if (busy || (route.tab === "conversations" && route.id) || route.tab === "search") void refreshBadge();
      else void render(true);
    }, 500);
  };
  while (!signal.aborted) {
    try {
      const response = await fetch("/api/events", {
        headers: { ...authHeaders(), accept: "text/event-stream" },
        signal,
      });
      if (response.status === 401) return signOut("The operator token was refused.");
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
      byId("live-status").dataset.state = "live";
      await readEventStream(response, (frame) => {
        if (frame.data !== null) changed();
      });
    } catch {
      if (signal.aborted) return;
    }
    byId("live-status").dataset.state = "offline";
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

whenUnauthorized((message) => signOut(message));
byId("login-form").addEventListener("submit", (event) => void signIn(event));
byId("logout").addEventListener("click", () => signOut());
for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>("#tabs button")))
  button.addEventListener("click", () => navigate({ tab: button.dataset.tab as Tab }));
window.addEventListener("hashchange", () => void render(false));
if (token()) showApp();
else signOut();
