import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
// See pinned-agent.ts for why the path and not the bare "undici".
import type { Response as UndiciResponse } from "undici/index.js";
import { isPrivateAddress, refusalReason } from "./address.ts";

export interface WebFetchOptions {
  /** Allow private, loopback and link-local addresses (SWITCHBOARD_FETCH_ALLOW_PRIVATE=on). */
  allowPrivate: boolean;
  /** Bytes of the response body read at most. */
  maxBytes?: number;
  /** Characters of Markdown returned at most. */
  maxChars?: number;
  /** The whole fetch, redirects and body included. */
  timeoutMs?: number;
  maxRedirects?: number;
  /** Which resolved addresses are refused (tests narrow it); default: see address.ts. */
  isBlocked?: (address: string) => boolean;
  /** The name's addresses (default: the system resolver); the connection goes to one of them. */
  resolve?: (hostname: string) => Promise<string[]>;
  /** Ends the fetch early (the run lost its lease); it then rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface WebPage {
  url: string;
  title: string | null;
  markdown: string;
  truncated: boolean;
}

/** A refusal or failure the model can act on; the message says what and why. */
export class WebFetchError extends Error {}

const DEFAULTS = { maxBytes: 2_000_000, maxChars: 20_000, timeoutMs: 15_000, maxRedirects: 5 };

const systemResolve = async (hostname: string) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** What every guarded GET needs: the SSRF rules and bounds web_fetch applies. */
export type GuardedGetOptions = Pick<WebFetchOptions, "allowPrivate" | "isBlocked" | "resolve" | "signal"> & {
  timeoutMs: number;
  maxRedirects: number;
};

/**
 * GETs an http(s) URL and hands the final successful response to `read`, all within
 * `timeoutMs`. Every hop (the URL and each redirect) is checked after DNS resolution: a name
 * resolving to a refused address is refused, and the hop's connection goes only to the addresses
 * checked (the name is never resolved again for it). Every failure is a WebFetchError saying why.
 */
export async function guardedGet<T>(
  rawUrl: string,
  options: GuardedGetOptions,
  accept: string,
  read: (response: Response, url: URL) => Promise<T>,
): Promise<T> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  let url = parseUrl(rawUrl);
  try {
    // undici is over 100 modules: loaded by the first fetch, not by every gateway start.
    const [{ Agent, fetch }, { pinnedAgent }] = await Promise.all([
      import("undici/index.js"),
      import("./pinned-agent.ts"),
    ]);
    for (let hop = 0; ; hop++) {
      const addresses = await checkDestination(url, options);
      // One agent per hop, so a redirect is connected to the addresses checked for it.
      const agent = addresses ? pinnedAgent(hostnameOf(url), addresses) : new Agent();
      try {
        const response = await fetch(url, {
          redirect: "manual",
          signal,
          dispatcher: agent,
          headers: { accept, "user-agent": "switchboard-web-fetch/1" },
        });
        const location = response.headers.get("location");
        if (response.status >= 300 && response.status < 400 && location) {
          await response.body?.cancel();
          if (hop >= options.maxRedirects)
            throw new WebFetchError(`more than ${options.maxRedirects} redirects from ${rawUrl}`);
          url = parseUrl(new URL(location, url).href);
          continue;
        }
        if (!response.ok) {
          await response.body?.cancel();
          throw new WebFetchError(`${url.href} answered HTTP ${response.status}`);
        }
        return await read(toStandardResponse(response), url);
      } finally {
        await agent.destroy().catch(() => {});
      }
    }
  } catch (error) {
    if (error instanceof WebFetchError) throw error;
    if (options.signal?.aborted) throw options.signal.reason;
    if (deadline.aborted)
      throw new WebFetchError(`${url.href} did not answer within ${options.timeoutMs} ms`);
    throw new WebFetchError(`fetching ${url.href} failed: ${(error as Error).message}`);
  }
}

/** GETs an http(s) page (see guardedGet) and returns its readable part as Markdown. */
export async function webFetch(rawUrl: string, options: WebFetchOptions): Promise<WebPage> {
  const settings = { ...DEFAULTS, ...options };
  return await guardedGet(
    rawUrl,
    settings,
    "text/html, text/plain;q=0.9, */*;q=0.1",
    async (response, url) => {
      const { text, truncated } = await readBounded(response, settings.maxBytes);
      const type = response.headers.get("content-type") ?? "";
      const page = await toMarkdown(url.href, text, type);
      const cut = page.markdown.length > settings.maxChars;
      return {
        ...page,
        markdown: cut ? `${page.markdown.slice(0, settings.maxChars)}\n\n[truncated]` : page.markdown,
        truncated: truncated || cut,
      };
    },
  );
}

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebFetchError(
      `"${raw}" is not a URL; give a full http(s) URL such as https://example.com/page`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new WebFetchError(`only http and https URLs can be fetched (got ${url.protocol})`);
  if (url.username || url.password) throw new WebFetchError("URLs with credentials are not fetched");
  return url;
}

/** undici's Response as the platform's, so callers see the usual type. */
function toStandardResponse(response: UndiciResponse): Response {
  const nullBody = response.status === 204 || response.status === 205;
  return new Response(nullBody ? null : (response.body as ReadableStream | null), {
    status: response.status,
    statusText: response.statusText,
    headers: [...response.headers],
  });
}

const hostnameOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "");

/**
 * Refuses a destination that is, or resolves to, a refused address. Returns the addresses the
 * connection may use, or null when private addresses are allowed (then nothing is checked).
 */
async function checkDestination(url: URL, settings: GuardedGetOptions): Promise<string[] | null> {
  if (settings.allowPrivate) return null;
  const host = hostnameOf(url);
  const addresses = isIP(host)
    ? [host]
    : await (settings.resolve ?? systemResolve)(host).catch(() => {
        throw new WebFetchError(`${host} does not resolve`);
      });
  const blocked = settings.isBlocked ?? isPrivateAddress;
  const refused = addresses.find(blocked);
  if (refused !== undefined || addresses.length === 0) {
    const why = refused !== undefined && !settings.isBlocked ? `${refusalReason(refused)}; ` : "";
    throw new WebFetchError(
      `${url.host} resolves to ${refused ?? "no address"}, a private, loopback or link-local address: refused (${why}an operator can allow these with SWITCHBOARD_FETCH_ALLOW_PRIVATE=on)`,
    );
  }
  return addresses;
}

async function readBounded(
  response: Response,
  maxBytes: number,
): Promise<{ text: string; truncated: boolean }> {
  const reader = response.body?.getReader();
  if (!reader) return { text: "", truncated: false };
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size >= maxBytes) {
      truncated = true;
      await reader.cancel();
      break;
    }
  }
  const bytes = Buffer.concat(chunks).subarray(0, maxBytes);
  return { text: new TextDecoder().decode(bytes), truncated };
}

/** HTML: Readability's article (or the body when it finds none) as Markdown; plain text as is. */
export async function toMarkdown(
  url: string,
  body: string,
  contentType: string,
): Promise<Omit<WebPage, "truncated">> {
  if (/^text\/plain|^text\/markdown|json/.test(contentType)) return { url, title: null, markdown: body };
  if (!/html|xml/.test(contentType) && contentType !== "") {
    throw new WebFetchError(`${url} is ${contentType.split(";")[0]}, not a page web_fetch can read`);
  }
  // linkedom, Readability and Turndown are about 200 modules: loaded by the first page read.
  const { htmlToMarkdown } = await import("./html-markdown.ts");
  return { url, ...htmlToMarkdown(body) };
}
