/**
 * What an operator's supervisor does after a crash: the whole process group of `npm start` is
 * SIGKILLed, leaving no parent to reap the gateway (a zombie where PID 1 does not reap orphans),
 * and the gateway is started again on the same SQLite file at once.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { readProcStat } from "../../src/store/sqlite/claim-holder.ts";
import {
  privateChat,
  startTelegramEmulator,
  type TelegramEmulator,
  user,
} from "../emulators/telegram/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  GATEWAY_START_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";

const dir = tempDir("switchboard-e2e-restart-");
const alice = user(1001, "Alice");
let llm: FakeLlmServer;
let telegram: TelegramEmulator;
const started: GatewayProcess[] = [];

beforeAll(() => {
  llm = startFakeLlmServer();
  telegram = startTelegramEmulator();
});
afterAll(async () => {
  for (const gateway of started) await gateway.kill("SIGKILL");
  await telegram.close();
  await llm.stop();
  dir.cleanup();
});

const env = () =>
  e2eGatewayEnv({
    dir: dir.path,
    llm,
    extra: {
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.url,
      TELEGRAM_ALLOWED_USERS: String(alice.id),
    },
  });

/**
 * Waits until the gateway has recorded every reply as delivered. A reply shows in the chat a
 * moment before its delivery is committed; killed in between, it is ambiguous at the next start
 * and holds back the chat's later replies until an operator decides, which is not what these
 * tests are about.
 */
async function deliveriesRecorded(): Promise<void> {
  const db = new Database(join(dir.path, "gateway.sqlite"), { readonly: true });
  try {
    const open = () =>
      (
        db.query("SELECT count(*) AS n FROM outbox WHERE state IN ('pending', 'sending')").get() as {
          n: number;
        }
      ).n;
    for (let i = 0; i < 500 && open() > 0; i++) await Bun.sleep(10);
    expect(open()).toBe(0);
  } finally {
    db.close();
  }
}

function claimedPid(): number {
  const db = new Database(join(dir.path, "gateway.sqlite"), { readonly: true });
  const row = db.query("SELECT value FROM switchboard_meta WHERE key = 'gateway'").get() as { value: string };
  db.close();
  return (JSON.parse(row.value) as { pid: number }).pid;
}

test("a gateway whose whole process group was SIGKILLed is restarted at once and answers the next message", async () => {
  const first = await startGatewayProcess(
    env(),
    GATEWAY_START_TIMEOUT_MS,
    ["gateway.started"],
    ["setsid", "sh", "-c", "npm start"],
  );
  started.push(first);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "before the crash" });
  await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("before the crash"),
    15_000,
  );
  await deliveriesRecorded();

  const gatewayPid = claimedPid();
  expect(gatewayPid).not.toBe(first.pid);
  // setsid made the shell a group leader: the group is npm, its shell and the gateway.
  process.kill(-first.pid, "SIGKILL");
  await first.exited;
  for (let i = 0; i < 100 && readProcStat(gatewayPid)?.state === "R"; i++) await Bun.sleep(10);
  // Dead, or a zombie nobody reaps: either way its claim's heartbeat is still fresh.
  expect(readProcStat(gatewayPid)?.state ?? "gone").toMatch(/^(gone|Z|X)$/);

  const began = Date.now();
  const second = await startGatewayProcess(env(), GATEWAY_START_TIMEOUT_MS);
  started.push(second);
  // Judged dead at once: the restart did not wait out the 10 s heartbeat.
  expect(Date.now() - began).toBeLessThan(8000);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "after the crash" });
  await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("after the crash"),
    15_000,
  );
}, 60_000);

test("a crash after the answer's step was saved, before the run ended: the restart sends that answer once, without asking the model again", async () => {
  await deliveriesRecorded();
  for (const gateway of started.splice(0)) await gateway.kill("SIGKILL");
  // Terminal delivery: nothing of the answer is sent before the run ends.
  const terminalEnv = () =>
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      surfaces: { "telegram:dm": { delivery: "terminal" } },
      extra: env(),
    });
  const dying = await startGatewayProcess({
    ...terminalEnv(),
    SWITCHBOARD_TEST_KILL_POINT: "step.persisted",
  });
  started.push(dying);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "answered just before dying" });
  await dying.exited;

  started.push(await startGatewayProcess(terminalEnv(), GATEWAY_START_TIMEOUT_MS));
  const reply = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("answered just before dying"),
    15_000,
  );
  expect(reply.visibleText).toBe("echo: answered just before dying");
  expect(llm.requestsContaining("answered just before dying")).toHaveLength(1);
}, 60_000);
