/** The operator API from the console: the token (kept in this tab only), JSON calls and errors. */

const TOKEN_KEY = "switchboard.operatorToken";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** One page of a list, as the API answers it. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

let onUnauthorized: (message: string) => void = () => {};

/** Who to tell when the API refuses the token (the sign-in screen). */
export function whenUnauthorized(handler: (message: string) => void): void {
  onUnauthorized = handler;
}

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null): void {
  if (value === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, value);
}

export function authHeaders(): Record<string, string> {
  return { authorization: `Bearer ${token() ?? ""}`, "x-switchboard-actor": "console" };
}

export async function api<T>(
  path: string,
  init: { method?: "GET" | "POST"; body?: unknown } = {},
): Promise<T> {
  const response = await fetch(path, {
    method: init.method ?? "GET",
    headers: {
      ...authHeaders(),
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
    if (response.status === 401) onUnauthorized(error.message);
    throw error;
  }
  return body as T;
}

/** `path` with the query's non-empty values. */
export function withQuery(path: string, query: Record<string, string | number | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query))
    if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
