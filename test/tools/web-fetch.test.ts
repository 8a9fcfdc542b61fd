/**
 * web_fetch against local pages: readable Markdown, bounded, and the SSRF guard on every hop.
 * Address classification: web-address.test.ts; DNS rebinding: web-fetch-rebinding.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { webFetch } from "../../src/tools/web/fetch.ts";
import { createWebFetchTool } from "../../src/tools/web/tool.ts";

const ARTICLE = `<!doctype html><html><head><title>Tide tables</title><script>track()</script></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Tide tables</h1>
<p>The tide in the harbour rises twice a day, and the <strong>spring tides</strong> are the highest of the month.</p>
<p>Fishermen plan around them. ${"Boats wait for the water to rise before leaving the harbour. ".repeat(8)}</p>
<h2>Neap tides</h2><p>Neap tides come a week later, when the difference between high and low water is smallest.</p>
</article><footer>© Harbour office</footer></body></html>`;

let server: ReturnType<typeof Bun.serve>;
let base: string;
beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      if (url.pathname === "/article")
        return new Response(ARTICLE, { headers: { "content-type": "text/html" } });
      if (url.pathname === "/plain")
        return new Response("just text", { headers: { "content-type": "text/plain" } });
      if (url.pathname === "/big")
        return new Response("x".repeat(3_000_000), { headers: { "content-type": "text/plain" } });
      // Never answers: the client's timeout or abort ends the request (and this with it).
      if (url.pathname === "/slow")
        return new Promise<Response>((resolve) =>
          request.signal.addEventListener("abort", () => resolve(new Response("late"))),
        );
      if (url.pathname === "/binary")
        return new Response("PK", { headers: { "content-type": "application/zip" } });
      if (url.pathname === "/to-article") return Response.redirect(`${base}/article`, 302);
      if (url.pathname === "/to-other-host")
        return Response.redirect(`http://127.0.0.2:${server.port}/article`, 302);
      if (url.pathname === "/loop") return Response.redirect(`${base}/loop`, 302);
      return new Response("missing", { status: 404 });
    },
  });
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server.stop(true));

test("an HTML page comes back as its readable part in Markdown, without navigation or scripts", async () => {
  const page = await webFetch(`${base}/article`, { allowPrivate: true });
  expect(page.title).toBe("Tide tables");
  expect(page.markdown).toContain("**spring tides**");
  expect(page.markdown).toContain("## Neap tides");
  expect(page.markdown).not.toContain("track()");
  expect(page.markdown).not.toContain("About");
  expect(page.truncated).toBe(false);
});

test("private, loopback and link-local destinations are refused unless allowed, also after DNS", async () => {
  await expect(webFetch(`${base}/article`, { allowPrivate: false })).rejects.toThrow(
    /127\.0\.0\.1, a private, loopback or link-local address: refused .*SWITCHBOARD_FETCH_ALLOW_PRIVATE=on/,
  );
  await expect(webFetch(`http://localhost:${server.port}/article`, { allowPrivate: false })).rejects.toThrow(
    /refused/,
  );
  await expect(
    webFetch("http://metadata.example/latest", {
      allowPrivate: false,
      resolve: async () => ["169.254.169.254"],
    }),
  ).rejects.toThrow(/169\.254\.169\.254/);
  await expect(webFetch("http://[::1]:1/", { allowPrivate: false })).rejects.toThrow(/refused/);
});

test("each redirect is checked again", async () => {
  const only127001 = { allowPrivate: false, isBlocked: (address: string) => address !== "127.0.0.1" };
  expect((await webFetch(`${base}/to-article`, only127001)).title).toBe("Tide tables");
  await expect(webFetch(`${base}/to-other-host`, only127001)).rejects.toThrow(/127\.0\.0\.2.*refused/);
  await expect(webFetch(`${base}/loop`, { allowPrivate: true })).rejects.toThrow(/more than 5 redirects/);
});

test("size and time are bounded; other schemes, binaries and errors are refused with a reason", async () => {
  const big = await webFetch(`${base}/big`, { allowPrivate: true, maxBytes: 100_000, maxChars: 1000 });
  expect(big.truncated).toBe(true);
  expect(big.markdown.length).toBeLessThan(1100);
  const began = Date.now();
  await expect(webFetch(`${base}/slow`, { allowPrivate: true, timeoutMs: 300 })).rejects.toThrow(
    /did not answer within 300 ms/,
  );
  expect(Date.now() - began).toBeLessThan(2000);
  await expect(webFetch("file:///etc/passwd", { allowPrivate: true })).rejects.toThrow(/only http and https/);
  await expect(webFetch(`${base}/binary`, { allowPrivate: true })).rejects.toThrow(/application\/zip/);
  await expect(webFetch(`${base}/nope`, { allowPrivate: true })).rejects.toThrow(/HTTP 404/);
  expect((await webFetch(`${base}/plain`, { allowPrivate: true })).markdown).toBe("just text");
});

test("the tool returns the title, the source and the Markdown", async () => {
  const { web_fetch } = createWebFetchTool({ allowPrivate: true });
  const output = await web_fetch.execute!({ url: `${base}/article` }, {
    toolCallId: "t",
    messages: [],
  } as never);
  expect(output).toStartWith(`# Tide tables\n\nSource: ${base}/article\n\n`);
});

test("the tool's abort signal (the run lost its lease) ends a fetch at once, with the signal's reason", async () => {
  const { web_fetch } = createWebFetchTool({ allowPrivate: true });
  const abort = new AbortController();
  const began = Date.now();
  const fetching = web_fetch.execute!({ url: `${base}/slow` }, {
    toolCallId: "t",
    messages: [],
    abortSignal: abort.signal,
  } as never);
  setTimeout(() => abort.abort(new Error("the run's lease was lost")), 100);
  await expect(fetching).rejects.toThrow("the run's lease was lost");
  expect(Date.now() - began).toBeLessThan(2000);
});
