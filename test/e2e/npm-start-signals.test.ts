/**
 * `npm start` under a supervisor or in a terminal: a stop signal reaches the gateway, which shuts
 * down gracefully, and no process of the tree outlives it holding the database or the port. npm
 * runs the script through `sh -c`, which does not pass signals on, so the script `exec`s Bun; npm
 * also relays SIGINT/SIGTERM to its child, so the gateway may get the same signal twice at once,
 * which must not count as the operator's second, forcing signal.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { readProcStat } from "../../src/store/sqlite/claim-holder.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { slowAnswerRule } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  eventually,
  freePort,
  GATEWAY_START_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";

const dir = tempDir("switchboard-e2e-npm-start-");
const llm = startFakeLlmServer();
const telegram = startTelegramEmulator();
const alice = user(1001, "Alice");
const GRACE_MS = 5000;
/** Written in 6 pieces 300 ms apart: still being written when the stop signal comes. */
const SLOW_ANSWER = "an answer that takes a while to write";
llm.addRules([slowAnswerRule("take your time", SLOW_ANSWER, 6, 300)]);
let started: GatewayProcess[] = [];
/** Every process of the trees started, killed after each test whatever happened. */
let trees: number[] = [];

afterEach(async () => {
  for (const pid of trees) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  for (const gateway of started) {
    gateway.kill("SIGKILL");
    await gateway.exited;
  }
  started = [];
  trees = [];
});
afterAll(async () => {
  await telegram.close();
  await llm.stop();
  dir.cleanup();
});

/** `pid` and every process below it, from /proc. */
function processTree(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    const ppid = parentOf(Number(entry));
    if (ppid !== null) parents.set(Number(entry), ppid);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child);
  }
  return tree;
}

/** The parent pid from /proc/<pid>/stat (field 4, after the parenthesised command name). */
function parentOf(pid: number): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
}

/** Gone, or dead and waiting to be reaped. */
const ended = (pid: number) => /^(Z|X)?$/.test(readProcStat(pid)?.state ?? "");

const STOPS = [
  {
    name: "SIGTERM to the npm process (a supervisor)",
    command: ["setsid", "npm", "start"],
    stop: (npmPid: number) => process.kill(npmPid, "SIGTERM"),
  },
  {
    // The terminal signals the whole foreground group, and npm relays it to its child as well.
    name: "Ctrl-C in a terminal (SIGINT to npm's process group)",
    command: ["setsid", "npm", "start"],
    stop: (npmPid: number) => process.kill(-npmPid, "SIGINT"),
  },
  {
    // npx runs bin/switchboard through `sh -c`, which dies of the relayed signal.
    name: "npx: SIGTERM to `npx switchboard start`",
    command: ["setsid", "npx", "switchboard", "start"],
    stop: (npxPid: number) => process.kill(npxPid, "SIGTERM"),
  },
];

describe("npm start and npx switchboard start", () => {
  test.each(STOPS)(
    "$name: the gateway finishes the answer being written, every process exits, and the database and port are free",
    async ({ name, command, stop }) => {
      const port = freePort();
      const env = e2eGatewayEnv({
        dir: dir.path,
        llm,
        dbFile: `${name.split(" ")[0]}.sqlite`,
        extra: {
          SWITCHBOARD_HTTP_PORT: String(port),
          SWITCHBOARD_SHUTDOWN_GRACE_MS: String(GRACE_MS),
          TELEGRAM_BOT_TOKEN: telegram.token,
          TELEGRAM_API_ROOT: telegram.url,
          TELEGRAM_ALLOWED_USERS: String(alice.id),
        },
      });
      const npm = await startGatewayProcess(env, GATEWAY_START_TIMEOUT_MS, ["gateway.started"], command);
      started.push(npm);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      const tree = processTree(npm.pid);
      trees.push(...tree);
      // npm and, below it, the gateway.
      expect(tree.length).toBeGreaterThanOrEqual(2);

      const asked = `take your time (${name})`;
      telegram.incoming({ chat: privateChat(alice), from: alice, text: asked });
      await eventually(
        () => llm.requests().some((r) => r.lastUserText.includes(asked)),
        10_000,
        "the model to be asked",
      );

      const stoppedAt = Date.now();
      stop(npm.pid);
      await eventually(() => tree.every(ended), GRACE_MS, `every process of ${tree.join(", ")} to exit`);
      expect(Date.now() - stoppedAt).toBeLessThan(GRACE_MS);
      expect(npm.events().filter((e) => e.event === "gateway.stopping")).toHaveLength(1);
      expect(npm.events().some((e) => e.event === "gateway.stopped")).toBe(true);
      expect(npm.events().some((e) => e.event === "gateway.forced_exit")).toBe(false);
      // Graceful: the answer being written when the signal came was finished and delivered.
      expect(telegram.messages(alice.id).some((m) => m.fromBot && m.visibleText.includes(SLOW_ANSWER))).toBe(
        true,
      );

      // Nothing holds the database or the port: a new gateway starts on both.
      const next = await startGatewayProcess(env, GATEWAY_START_TIMEOUT_MS);
      started.push(next);
      expect((await fetch(`${next.url}/healthz`)).status).toBe(200);
      expect(await next.kill("SIGTERM")).toBe(0);
    },
    60_000,
  );
});
