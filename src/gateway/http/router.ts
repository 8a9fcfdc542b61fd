/** A small method + path router with `:param` segments. */

/**
 * `operator`: an operator token (auth.ts); `api`: an operator token or an app token
 * (SWITCHBOARD_APP_TOKENS; the route checks what the app may touch); `metrics`: an allowed `Host`,
 * and beyond loopback the metrics or an operator token; `public`: none (the route checks what it
 * needs itself).
 */
export type Access = "public" | "operator" | "api" | "metrics";

export interface RouteContext {
  request: Request;
  url: URL;
  /** Decoded `:param` values. */
  params: Record<string, string>;
  /** Correlates the answer with log lines. */
  requestId: string;
  /** The peer's address as the socket reports it ("unknown" without one); never from a header. */
  clientAddress: string;
  /** The named operator whose own token authenticated the request (SWITCHBOARD_OPERATOR_TOKENS). */
  operator?: string;
  /** The app whose token authenticated the request (SWITCHBOARD_APP_TOKENS); only on `api` routes. */
  app?: string;
}

export interface Route {
  method: "GET" | "POST";
  /** `/api/outbox/:id/retry`; a `:name` segment matches one non-empty path segment. */
  pattern: string;
  access: Access;
  handle(context: RouteContext): Promise<Response>;
}

export type RouteMatch =
  | { kind: "found"; route: Route; params: Record<string, string> }
  /** The path exists, but not for this method. */
  | { kind: "method_not_allowed"; allowed: string[] }
  | { kind: "not_found" };

interface CompiledRoute {
  route: Route;
  segments: string[];
}

export class Router {
  private readonly routes: CompiledRoute[] = [];

  constructor(routes: Iterable<Route> = []) {
    for (const route of routes) this.add(route);
  }

  add(route: Route): void {
    const duplicate = this.routes.find(
      (r) => r.route.method === route.method && r.route.pattern === route.pattern,
    );
    if (duplicate)
      throw new Error(`Two routes for ${route.method} ${route.pattern}; each path is served once.`);
    this.routes.push({ route, segments: split(route.pattern) });
  }

  /** Literal segments win over `:params`, so `/api/outbox/x` never shadows a fixed path. */
  match(method: string, pathname: string): RouteMatch {
    // HEAD is GET without the body (Bun leaves the body out), as uptime checkers expect.
    const wanted = method === "HEAD" ? "GET" : method;
    const segments = split(pathname);
    const allowed = new Set<string>();
    let best: { route: Route; params: Record<string, string>; literals: number } | null = null;
    for (const { route, segments: pattern } of this.routes) {
      const params = matchSegments(pattern, segments);
      if (!params) continue;
      if (route.method !== wanted) {
        allowed.add(route.method);
        if (route.method === "GET") allowed.add("HEAD");
        continue;
      }
      const literals = pattern.filter((s) => !s.startsWith(":")).length;
      if (!best || literals > best.literals) best = { route, params, literals };
    }
    if (best) return { kind: "found", route: best.route, params: best.params };
    if (allowed.size > 0) return { kind: "method_not_allowed", allowed: [...allowed].sort() };
    return { kind: "not_found" };
  }
}

function split(path: string): string[] {
  return path.split("/").filter((s) => s !== "");
}

function matchSegments(pattern: string[], actual: string[]): Record<string, string> | null {
  if (pattern.length !== actual.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i]!;
    const segment = actual[i]!;
    if (expected.startsWith(":")) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        return null;
      }
      params[expected.slice(1)] = decoded;
    } else if (expected !== segment) {
      return null;
    }
  }
  return params;
}
