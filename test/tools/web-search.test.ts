import { afterEach, expect, test } from "bun:test";
import { isSwitchboardError } from "../../src/errors.ts";
import { loadConfig } from "../../src/gateway/config/index.ts";
import { webSearch } from "../../src/tools/web/search.ts";
import { createWebSearchTool } from "../../src/tools/web/tool.ts";
import { startFakeBrave, startFakeSearxng } from "../fixtures/search/fake-search.ts";

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

test("SearXNG: the JSON API is asked, and each result becomes title, url and snippet", async () => {
  const searxng = startFakeSearxng();
  stops.push(searxng.stop);
  const hits = await webSearch({ kind: "searxng", url: `${searxng.url}/` }, "bun runtime");
  expect(searxng.requests).toEqual([
    { path: "/search", query: { q: "bun runtime", format: "json" }, token: null },
  ]);
  expect(hits).toEqual([
    { title: "Bun & bun runtime", url: "https://bun.sh/docs", snippet: "Bun is a fast JavaScript runtime." },
    { title: "Second", url: "https://example.org/2", snippet: "" },
  ]);
});

test("Brave: the key travels as X-Subscription-Token; snippets lose their markup", async () => {
  const brave = startFakeBrave({ key: "brave-key-123" });
  stops.push(brave.stop);
  const tools = createWebSearchTool({ kind: "brave", apiKey: "brave-key-123", url: brave.url });
  const output = await tools.web_search.execute!({ query: "zod 4" }, {
    toolCallId: "c",
    messages: [],
  } as never);
  expect(output).toEqual({
    results: [{ title: "About zod 4", url: "https://brave.example/a", snippet: 'All about zod 4 "quoted"' }],
  });
  expect(brave.requests[0]).toEqual({
    path: "/res/v1/web/search",
    query: { q: "zod 4", count: "10" },
    token: "brave-key-123",
  });
});

test("failures are errors the model can read: refused JSON, a bad key, an unreachable backend; the key is never in them", async () => {
  const refusing = startFakeSearxng({ refuseJson: true });
  const brave = startFakeBrave({ key: "right-key" });
  stops.push(refusing.stop, brave.stop);
  await expect(webSearch({ kind: "searxng", url: refusing.url }, "x")).rejects.toThrow(
    "SearXNG answered HTTP 403 (is format json enabled under search.formats in its settings.yml?)",
  );
  const wrong = webSearch({ kind: "brave", apiKey: "wrong-key-456", url: brave.url }, "x");
  await expect(wrong).rejects.toThrow("Brave Search answered HTTP 401");
  await expect(wrong).rejects.not.toThrow("wrong-key-456");
  await expect(webSearch({ kind: "searxng", url: "http://127.0.0.1:9" }, "x")).rejects.toThrow(
    "SearXNG could not be reached",
  );
});

test("the tool's abort signal (the run lost its lease) ends a search with the signal's reason", async () => {
  const searxng = startFakeSearxng();
  stops.push(searxng.stop);
  const tools = createWebSearchTool({ kind: "searxng", url: searxng.url });
  const searching = tools.web_search.execute!({ query: "bun runtime" }, {
    toolCallId: "c",
    messages: [],
    abortSignal: AbortSignal.abort(new Error("the run's lease was lost")),
  } as never);
  await expect(searching).rejects.toThrow("the run's lease was lost");
});

test("config: no backend, no web_search; one backend; both is refused; the Brave key is a secret", () => {
  expect(loadConfig({}).webSearch).toBeNull();
  expect(loadConfig({ SWITCHBOARD_SEARXNG_URL: "http://127.0.0.1:8888/" }).webSearch).toEqual({
    kind: "searxng",
    url: "http://127.0.0.1:8888",
  });
  const brave = loadConfig({ SWITCHBOARD_BRAVE_API_KEY: "brave-secret-key" });
  expect(brave.webSearch).toEqual({
    kind: "brave",
    apiKey: "brave-secret-key",
    url: "https://api.search.brave.com/res/v1/web/search",
  });
  expect(brave.secrets).toContain("brave-secret-key");
  try {
    loadConfig({ SWITCHBOARD_SEARXNG_URL: "http://127.0.0.1:8888", SWITCHBOARD_BRAVE_API_KEY: "k-123456" });
    throw new Error("expected a refusal");
  } catch (error) {
    expect(isSwitchboardError(error, "config_invalid")).toBe(true);
    expect((error as Error).message).toContain("web_search uses one backend");
  }
});
