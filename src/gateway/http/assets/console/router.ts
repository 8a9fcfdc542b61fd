/**
 * The console's place lives in the URL's hash, so a view (tab, record, filters) can be linked and
 * survives a reload: `#/runs?state=failed`, `#/outbox/obx_…`, `#/search?q=refund`.
 */

export const TABS = [
  "dashboard",
  "runs",
  "conversations",
  "outbox",
  "approvals",
  "schedules",
  "budgets",
  "search",
] as const;
export type Tab = (typeof TABS)[number];

export interface Route {
  tab: Tab;
  /** A record of the tab (`#/runs/run_…`); null for the list. */
  id: string | null;
  /** The view's filters. */
  query: Record<string, string>;
}

export function parseRoute(hash: string): Route {
  const [path = "", search = ""] = hash.replace(/^#\/?/, "").split("?", 2);
  const [tab = "", ...rest] = path.split("/");
  const query = Object.fromEntries(new URLSearchParams(search));
  const known = (TABS as readonly string[]).includes(tab);
  return {
    tab: known ? (tab as Tab) : "dashboard",
    id: known && rest.length > 0 ? decodeURIComponent(rest.join("/")) || null : null,
    query,
  };
}

export function formatRoute(route: {
  tab: Tab;
  id?: string | null;
  query?: Record<string, string | undefined>;
}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(route.query ?? {})) if (value) params.set(name, value);
  const search = params.toString();
  return `#/${route.tab}${route.id ? `/${encodeURIComponent(route.id)}` : ""}${search ? `?${search}` : ""}`;
}

/** Goes to `route`: a new history entry, and the hashchange listener renders it. */
export function navigate(route: {
  tab: Tab;
  id?: string | null;
  query?: Record<string, string | undefined>;
}): void {
  const hash = formatRoute(route);
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = hash;
}

/** The current route with `changes` to its filters (the URL keeps them), without a new history entry. */
export function replaceQuery(changes: Record<string, string | undefined>): void {
  const route = parseRoute(location.hash);
  const query: Record<string, string | undefined> = { ...route.query, ...changes };
  history.replaceState(null, "", formatRoute({ ...route, query }));
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

/** A link to a route (a real `<a href="#/…">`, so it opens in a new tab too). */
export function href(route: {
  tab: Tab;
  id?: string | null;
  query?: Record<string, string | undefined>;
}): string {
  return formatRoute(route);
}
