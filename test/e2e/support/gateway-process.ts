import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..", "..");
const CLI = join(ROOT, "src", "cli", "main.ts");

export interface GatewayProcess {
  url: string;
  logs: string[];
  /** Parsed JSON log lines. */
  events(): Array<Record<string, unknown>>;
  kill(signal?: "SIGKILL" | "SIGTERM" | "SIGINT"): Promise<number>;
  /** The pid of the started command (the shell, when it was started through one). */
  pid: number;
  exited: Promise<number>;
}

/** For a test hook that starts a gateway child process: bun's 5 s default is too short on a busy machine. */
export const GATEWAY_START_TIMEOUT_MS = 20_000;
/** For a hook that stops one with SIGTERM: it drains for up to SWITCHBOARD_SHUTDOWN_GRACE_MS (10 s by default). */
export const GATEWAY_STOP_TIMEOUT_MS = 15_000;

/** A free TCP port on 127.0.0.1 (for webhook URLs that must be known before the gateway starts). */
export function freePort(): number {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = server.port as number;
  server.stop(true);
  return port;
}

/**
 * Starts `switchboard start` as a real child process with `env` and waits until it logs
 * `gateway.started` (or the first of `until`, e.g. `gateway.standby`; the event must carry the
 * `url`). Fails with the process's logs if it exits or takes too long.
 */
export async function startGatewayProcess(
  env: Record<string, string>,
  timeoutMs = 15_000,
  until: readonly string[] = ["gateway.started"],
  command: readonly string[] = [process.execPath, CLI, "start"],
): Promise<GatewayProcess> {
  const child = Bun.spawn([...command], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      SWITCHBOARD_HTTP_PORT: "0",
      ...env,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const logs: string[] = [];
  let started: ((url: string) => void) | null = null;
  const startedPromise = new Promise<string>((resolve) => {
    started = resolve;
  });
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      buffered += decoder.decode(read.value);
      let nl = buffered.indexOf("\n");
      while (nl >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        logs.push(line);
        if (until.some((event) => line.includes(`"event":"${event}"`))) {
          try {
            started?.((JSON.parse(line) as { url: string }).url);
          } catch {}
        }
        nl = buffered.indexOf("\n");
      }
    }
  };
  void pump(child.stdout);
  void pump(child.stderr);
  let startedUrl: string | null = null;
  const url = await Promise.race([
    startedPromise.then((value) => {
      startedUrl = value;
      return value;
    }),
    child.exited.then((code) => {
      if (startedUrl !== null) return startedUrl;
      throw new Error(`gateway exited with ${code} before starting:\n${logs.join("\n")}`);
    }),
    Bun.sleep(timeoutMs).then(() => {
      // Only a gateway that never started is killed here: this timer outlives a successful start.
      if (startedUrl !== null) return startedUrl;
      child.kill("SIGKILL");
      throw new Error(`gateway did not start within ${timeoutMs} ms:\n${logs.join("\n")}`);
    }),
  ]);
  return {
    url,
    logs,
    pid: child.pid,
    exited: child.exited,
    events: () =>
      logs.flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
    async kill(signal = "SIGTERM") {
      child.kill(signal);
      return child.exited;
    },
  };
}

/**
 * The exit code of `gateway` once it exits, or null if it is still running after `timeoutMs`
 * (a bound on the wait, not a pause: it returns as soon as the process ends).
 */
export function exitCodeWithin(gateway: GatewayProcess, timeoutMs: number): Promise<number | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs);
  });
  return Promise.race([gateway.exited, timedOut]).finally(() => clearTimeout(timer));
}

/** Polls `check` until it returns a value (not undefined/false) or the time runs out. */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs: number,
  what: string,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(50);
  }
}
