/*
 * web_search backends: a SearXNG instance (its JSON API: /search?q=…&format=json, which the
 * instance must allow under search.formats) or the Brave Search API (X-Subscription-Token).
 * Either way the model gets title, url and snippet per result.
 */

export type SearchBackend = { kind: "searxng"; url: string } | { kind: "brave"; apiKey: string; url: string };

export const BRAVE_SEARCH_URL = "https://api.search.brave.com/res/v1/web/search";

export interface SearchHit {
  title: string;
  url: string;
  snippet: string;
}

/** A failure the model can act on; the message names the backend and what went wrong (never the key). */
export class WebSearchError extends Error {}

const MAX_RESULTS = 10;
const TIMEOUT_MS = 15_000;
const MAX_BODY_BYTES = 2_000_000;

export async function webSearch(
  backend: SearchBackend,
  query: string,
  /** `signal` ends the search early (the run lost its lease); it then rejects with the signal's reason. */
  options: { count?: number; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<SearchHit[]> {
  const count = Math.min(options.count ?? MAX_RESULTS, MAX_RESULTS);
  const request: { url: string; headers: Record<string, string> } =
    backend.kind === "searxng"
      ? {
          url: withQuery(`${backend.url.replace(/\/+$/, "")}/search`, { q: query, format: "json" }),
          headers: { accept: "application/json" },
        }
      : {
          url: withQuery(backend.url, { q: query, count: String(count) }),
          headers: { accept: "application/json", "x-subscription-token": backend.apiKey },
        };
  const name = backend.kind === "searxng" ? "SearXNG" : "Brave Search";
  let body: unknown;
  try {
    const response = await fetch(request.url, {
      headers: request.headers,
      signal: options.signal
        ? AbortSignal.any([AbortSignal.timeout(options.timeoutMs ?? TIMEOUT_MS), options.signal])
        : AbortSignal.timeout(options.timeoutMs ?? TIMEOUT_MS),
    });
    const text = await response.text();
    if (!response.ok) {
      throw new WebSearchError(
        `${name} answered HTTP ${response.status}${backend.kind === "searxng" && response.status === 403 ? " (is format json enabled under search.formats in its settings.yml?)" : ""}`,
      );
    }
    if (text.length > MAX_BODY_BYTES) throw new WebSearchError(`${name} answered more than 2 MB`);
    body = JSON.parse(text);
  } catch (error) {
    if (error instanceof WebSearchError) throw error;
    if (options.signal?.aborted) throw options.signal.reason;
    const reason =
      error instanceof Error && error.name === "TimeoutError"
        ? `did not answer within ${(options.timeoutMs ?? TIMEOUT_MS) / 1000} s`
        : error instanceof SyntaxError
          ? "answered something that is not JSON"
          : `could not be reached (${error instanceof Error ? error.message : String(error)})`;
    throw new WebSearchError(`${name} ${reason}`);
  }
  return (backend.kind === "searxng" ? searxngHits(body) : braveHits(body)).slice(0, count);
}

function withQuery(base: string, params: Record<string, string>): string {
  const url = new URL(base);
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.toString();
}

type Row = Record<string, unknown>;
const str = (value: unknown) => (typeof value === "string" ? value : "");

/** SearXNG: { results: [{ title, url, content }] }. */
export function searxngHits(body: unknown): SearchHit[] {
  const results = (body as { results?: unknown })?.results;
  return (Array.isArray(results) ? (results as Row[]) : []).flatMap((r) =>
    str(r.url) ? [{ title: clean(str(r.title)), url: str(r.url), snippet: clean(str(r.content)) }] : [],
  );
}

/** Brave: { web: { results: [{ title, url, description }] } }; descriptions carry <strong> marks. */
export function braveHits(body: unknown): SearchHit[] {
  const results = (body as { web?: { results?: unknown } })?.web?.results;
  return (Array.isArray(results) ? (results as Row[]) : []).flatMap((r) =>
    str(r.url) ? [{ title: clean(str(r.title)), url: str(r.url), snippet: clean(str(r.description)) }] : [],
  );
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", "#x27": "'" };

/** Tags dropped, the common entities decoded, whitespace collapsed, at most 500 characters. */
function clean(text: string): string {
  return text
    .replace(/<[^>]*>/g, "")
    .replace(/&(amp|lt|gt|quot|#39|#x27);/g, (_, e: string) => ENTITIES[e] ?? "")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, 500);
}
