/**
 * `switchboard chat`: chat commands are answered as on every channel (never sent to the model),
 * also while an answer is being written, and leave nothing in the outbox (the terminal shows them).
 */
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { ROOT } from "./support/cli.ts";

const dir = tempDir("switchboard-cli-chat-");
const llm: FakeLlmServer = startFakeLlmServer();
llm.addRules([
  {
    match: { lastUserContains: "write slowly" },
    reply: { kind: "text", text: "a long answer", chunks: 40, chunkDelayMs: 150 },
  },
]);
afterAll(async () => {
  await llm.stop();
  dir.cleanup();
});

function chat(dbFile: string) {
  const child = Bun.spawn([process.execPath, join(ROOT, "src", "cli", "main.ts"), "chat"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      USER: "tester",
      SWITCHBOARD_DB: join(dir.path, dbFile),
      SWITCHBOARD_MODEL: "openai-compatible:test-model",
      OPENAI_COMPATIBLE_BASE_URL: llm.openaiBaseUrl,
    },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  return {
    write: (text: string) => child.stdin.write(text),
    end: () => child.stdin.end(),
    async exited() {
      const [stdout, stderr, code] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
        child.exited,
      ]);
      return { code, stdout, stderr };
    },
  };
}

function rows(dbFile: string, sql: string): Array<Record<string, unknown>> {
  const db = new Database(join(dir.path, dbFile), { readonly: true });
  try {
    return db.query(sql).all() as Array<Record<string, unknown>>;
  } finally {
    db.close();
  }
}

test("/status, /goal, /todo and /help are answered by the chat commands, never by the model", async () => {
  const session = chat("commands.sqlite");
  session.write("/status\n/goal ship the release\n/todo\n/in 10m stretch\n/help\n");
  session.end();
  const { code, stdout, stderr } = await session.exited();
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  expect(stdout).toContain("Answers: 0 running, 0 queued");
  expect(stdout).toContain("Goal set: ship the release");
  expect(stdout).toContain("ship the release");
  expect(stdout).toContain("The terminal chat has no schedules");
  expect(stdout).toContain("/stop — stop the answer in progress");
  expect(llm.requests()).toHaveLength(0);
  expect(rows("commands.sqlite", "SELECT role FROM messages")).toEqual([]);
  // The terminal showed the replies: none waits in the outbox for a channel to deliver it.
  expect(rows("commands.sqlite", "SELECT id FROM outbox")).toEqual([]);
}, 30_000);

test("/stop typed while an answer is written stops it at once", async () => {
  const session = chat("stop.sqlite");
  session.write("write slowly, please\n");
  const deadline = Date.now() + 15_000;
  while (!llm.requests().some((r) => r.lastUserText.includes("write slowly")) && Date.now() < deadline)
    await Bun.sleep(50);
  session.write("/stop\n");
  session.end();
  const { code, stdout } = await session.exited();
  expect(code).toBe(0);
  expect(stdout).toContain("Stopped the answer in progress.");
  expect(stdout).toContain("[interrupted]");
  expect(stdout).not.toContain("a long answer");
  expect(llm.requests().filter((r) => r.lastUserText.includes("/stop"))).toHaveLength(0);
}, 30_000);
