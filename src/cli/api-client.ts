/**
 * OperatorService over a running gateway's operator HTTP API, so a CLI change reaches the live
 * delivery worker at once. Routes and error shape: docs/cli.md ("API mode"). The token is sent as
 * a Bearer header and never appears in an error message.
 */
import { SwitchboardError, type SwitchboardErrorCode } from "../errors.ts";
import type { OperatorService } from "../operator/types.ts";

export interface ApiClientOptions {
  /** The gateway's base URL (`http://127.0.0.1:8080`); a path prefix is kept. */
  baseUrl: string;
  token: string;
  /** Give up on a request after this long. Default 15 000. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

type Query = Record<string, string | number | boolean | undefined>;

interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Who acts, for the gateway to record in history (sent as `X-Switchboard-Actor: NAME`). */
  actor?: `operator:${string}`;
  /** Answer null instead of throwing when the gateway says 404 (the read methods' "unknown"). */
  nullOnNotFound?: boolean;
}

/** Codes the gateway may send that keep their meaning here; anything else is mapped by status. */
const FORWARDED_CODES = new Set<SwitchboardErrorCode>([
  "not_found",
  "input_invalid",
  "state_conflict",
  "version_conflict",
  "unauthorized",
  "schema_unsupported",
  "conversation_purged",
  "config_invalid",
]);

function codeForStatus(status: number): SwitchboardErrorCode {
  if (status === 401 || status === 403) return "unauthorized";
  if (status === 404) return "not_found";
  if (status === 409) return "state_conflict";
  if (status === 400 || status === 422) return "input_invalid";
  return "platform_unavailable";
}

function parseBaseUrl(baseUrl: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`);
  } catch {
    url = new URL("invalid:");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new SwitchboardError(
      "config_invalid",
      `SWITCHBOARD_URL '${baseUrl}' is not an http(s) URL; set it to the gateway's address, e.g. http://127.0.0.1:8080.`,
    );
  }
  return url;
}

export function createApiOperatorService(options: ApiClientOptions): OperatorService {
  const root = parseBaseUrl(options.baseUrl);
  const where = root.origin + root.pathname.replace(/\/$/, "");
  const timeoutMs = options.timeoutMs ?? 15_000;
  const fetchImpl = options.fetch ?? fetch;

  async function request<T>(method: "GET" | "POST", path: string, req: RequestOptions = {}): Promise<T> {
    const url = new URL(path, root);
    for (const [name, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method,
        headers: {
          authorization: `Bearer ${options.token}`,
          accept: "application/json",
          ...(req.body === undefined ? {} : { "content-type": "application/json" }),
          ...(req.actor === undefined ? {} : { "x-switchboard-actor": req.actor.slice("operator:".length) }),
        },
        ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const reason =
        error instanceof Error && error.name === "TimeoutError"
          ? `no answer within ${timeoutMs / 1000} s`
          : error instanceof Error
            ? error.message
            : String(error);
      throw new SwitchboardError(
        "platform_unavailable",
        `Could not reach the gateway at ${where} (${reason}). Is it running? ` +
          "Unset SWITCHBOARD_URL (or pass --db PATH) to work on the database file instead.",
        { cause: error, retryable: true },
      );
    }
    const text = await response.text();
    let body: unknown;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      throw new SwitchboardError(
        "platform_unavailable",
        `The gateway at ${where} answered ${method} ${url.pathname} with HTTP ${response.status} and a body that is not JSON; ` +
          "check that SWITCHBOARD_URL points at switchboard's HTTP server.",
      );
    }
    if (response.ok) return body as T;
    if (response.status === 404 && req.nullOnNotFound) return null as T;
    throw apiError(response.status, body, `${method} ${url.pathname}`);
  }

  function apiError(status: number, body: unknown, call: string): SwitchboardError {
    const error = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    const sent = typeof error?.code === "string" ? (error.code as SwitchboardErrorCode) : undefined;
    const code = sent && FORWARDED_CODES.has(sent) ? sent : codeForStatus(status);
    const message = typeof error?.message === "string" ? error.message : `HTTP ${status}`;
    if (status === 401) {
      return new SwitchboardError(
        "unauthorized",
        `The gateway at ${where} refused the operator token (HTTP 401). ` +
          "Set SWITCHBOARD_OPERATOR_TOKEN to the token the gateway was started with.",
        { details: { status } },
      );
    }
    if (status === 403) {
      return new SwitchboardError(
        "unauthorized",
        `The gateway at ${where} does not allow operator calls (HTTP 403: ${message}). ` +
          "Give the gateway an operator token, or pass --db PATH to work on the database file.",
        { details: { status } },
      );
    }
    return new SwitchboardError(code, message, { details: { status, call } });
  }

  const id = (value: string) => encodeURIComponent(value);

  return {
    access: {
      approve: (code, actor) => request("POST", "api/access/approve", { body: { code }, actor }),
      list: () => request("GET", "api/access"),
      revoke: (channel, userId, actor) =>
        request("POST", `api/access/${id(channel)}/${id(userId)}/revoke`, { body: {}, actor }),
    },
    budgets: {
      show: () => request("GET", "api/budgets"),
      status: (scope) => request("GET", `api/budgets/${id(scope)}`),
      conversation: (conversationId) => request("GET", `api/conversations/${id(conversationId)}/usage`),
      raise: (scope, limits, actor) =>
        request("POST", `api/budgets/${id(scope)}/raise`, { body: limits, actor }),
      reset: (scope, actor) => request("POST", `api/budgets/${id(scope)}/reset`, { body: {}, actor }),
      clear: (scope, actor) => request("POST", `api/budgets/${id(scope)}/clear`, { body: {}, actor }),
    },
    approvals: {
      list: (filter) =>
        request("GET", "api/approvals", {
          query: { state: filter.state, conversation: filter.conversationId, limit: filter.limit },
        }),
      decide: (approvalId, decision, actor) =>
        request("POST", `api/approvals/${id(approvalId)}/${decision}`, { body: {}, actor }),
    },
    runs: {
      list: (filter) =>
        request("GET", "api/runs", {
          query: {
            state: filter.state,
            conversation: filter.conversationId,
            cursor: filter.cursor,
            limit: filter.limit,
          },
        }),
      show: (runId) => request("GET", `api/runs/${id(runId)}`, { nullOnNotFound: true }),
    },
    conversations: {
      list: (filter) =>
        request("GET", "api/conversations", {
          query: { q: filter.query, cursor: filter.cursor, limit: filter.limit },
        }),
      show: (conversationId, page) =>
        request("GET", `api/conversations/${id(conversationId)}`, {
          query: { cursor: page.cursor, limit: page.limit },
          nullOnNotFound: true,
        }),
      setModel: (conversationId, model, actor) =>
        request("POST", `api/conversations/${id(conversationId)}/model`, { body: { model }, actor }),
      export: (conversationId) =>
        request("GET", `api/conversations/${id(conversationId)}/export`, { nullOnNotFound: true }),
      branch: (conversationId, through, actor) =>
        request("POST", `api/conversations/${id(conversationId)}/branch`, {
          body: through === undefined ? {} : { through },
          actor,
        }),
      import: (jsonl, actor) => request("POST", "api/conversations/import", { body: { jsonl }, actor }),
      purge: (conversationId, actor) =>
        request("POST", `api/conversations/${id(conversationId)}/purge`, { body: {}, actor }),
    },
    search: (query, filter) =>
      request("GET", "api/search", {
        query: { q: query, conversation: filter.conversationId, limit: filter.limit },
      }),
    outbox: {
      list: (filter) =>
        request("GET", "api/outbox", {
          query: {
            state: filter.state,
            conversation: filter.conversationId,
            cursor: filter.cursor,
            limit: filter.limit,
          },
        }),
      show: (idOrKey) => request("GET", `api/outbox/${id(idOrKey)}`, { nullOnNotFound: true }),
      retry: (recordId, actor, note) =>
        request("POST", `api/outbox/${id(recordId)}/retry`, { body: { note }, actor }),
      resolve: (recordId, outcome, actor, note) =>
        request("POST", `api/outbox/${id(recordId)}/resolve`, { body: { outcome, note }, actor }),
      cancel: (recordId, actor, note) =>
        request("POST", `api/outbox/${id(recordId)}/cancel`, { body: { note }, actor }),
    },
    schedules: {
      list: (filter) =>
        request("GET", "api/schedules", {
          query: { conversation: filter.conversationId, all: filter.includeEnded ? 1 : undefined },
        }),
      runs: (scheduleId, limit) =>
        request("GET", `api/schedules/${id(scheduleId)}/runs`, { query: { limit } }),
      pause: (scheduleId) => request("POST", `api/schedules/${id(scheduleId)}/pause`, { body: {} }),
      resume: (scheduleId) => request("POST", `api/schedules/${id(scheduleId)}/resume`, { body: {} }),
      cancel: (scheduleId) => request("POST", `api/schedules/${id(scheduleId)}/cancel`, { body: {} }),
    },
  };
}
