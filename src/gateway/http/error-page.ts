/**
 * Browsers that open a URL get an error as a page, not as JSON: a person typed or clicked it.
 * Scripts (fetch, curl, the CLI) and the API keep the JSON body, whatever they accept.
 */
import type { ApiErrorBody } from "./respond.ts";

/** A top-level navigation: the browser asks for HTML, outside the JSON APIs. */
export function wantsHtmlPage(request: Request, url: URL): boolean {
  if (url.pathname === "/api" || url.pathname.startsWith("/api/") || url.pathname.startsWith("/web/api/"))
    return false;
  return (request.headers.get("accept") ?? "").includes("text/html");
}

/** The same error as a small self-contained page: status, what went wrong, and a way back. */
export async function asErrorPage(response: Response): Promise<Response> {
  let message = response.statusText || "The request failed.";
  try {
    message = ((await response.clone().json()) as ApiErrorBody).error.message;
  } catch {}
  const title = `${response.status} ${TITLES[response.status] ?? "Error"}`;
  const headers = new Headers(response.headers);
  headers.set("content-type", "text/html; charset=utf-8");
  // No script runs on it; connect-src stays 'self' so the refusals a page meets stay the server's.
  headers.set("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; connect-src 'self'");
  headers.delete("content-length");
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · switchboard</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}code{background:#f3f3f3;padding:0 .2em}</style>
</head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>
<p><a href="/">Open the web chat</a> · <a href="/console">Open the console</a></p></body></html>
`;
  return new Response(html, { status: response.status, headers });
}

const TITLES: Record<number, string> = {
  400: "Bad request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not found",
  405: "Method not allowed",
  409: "Conflict",
  413: "Too large",
  429: "Too many requests",
  500: "Internal error",
  503: "Unavailable",
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
