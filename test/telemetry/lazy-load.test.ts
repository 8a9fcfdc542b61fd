/**
 * Telemetry off costs nothing: a process that loads the whole gateway and asks for telemetry
 * without an OTLP endpoint has no OpenTelemetry module loaded. With an endpoint, the same
 * check finds them (so it can tell the two apart).
 */
import { expect, test } from "bun:test";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

/** The @opentelemetry and @ai-sdk/otel modules a fresh process has loaded after `startTelemetry(env)`. */
async function loadedWith(env: Record<string, string>): Promise<string[]> {
  const script = `
    await import(${JSON.stringify(join(ROOT, "src", "gateway", "main.ts"))});
    const { startTelemetry } = await import(${JSON.stringify(join(ROOT, "src", "telemetry", "start.ts"))});
    const logger = { info() {}, warn() {}, error() {}, debug() {}, child() { return logger; } };
    const telemetry = await startTelemetry(${JSON.stringify(env)}, { secrets: [], logger });
    const tracing = telemetry?.tracing({ runtime: {}, outbox: {} });
    await tracing?.ingress({ channel: "telegram", account: "1", surface: "dm" }, async () => ({ kind: "ignored", reason: "probe" }));
    const loaded = Object.keys(require.cache).filter((k) => k.includes("@opentelemetry") || k.includes("@ai-sdk/otel"));
    await telemetry?.shutdown();
    console.log(JSON.stringify(loaded));
  `;
  const child = Bun.spawn([process.execPath, "-e", script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`the probe exited ${code}: ${err}`);
  return JSON.parse(out.trim().split("\n").at(-1)!) as string[];
}

test("without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry module is loaded", async () => {
  expect(await loadedWith({ SWITCHBOARD_TRACE_CONTENT: "on" })).toEqual([]);
}, 20_000);

test("with OTEL_EXPORTER_OTLP_ENDPOINT the SDK and the AI SDK's integration are loaded, and spans leave as protobuf by default", async () => {
  const received: string[] = [];
  const collector = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      await request.arrayBuffer();
      received.push(`${new URL(request.url).pathname} ${request.headers.get("content-type")}`);
      return new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } });
    },
  });
  try {
    const loaded = await loadedWith({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`,
      OTEL_METRICS_EXPORTER: "none",
    });
    expect(loaded.some((k) => k.includes("@opentelemetry/sdk-node"))).toBe(true);
    expect(loaded.some((k) => k.includes("@ai-sdk/otel"))).toBe(true);
    expect(received).toEqual(["/v1/traces application/x-protobuf"]);
  } finally {
    await collector.stop(true);
  }
}, 20_000);
