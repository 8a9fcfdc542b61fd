/**
 * DNS rebinding: web_fetch connects to the address it checked, never to a second answer.
 *
 * 127.0.0.2 stands in for a public address (the policy below allows only it), and a "victim"
 * server on 127.0.0.1 (and ::1 when available) stands in for a private service that must never be
 * reached. The URLs use the name `localhost`, so a connection that resolved the name again (as
 * fetch() did before the fix) would land on the victim, like a rebinding DNS server's second answer.
 */
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { createServer, type Server, type Socket } from "node:net";
import { webFetch } from "../../src/tools/web/fetch.ts";

const PUBLIC = "127.0.0.2";
const LOOPBACK = "127.0.0.1";
const policy = { allowPrivate: false, timeoutMs: 5_000, isBlocked: (address: string) => address !== PUBLIC };

/** A resolver that gives `answers` in turn (the last one again when they run out) and counts calls. */
function rebinding(...answers: string[][]) {
  const asked: string[] = [];
  const resolve = async (hostname: string) => {
    asked.push(hostname);
    return answers[Math.min(asked.length, answers.length) - 1]!;
  };
  return { resolve, asked };
}

let port: number;
const victims: Array<ReturnType<typeof Bun.serve>> = [];
let victimRequests = 0;
let publicServer: ReturnType<typeof Bun.serve>;
const publicHosts: string[] = [];

beforeAll(() => {
  const victim = () => {
    victimRequests++;
    return new Response(
      "<!doctype html><html><head><title>Internal admin</title></head><body>secret</body></html>",
      {
        headers: { "content-type": "text/html" },
      },
    );
  };
  victims.push(Bun.serve({ hostname: LOOPBACK, port: 0, fetch: victim }));
  port = victims[0]!.port as number;
  try {
    victims.push(Bun.serve({ hostname: "::1", port, fetch: victim }));
  } catch {
    // No IPv6 loopback here: `localhost` can then only mean 127.0.0.1.
  }
  publicServer = Bun.serve({
    hostname: PUBLIC,
    port,
    fetch(request) {
      publicHosts.push(request.headers.get("host") ?? "");
      const url = new URL(request.url);
      if (url.pathname === "/hop") return Response.redirect(`http://localhost:${port}/page`, 302);
      return new Response(
        "<!doctype html><html><head><title>Public page</title></head><body><article><p>The tide rises twice a day in the harbour.</p></article></body></html>",
        { headers: { "content-type": "text/html" } },
      );
    },
  });
});
afterAll(() => {
  for (const server of [...victims, publicServer]) server.stop(true);
});
beforeEach(() => {
  victimRequests = 0;
  publicHosts.length = 0;
});

test("a name answering public then loopback is fetched from the public answer, with its Host header", async () => {
  const dns = rebinding([PUBLIC], [LOOPBACK]);
  const page = await webFetch(`http://localhost:${port}/page`, { ...policy, resolve: dns.resolve });
  expect(page.title).toBe("Public page");
  expect(page.markdown).toContain("twice a day");
  expect(publicHosts).toEqual([`localhost:${port}`]);
  expect(dns.asked).toEqual(["localhost"]);
  expect(victimRequests).toBe(0);
});

test("a name answering loopback first, or loopback among public answers, is refused before connecting", async () => {
  for (const answers of [[[LOOPBACK], [PUBLIC]], [[PUBLIC, LOOPBACK]], [[LOOPBACK, PUBLIC]]]) {
    const dns = rebinding(...answers);
    await expect(
      webFetch(`http://localhost:${port}/page`, { ...policy, resolve: dns.resolve }),
    ).rejects.toThrow(/resolves to 127\.0\.0\.1, a private, loopback or link-local address: refused/);
  }
  expect(publicHosts).toEqual([]);
  expect(victimRequests).toBe(0);
});

test("each redirect is resolved, checked and pinned again", async () => {
  // The redirect's lookup answers loopback: refused, although the first hop's answer was public.
  const rebound = rebinding([PUBLIC], [LOOPBACK]);
  await expect(
    webFetch(`http://localhost:${port}/hop`, { ...policy, resolve: rebound.resolve }),
  ).rejects.toThrow(
    /localhost:\d+ resolves to 127\.0\.0\.1, a private, loopback or link-local address: refused/,
  );
  expect(rebound.asked).toEqual(["localhost", "localhost"]);
  expect(publicHosts).toHaveLength(1);
  // Both lookups public, a third one loopback: both hops reach the public server, and nothing asks a third time.
  publicHosts.length = 0;
  const steady = rebinding([PUBLIC], [PUBLIC], [LOOPBACK]);
  const page = await webFetch(`http://localhost:${port}/hop`, { ...policy, resolve: steady.resolve });
  expect(page.title).toBe("Public page");
  expect(steady.asked).toEqual(["localhost", "localhost"]);
  expect(publicHosts).toEqual([`localhost:${port}`, `localhost:${port}`]);
  expect(victimRequests).toBe(0);
});

test("HTTPS goes to the pinned address and names the host in TLS (SNI), not the address", async () => {
  // A bare TCP listener on the pinned address records the TLS ClientHello, then hangs up.
  const hellos: string[] = [];
  const tcp: Server = createServer((socket: Socket) => {
    socket.once("data", (chunk: Buffer) => {
      hellos.push(chunk.toString("latin1"));
      socket.destroy();
    });
  });
  await new Promise<void>((ready) => tcp.listen(0, PUBLIC, ready));
  const tlsPort = (tcp.address() as { port: number }).port;
  try {
    const dns = rebinding([PUBLIC], [LOOPBACK]);
    await expect(
      webFetch(`https://pinned-name.test:${tlsPort}/`, { ...policy, resolve: dns.resolve }),
    ).rejects.toThrow(/fetching https:\/\/pinned-name\.test:\d+\/ failed/);
    expect(hellos).toHaveLength(1);
    expect(hellos[0]).toContain("pinned-name.test");
    expect(dns.asked).toEqual(["pinned-name.test"]);
  } finally {
    await new Promise((closed) => tcp.close(closed));
  }
});
