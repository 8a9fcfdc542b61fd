/**
 * The product as a person installs it: the real `switchboard start` process, driven through the
 * web channel, checked through readiness, metrics, the operator API, the CLI's JSON, config
 * errors and graceful shutdown.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { CHANNEL_NAMES } from "../../channels/types.ts";
import { isSwitchboardError } from "../../src/errors.ts";
import { loadConfig } from "../../src/gateway/config/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { runCli } from "./support/cli.ts";
import { eventually, type GatewayProcess, startGatewayProcess } from "./support/gateway-process.ts";
import { waitUntilSettled } from "./support/settled.ts";

const TOKEN = "operator-token-for-tests-0123456789";
const dir = tempDir("switchboard-e2e-gw-");
let llm: FakeLlmServer;

beforeAll(() => {
  llm = startFakeLlmServer();
});
afterAll(async () => {
  await llm.stop();
  dir.cleanup();
});

const sessionId = (n: number) => `session-${n}-abcdefghijklmnopqrstuv`;

async function say(url: string, session: string, text: string, clientMessageId: string) {
  const response = await fetch(`${url}/web/api/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sessionId: session, clientMessageId, text }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Reads the web channel's event stream until a bot message satisfies `predicate`. */
async function waitForReply(
  url: string,
  session: string,
  predicate: (text: string) => boolean,
  timeoutMs: number,
) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  try {
    const response = await fetch(`${url}/web/api/stream`, {
      headers: { accept: "text/event-stream", "x-switchboard-session": session },
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    const texts = new Map<string, string>();
    for (;;) {
      const read = await reader.read();
      if (read.done) throw new Error("stream ended");
      buffered += decoder.decode(read.value);
      let sep = buffered.indexOf("\n\n");
      while (sep >= 0) {
        const frame = buffered.slice(0, sep);
        buffered = buffered.slice(sep + 2);
        sep = buffered.indexOf("\n\n");
        const data = frame
          .split("\n")
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).trim())
          .join("\n");
        if (!data) continue;
        const event = JSON.parse(data) as {
          type: string;
          messageId?: string;
          role?: string;
          text?: string;
          messages?: Array<{ messageId: string; role: string; text: string }>;
        };
        const entries =
          event.type === "snapshot"
            ? (event.messages ?? [])
            : event.messageId
              ? [event as { messageId: string; role?: string; text: string }]
              : [];
        for (const entry of entries) {
          if (entry.role === "user") continue;
          if (entry.text !== undefined) texts.set(entry.messageId, entry.text);
        }
        const found = [...texts.values()].find(predicate);
        if (found) return found;
      }
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/** The transcript the web channel replays to a page that connects now. */
async function firstSnapshot(url: string, session: string) {
  const response = await fetch(`${url}/web/api/stream`, {
    headers: { accept: "text/event-stream", "x-switchboard-session": session },
  });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const dataLine = () =>
    buffered
      .split("\n")
      .find((line) => line.startsWith("data:") && buffered.includes("\n\n", buffered.indexOf(line)));
  try {
    while (dataLine() === undefined) {
      const read = await reader.read();
      if (read.done) throw new Error("stream ended before its snapshot");
      buffered += read.value;
    }
  } finally {
    await reader.cancel();
  }
  const data = dataLine()!.slice(5).trim();
  const event = JSON.parse(data) as { type: string; messages: Array<{ role: string; text: string }> };
  expect(event.type).toBe("snapshot");
  return event.messages;
}

const cli = async (args: string[], env: Record<string, string>) => {
  const { exitCode, stdout, stderr } = await runCli(args, env);
  return { code: exitCode, stdout, stderr };
};

describe("a gateway with nothing configured", () => {
  let gateway: GatewayProcess;
  const dbPath = join(dir.path, "fresh", "switchboard.sqlite");
  beforeAll(async () => {
    gateway = await startGatewayProcess({ SWITCHBOARD_DB: dbPath, SWITCHBOARD_OPERATOR_TOKEN: TOKEN });
  }, 30_000);
  afterAll(async () => {
    await gateway.kill("SIGTERM");
  }, 20_000);

  test("serves the web chat on the offline model and says how to connect the platforms", async () => {
    const page = await fetch(`${gateway.url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("switchboard");
    const sent = await say(gateway.url, sessionId(1), "hello offline world", "message-0001");
    expect(sent.status).toBe(202);
    expect(sent.body.kind).toBe("admitted");
    const reply = await waitForReply(
      gateway.url,
      sessionId(1),
      (t) => t.includes("to connect a real model"),
      15_000,
    );
    expect(reply).toContain("hello offline world");
    // The page retried: the same id and text is the same message; the same id with other text is
    // a client bug, refused with 409, and nothing new is admitted.
    const retried = await say(gateway.url, sessionId(1), "hello offline world", "message-0001");
    expect(retried).toMatchObject({ status: 202, body: { kind: "duplicate", runId: sent.body.runId } });
    const reused = await say(gateway.url, sessionId(1), "something else entirely", "message-0001");
    expect(reused.status).toBe(409);
    expect(reused.body).toMatchObject({ error: { code: "idempotency_conflict" } });
    expect(String((reused.body.error as { message: string }).message)).toContain("new id");
    const hints = gateway.events().filter((e) => e.event === "gateway.channel_not_configured");
    // Its operator token enables the conversation API, so the api channel is configured.
    expect(hints.map((e) => e.channel).sort()).toEqual(
      CHANNEL_NAMES.filter((name) => name !== "web" && name !== "api").sort(),
    );
    expect(gateway.events().some((e) => e.event === "gateway.offline_model")).toBe(true);
    // The database's directory did not exist: it was created, and the log says so.
    expect(gateway.events().find((e) => e.event === "store.directory_created")?.directory).toBe(
      join(dir.path, "fresh"),
    );
  }, 30_000);

  test("a chat command is answered once, through the outbox", async () => {
    const session = sessionId(5);
    const sent = await say(gateway.url, session, "/help", "message-0005");
    expect(sent.body.kind).toBe("command");
    // The web dialect sends the Markdown as written: `/every 0 9 * * 1-5` keeps its asterisks.
    await waitForReply(gateway.url, session, (t) => t === sent.body.reply, 15_000);
    await waitUntilSettled(dbPath);
    const snapshot = await firstSnapshot(gateway.url, session);
    const replies = snapshot.filter((m) => m.role === "assistant").map((m) => m.text);
    expect(replies).toEqual([sent.body.reply as string]);
    const { items: outbox } = (await (
      await fetch(`${gateway.url}/api/outbox?limit=200`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as { items: Array<{ target: string; markdown: string; state: string }> };
    // Addressed to the user id derived from the session: the session id itself is never stored.
    expect(outbox.filter((r) => r.markdown === sent.body.reply).map((r) => r.state)).toEqual(["delivered"]);
    expect(outbox.some((r) => r.target === session)).toBe(false);
  }, 30_000);

  test("health, readiness and metrics", async () => {
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as { checks: Record<string, { ok: boolean }> };
    expect(body.checks.database?.ok).toBe(true);
    expect(body.checks["channel:web"]?.ok).toBe(true);
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toMatch(/switchboard_inbound_accepted_total\{channel="web",account="default"\} [1-9]/);
    expect(metrics).toMatch(/switchboard_runs\{state="completed"\} [1-9]/);
    expect(metrics).toContain("switchboard_outbox_records");
    expect(metrics).toMatch(/switchboard_delivery_latency_ms\{quantile="0.99"\} \d+/);
    expect(metrics).toContain("switchboard_step_latency_ms_bucket");
    expect(metrics).toMatch(/^process_resident_memory_bytes [1-9]\d{6,}$/m);
    expect(metrics).toMatch(/^switchboard_js_heap_used_bytes [1-9]\d{5,}$/m);
    expect(metrics).toMatch(/^switchboard_runtime_lanes \d+$/m);
  }, 20_000);

  test("the operator API refuses a missing or wrong token and answers with the right one", async () => {
    expect((await fetch(`${gateway.url}/api/runs`)).status).toBe(401);
    const wrong = await fetch(`${gateway.url}/api/runs`, {
      headers: { authorization: "Bearer not-the-token-at-all" },
    });
    expect(wrong.status).toBe(401);
    const right = await fetch(`${gateway.url}/api/runs`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(right.status).toBe(200);
    const runs = (await right.json()) as { items: Array<{ state: string }>; nextCursor: string | null };
    expect(runs.items.length).toBeGreaterThan(0);
  }, 20_000);

  test("the console's dashboard and live changes come from the running gateway", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const dashboard = (await (await fetch(`${gateway.url}/api/dashboard`, { headers: auth })).json()) as {
      checks: Record<string, { ok: boolean }>;
      latency: { stages: Record<string, { count: number } | null> };
      usageToday: { steps: number };
    };
    expect(dashboard.checks["channel:web"]?.ok).toBe(true);
    expect(dashboard.latency.stages.admit?.count).toBeGreaterThan(0);
    expect(dashboard.usageToday.steps).toBeGreaterThan(0);
    // A message admitted and answered shows up on the change stream as it happens.
    const abort = new AbortController();
    const stream = await fetch(`${gateway.url}/api/events`, { headers: auth, signal: abort.signal });
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    const sent = await say(gateway.url, sessionId(17), "live change please", "message-0017");
    let text = "";
    while (!(text.includes(`"runId":"${sent.body.runId}"`) && text.includes('"state":"completed"'))) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the change stream ended");
      text += value;
    }
    abort.abort();
    expect(text).toContain('"kind":"run"');
    expect(text).not.toContain("live change please");
  }, 30_000);

  test("a second gateway on the same SQLite file refuses to start and names the one running; the first keeps answering", async () => {
    const second = await cli(["start"], { SWITCHBOARD_DB: dbPath, SWITCHBOARD_HTTP_PORT: "0" });
    expect(second.code).toBe(78);
    expect(second.stderr).toContain(`Another switchboard gateway (pid `);
    expect(second.stderr).toContain(`is already running on ${dbPath}`);
    expect(second.stderr).toContain("SWITCHBOARD_STANDBY=on");
    const sent = await say(gateway.url, sessionId(7), "still here?", "message-0007");
    expect(sent.status).toBe(202);
    await waitForReply(gateway.url, sessionId(7), (t) => t.includes("still here?"), 15_000);
  }, 30_000);

  test("the CLI reads the same database and prints JSON", async () => {
    const result = await cli(["runs", "list", "--json"], { SWITCHBOARD_DB: dbPath });
    expect(result.code).toBe(0);
    const runs = JSON.parse(result.stdout) as Array<{ id: string; state: string }>;
    expect(runs.some((r) => r.state === "completed")).toBe(true);
    const conversations = JSON.parse(
      (await cli(["conversations", "list", "--json"], { SWITCHBOARD_DB: dbPath })).stdout,
    );
    expect(conversations.length).toBeGreaterThan(0);
  }, 20_000);
});

describe("configuration errors stop startup with a message and exit code 78", () => {
  /**
   * Settings the configuration refuses on reading: checked in process (`switchboard start` prints
   * the same error and exits 78, as "bad port" shows below through a real process).
   */
  const refusedOnReading: Array<[string, Record<string, string>, RegExp]> = [
    ["bad log level", { SWITCHBOARD_LOG_LEVEL: "loud" }, /SWITCHBOARD_LOG_LEVEL must be/],
    [
      "bad time zone",
      { SWITCHBOARD_TIMEZONE: "Mars/Olympus" },
      /SWITCHBOARD_TIMEZONE is not an IANA time zone/,
    ],
    [
      "short operator token",
      { SWITCHBOARD_OPERATOR_TOKEN: "short" },
      /SWITCHBOARD_OPERATOR_TOKEN must be at least 16/,
    ],
    [
      "webhook without URL",
      { TELEGRAM_BOT_TOKEN: "123:abcdefghijklmnopqrstuvwxyz", TELEGRAM_MODE: "webhook" },
      /TELEGRAM_WEBHOOK_URL must be set/,
    ],
    [
      "slack without app token or secret",
      { SLACK_BOT_TOKEN: "xoxb-123" },
      /SLACK_APP_TOKEN or SLACK_SIGNING_SECRET/,
    ],
    [
      "missing config file",
      { SWITCHBOARD_CONFIG: "/nonexistent/switchboard.json" },
      /SWITCHBOARD_CONFIG points at .* which does not exist/,
    ],
    [
      "a database URL and a database file",
      { SWITCHBOARD_DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres" },
      /SWITCHBOARD_DATABASE_URL and SWITCHBOARD_DB are both set/,
    ],
    [
      "a database URL that is not PostgreSQL",
      { SWITCHBOARD_DB: "", SWITCHBOARD_DATABASE_URL: "mysql://root@127.0.0.1/switchboard" },
      /SWITCHBOARD_DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/,
    ],
    [
      "a standby without PostgreSQL",
      { SWITCHBOARD_STANDBY: "on" },
      /SWITCHBOARD_STANDBY needs SWITCHBOARD_DATABASE_URL/,
    ],
    [
      "a standby setting that is not on or off",
      { SWITCHBOARD_STANDBY: "yes" },
      /SWITCHBOARD_STANDBY must be on or off \(got "yes"\)/,
    ],
    [
      "the web chat forced on where other machines reach it, without a token",
      { SWITCHBOARD_HTTP_HOST: "0.0.0.0", SWITCHBOARD_WEB: "on" },
      /SWITCHBOARD_WEB_TOKEN must be set for SWITCHBOARD_WEB=on because SWITCHBOARD_HTTP_HOST=0.0.0.0/,
    ],
    [
      "a public URL with a path",
      { SWITCHBOARD_PUBLIC_URL: "https://chat.example.com/bot" },
      /SWITCHBOARD_PUBLIC_URL must be an origin/,
    ],
    [
      "bad ambiguous hold",
      { SWITCHBOARD_AMBIGUOUS_HOLD_MS: "5 minutes" },
      /SWITCHBOARD_AMBIGUOUS_HOLD_MS must be a whole number of milliseconds or "forever"/,
    ],
    [
      "bad allow list",
      { DISCORD_BOT_TOKEN: "abc", DISCORD_ALLOWED_USERS: "ok,not valid!" },
      /DISCORD_ALLOWED_USERS has "not valid!", which is not a user id/,
    ],
  ];
  for (const [name, env, message] of refusedOnReading) {
    test(name, () => {
      let refusal: unknown = null;
      try {
        loadConfig({
          SWITCHBOARD_DB: join(dir.path, "cfg", `${name}.sqlite`),
          SWITCHBOARD_HTTP_PORT: "0",
          ...env,
        });
      } catch (error) {
        refusal = error;
      }
      expect(isSwitchboardError(refusal, "config_invalid")).toBe(true);
      expect((refusal as Error).message).toMatch(message);
    });
  }

  // Through `switchboard start`: one setting refused on reading, and those only starting finds out.
  const holder = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  afterAll(() => holder.stop(true));
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    [
      "bad port",
      { SWITCHBOARD_HTTP_PORT: "eighty" },
      /^switchboard: configuration error: SWITCHBOARD_HTTP_PORT.*Example: SWITCHBOARD_HTTP_PORT=8787/m,
    ],
    ["unknown model kind", { SWITCHBOARD_MODEL: "skynet:v1" }, /SWITCHBOARD_MODEL/],
    [
      "a host that is no address of this machine",
      { SWITCHBOARD_HTTP_HOST: "no-such-host.invalid" },
      /^switchboard: configuration error: SWITCHBOARD_HTTP_HOST "no-such-host.invalid" is not an address of this machine/m,
    ],
    [
      "a port another program listens on",
      { SWITCHBOARD_HTTP_PORT: String(holder.port) },
      new RegExp(
        `^switchboard: configuration error: SWITCHBOARD_HTTP_PORT ${holder.port} is already in use on 127.0.0.1`,
        "m",
      ),
    ],
    [
      "a database path that is a directory",
      { SWITCHBOARD_DB: dir.path },
      /^switchboard: configuration error: SWITCHBOARD_DB names \/tmp\/.* which cannot be opened as a database file/m,
    ],
  ];
  for (const [name, env, message] of cases) {
    test(name, async () => {
      const result = await cli(["start"], {
        SWITCHBOARD_DB: join(dir.path, "cfg", `${name}.sqlite`),
        SWITCHBOARD_HTTP_PORT: "0",
        ...env,
      });
      expect(result.code).toBe(78);
      expect(result.stderr).toMatch(message);
    }, 20_000);
  }
});

test("an unreachable PostgreSQL server stops startup with what to check, and never prints the password", async () => {
  const result = await cli(["start"], {
    SWITCHBOARD_DATABASE_URL: "postgres://switchboard:sup3r-secret-pw@127.0.0.1:1/switchboard",
  });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain(
    "Cannot open the PostgreSQL database at postgres://switchboard:***@127.0.0.1:1/",
  );
  expect(result.stderr).toContain("SWITCHBOARD_DATABASE_URL");
  expect(result.stderr + result.stdout).not.toContain("sup3r-secret-pw");
}, 20_000);

describe("graceful shutdown", () => {
  test("SIGTERM lets the answer in flight finish and be delivered, then exits 0", async () => {
    llm.addRules([
      {
        match: { lastUserContains: "slow goodbye" },
        reply: { kind: "text", text: "a slow careful goodbye answer", chunks: 5, chunkDelayMs: 300 },
      },
    ]);
    const gateway = await startGatewayProcess({
      SWITCHBOARD_DB: join(dir.path, "shutdown.sqlite"),
      SWITCHBOARD_MODEL: "openai-compatible:test-model",
      OPENAI_COMPATIBLE_BASE_URL: llm.openaiBaseUrl,
      SWITCHBOARD_SHUTDOWN_GRACE_MS: "8000",
    });
    const session = sessionId(2);
    const replyPromise = waitForReply(
      gateway.url,
      session,
      (t) => t.includes("a slow careful goodbye answer"),
      15_000,
    );
    await say(gateway.url, session, "a slow goodbye please", "message-0001");
    await eventually(
      () => llm.requests().some((r) => r.lastUserText.includes("slow goodbye")),
      10_000,
      "the model call",
    );
    const exited = gateway.kill("SIGTERM");
    const reply = await replyPromise.catch((error) => {
      throw new Error(`${error}\n${gateway.logs.join("\n")}`);
    });
    expect(reply).toContain("careful goodbye");
    expect(await exited).toBe(0);
    const stopped = gateway.events().find((e) => e.event === "gateway.stopped");
    expect(stopped).toMatchObject({ runsSettled: true, runsRemaining: 0 });
  }, 40_000);

  test("a run cut by the grace period is released and answered once after the next start", async () => {
    llm.addRules([
      {
        match: { lastUserContains: "very long job" },
        reply: { kind: "text", text: "finally done with the long job", chunks: 6, chunkDelayMs: 700 },
      },
    ]);
    const env = {
      SWITCHBOARD_DB: join(dir.path, "released.sqlite"),
      SWITCHBOARD_MODEL: "openai-compatible:test-model",
      OPENAI_COMPATIBLE_BASE_URL: llm.openaiBaseUrl,
      SWITCHBOARD_SHUTDOWN_GRACE_MS: "300",
    };
    const first = await startGatewayProcess(env);
    const session = sessionId(3);
    await say(first.url, session, "a very long job", "message-0001");
    await eventually(
      () => llm.requests().some((r) => r.lastUserText.includes("very long job")),
      10_000,
      "the model call",
    );
    expect(await first.kill("SIGTERM")).toBe(0);
    expect(first.events().find((e) => e.event === "gateway.stopped")).toBeDefined();
    const runs = JSON.parse(
      (await cli(["runs", "list", "--json"], { SWITCHBOARD_DB: env.SWITCHBOARD_DB })).stdout,
    ) as Array<{
      state: string;
    }>;
    expect(runs.map((r) => r.state)).toEqual(["queued"]);

    const second = await startGatewayProcess(env);
    try {
      const reply = await waitForReply(
        second.url,
        session,
        (t) => t.includes("finally done with the long job"),
        20_000,
      );
      expect(reply).toContain("finally done with the long job");
      const after = JSON.parse(
        (await cli(["runs", "list", "--json"], { SWITCHBOARD_DB: env.SWITCHBOARD_DB })).stdout,
      ) as Array<{
        state: string;
      }>;
      expect(after.map((r) => r.state)).toEqual(["completed"]);
    } finally {
      await second.kill("SIGTERM");
    }
  }, 60_000);
});

describe("the terminal chat and a second signal", () => {
  const chat = (stdin: "pipe" | Blob) =>
    Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "src", "cli", "main.ts"), "chat"], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: "/tmp",
        USER: "tester",
        SWITCHBOARD_DB: join(dir.path, "chat.sqlite"),
      },
      stdin,
      stdout: "pipe",
      stderr: "pipe",
    });

  test("`switchboard chat` answers every line, also those typed while it answers, and exits 0 at the end of input", async () => {
    const child = chat("pipe");
    const stdin = child.stdin as import("bun").FileSink;
    stdin.write("hello from the terminal\nand a second line right away\n");
    stdin.end();
    const [stdout, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    expect(code).toBe(0);
    expect(stdout).toContain("switchboard chat — model: offline");
    expect(stdout).not.toContain("model model");
    expect(stdout).toContain("offline");
    expect(stdout).toContain("hello from the terminal");
    expect(stdout).toContain("and a second line right away");
  }, 30_000);

  test("`switchboard chat < /dev/null` exits 0", async () => {
    const child = chat(new Blob([]));
    expect(await child.exited).toBe(0);
  }, 30_000);

  test("a second SIGTERM exits at once instead of waiting for the grace period", async () => {
    llm.addRules([{ match: { lastUserContains: "never finishes" }, reply: { kind: "hang" } }]);
    const gateway = await startGatewayProcess({
      SWITCHBOARD_DB: join(dir.path, "second-signal.sqlite"),
      SWITCHBOARD_MODEL: "openai-compatible:test-model",
      OPENAI_COMPATIBLE_BASE_URL: llm.openaiBaseUrl,
      SWITCHBOARD_SHUTDOWN_GRACE_MS: "60000",
    });
    await say(gateway.url, sessionId(4), "this never finishes", "message-0001");
    await eventually(
      () => llm.requests().some((r) => r.lastUserText.includes("never finishes")),
      10_000,
      "the model call",
    );
    void gateway.kill("SIGTERM");
    const firstAt = Date.now();
    await eventually(
      () => gateway.events().some((e) => e.event === "gateway.stopping"),
      5_000,
      "graceful shutdown to begin",
    );
    // Within a second it would count as the first one relayed again (see signal-relay.test.ts).
    await eventually(() => Date.now() - firstAt > 1100, 5_000, "a second to pass");
    const started = Date.now();
    expect(await gateway.kill("SIGTERM")).toBe(130);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(gateway.events().some((e) => e.event === "gateway.forced_exit")).toBe(true);
  }, 40_000);
});

test("SWITCHBOARD_LOG_FORMAT=pretty: readable lines, and the start-up hints on lines of their own", async () => {
  const child = Bun.spawn(
    [process.execPath, join(import.meta.dir, "..", "..", "src", "cli", "main.ts"), "start"],
    {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        SWITCHBOARD_HTTP_PORT: "0",
        SWITCHBOARD_DB: join(dir.path, "pretty.sqlite"),
        SWITCHBOARD_LOG_FORMAT: "pretty",
      },
      stdout: "ignore",
      stderr: "pipe",
    },
  );
  let text = "";
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  try {
    await eventually(
      async () => {
        const read = await reader.read();
        if (!read.done) text += read.value;
        return text.includes("gateway.offline_model") || read.done;
      },
      20_000,
      "the offline-model hint",
    );
  } finally {
    child.kill("SIGTERM");
    await child.exited;
  }
  const lines = text.split("\n");
  const started = lines.find((line) => line.includes("gateway.started"));
  expect(started).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}gateway\.started url=http:\/\/127\.0\.0\.1:\d+ /);
  const warning = lines.findIndex((line) => line.includes("WARN  gateway.offline_model"));
  expect(lines[warning + 1]?.trim()).toBe(
    "→ set OPENROUTER_API_KEY (or SWITCHBOARD_MODEL) to connect a real model",
  );
  expect(text).not.toContain('{"time"');
}, 30_000);

test("the web chat's transcript survives a restart: the page gets back what it showed, commands included", async () => {
  const env = { SWITCHBOARD_DB: join(dir.path, "transcript.sqlite") };
  const session = sessionId(9);
  const first = await startGatewayProcess(env);
  try {
    await say(first.url, session, "remember this line", "message-0901");
    await waitForReply(first.url, session, (t) => t.includes("remember this line"), 15_000);
    const help = await say(first.url, session, "/help", "message-0902");
    await waitForReply(first.url, session, (t) => t === help.body.reply, 15_000);
  } finally {
    await first.kill("SIGTERM");
  }
  const second = await startGatewayProcess(env);
  try {
    const shown = await firstSnapshot(second.url, session);
    expect(shown.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(shown[0]!.text).toBe("remember this line");
    expect(shown[1]!.text).toContain("remember this line");
    expect(shown[2]!.text).toBe("/help");
    expect(shown[3]!.text).toContain("/new");
    // Another session sees none of it.
    expect(await firstSnapshot(second.url, sessionId(10))).toEqual([]);
  } finally {
    await second.kill("SIGTERM");
  }
}, 60_000);
