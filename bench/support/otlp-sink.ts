/**
 * A local OTLP/HTTP collector for benchmarks, in its own process (so its work does not share the
 * bench's event loop with the emulator): it accepts every export, reads its body, answers 200 and
 * counts the requests and bytes, which `stop` reports.
 */
import { startGatewayProcess } from "../../test/e2e/support/gateway-process.ts";

const SINK = `
let requests = 0;
let bytes = 0;
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    if (new URL(request.url).pathname === "/stats") return Response.json({ requests, bytes });
    bytes += (await request.arrayBuffer()).byteLength;
    requests += 1;
    return new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } });
  },
});
console.log(JSON.stringify({ event: "gateway.started", url: "http://127.0.0.1:" + server.port }));
`;

export interface OtlpSink {
  url: string;
  /** Stops it; resolves with what it received. */
  stop(): Promise<{ requests: number; bytes: number }>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  const sink = await startGatewayProcess({}, 10_000, ["gateway.started"], [process.execPath, "-e", SINK]);
  return {
    url: sink.url,
    async stop() {
      const stats = (await (await fetch(`${sink.url}/stats`)).json()) as { requests: number; bytes: number };
      await sink.kill("SIGTERM");
      return stats;
    },
  };
}
