/**
 * Adapter routes that several accounts of one channel serve together (`HttpRoute.shared`): one
 * route per method and path, handing each account's handler a copy of the request. The answer
 * is the one the platform must act on: a refusal (401/403) only counts when every account refused
 * (the request was nobody's), and then any failure (5xx first) makes the platform deliver again,
 * so what one account could not record is not lost because another recorded its part.
 */
import type { HttpRoute } from "../../channels/types.ts";

/** The routes with every shared method and path merged into one; other routes as they are. */
export function combineSharedRoutes(routes: readonly HttpRoute[]): HttpRoute[] {
  const groups = new Map<string, HttpRoute[]>();
  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    groups.set(key, [...(groups.get(key) ?? []), route]);
  }
  return [...groups.values()].flatMap((group) => {
    if (group.length === 1 || !group.every((route) => route.shared)) return group;
    const [first] = group as [HttpRoute, ...HttpRoute[]];
    return [
      {
        method: first.method,
        path: first.path,
        shared: true,
        handle: async function sharedAdapterRoute(request, context) {
          const answers = await Promise.all(group.map((route) => route.handle(request.clone(), context)));
          return answers[combinedAnswer(answers.map((answer) => answer.status))]!;
        },
      },
    ];
  });
}

/** Which of the accounts' answers (by status) the request gets. Pure. */
export function combinedAnswer(statuses: readonly number[]): number {
  const refusal = (status: number) => status === 401 || status === 403;
  const candidates = statuses.map((status, index) => ({ status, index })).filter((a) => !refusal(a.status));
  if (candidates.length === 0) return 0;
  const worst =
    candidates.find((a) => a.status >= 500) ?? candidates.find((a) => a.status < 200 || a.status >= 300);
  return (worst ?? candidates[0]!).index;
}
