/**
 * An interrupted Discord send end to end: the gateway process dies (SIGKILL) while a message create
 * hangs after Discord already stored it. Discord sends are idempotent (nonce + enforce_nonce), so
 * after the restart the record is sent again with the same nonce and the chat shows it once.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { APIUser } from "discord.js";
import type { OutboxRecord } from "../../outbox/types.ts";
import { type DiscordEmulator, startDiscordEmulator } from "../emulators/discord/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { runCliJson } from "./support/cli.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  eventually,
  GATEWAY_START_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";

const dir = tempDir("switchboard-e2e-outbox-dc-");
let llm: FakeLlmServer;
let discord: DiscordEmulator;
let alice: APIUser;
let gateway: GatewayProcess | undefined;

function env(): Record<string, string> {
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    surfaces: { "discord:dm": { inputPolicy: "queue", delivery: "terminal" } },
    extra: {
      DISCORD_BOT_TOKEN: discord.token,
      DISCORD_API_URL: discord.apiUrl,
      DISCORD_ALLOWED_USERS: alice.id,
    },
  });
}

beforeAll(async () => {
  llm = startFakeLlmServer();
  discord = startDiscordEmulator({ heartbeatIntervalMs: 1_000 });
  alice = discord.createUser("alice");
  gateway = await startGatewayProcess(env());
}, GATEWAY_START_TIMEOUT_MS);
afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await discord.close();
  await llm.stop();
  dir.cleanup();
}, GATEWAY_START_TIMEOUT_MS);

test("a create that hung past Discord's commit is retried after SIGKILL with the same nonce and shows once", async () => {
  const dmChannelId = discord.dmChannelId(alice.id);
  const createsInDm = () =>
    discord.restCalls.filter(
      (call) =>
        call.route === "POST /channels/:id/messages" && call.path === `/channels/${dmChannelId}/messages`,
    );
  const answers = () =>
    discord
      .visibleMessages(dmChannelId)
      .filter(
        (message) => message.author.id === discord.bot.id && message.content === "echo: hang on discord",
      );

  discord.failNext("POST /channels/:id/messages", { kind: "hang", afterCommit: true });
  discord.sendDm(alice.id, "hang on discord");
  await discord.waitFor(() => createsInDm().length === 1, 15_000, "the hanging create");
  expect(answers()).toHaveLength(1); // Discord stored it; the gateway never got the answer

  const dbPath = env().SWITCHBOARD_DB!;
  const db = new Database(dbPath, { readonly: true });
  const row = db.query("SELECT id, state FROM outbox WHERE markdown = 'echo: hang on discord'").get() as {
    id: string;
    state: string;
  };
  db.close();
  expect(row.state).toBe("sending");

  await gateway?.kill("SIGKILL");
  gateway = await startGatewayProcess(env());

  const record = await eventually(
    async () => {
      const shown = await runCliJson<OutboxRecord>(["outbox", "show", row.id], { SWITCHBOARD_DB: dbPath });
      return shown.state === "delivered" ? shown : undefined;
    },
    15_000,
    "the requeued record to be delivered",
  );
  const creates = createsInDm();
  expect(creates).toHaveLength(2);
  const [first, retry] = creates.map((call) => call.body as { nonce: string; enforce_nonce: boolean });
  expect(retry!.nonce).toBe(first!.nonce);
  expect(retry!.enforce_nonce).toBe(true);
  expect(creates[1]!.dedupedByNonce).toBe(true);

  await Bun.sleep(1_000);
  const shownOnce = answers();
  expect(shownOnce).toHaveLength(1);
  expect(record.receipt?.messageIds).toEqual([shownOnce[0]!.id]);
  expect(record.history.map((entry) => entry.action)).toContain("recovered");
}, 45_000);
