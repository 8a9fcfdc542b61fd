/**
 * Files out end to end on Discord: the fake model server calls send_file, and the gateway process
 * dies (SIGKILL) while the multipart upload hangs after Discord stored it. The upload carries the
 * record's nonce with enforce_nonce, so after the restart it is sent again and shows once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { APIUser } from "discord.js";
import type { OutboxRecord } from "../../outbox/types.ts";
import { type DiscordEmulator, startDiscordEmulator } from "../emulators/discord/index.ts";
import { type FakeLlmServer, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";
import { tempDir } from "../support/runtime.ts";
import { runCliJson } from "./support/cli.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import {
  GATEWAY_START_TIMEOUT_MS,
  type GatewayProcess,
  startGatewayProcess,
} from "./support/gateway-process.ts";

const dir = tempDir("switchboard-e2e-media-out-dc-");
const PNG = new Uint8Array([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52,
]);
let llm: FakeLlmServer;
let discord: DiscordEmulator;
let pages: ReturnType<typeof Bun.serve>;
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
      SWITCHBOARD_FETCH_ALLOW_PRIVATE: "on",
    },
  });
}

beforeAll(async () => {
  llm = startFakeLlmServer();
  discord = startDiscordEmulator({ heartbeatIntervalMs: 1_000 });
  pages = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(PNG) });
  alice = discord.createUser("alice");
  llm.setRules([
    {
      match: { lastUserContains: "send the chart", lastRole: "user" },
      reply: {
        kind: "tool-call",
        toolName: "send_file",
        input: { url: `http://127.0.0.1:${pages.port}/chart.png`, caption: "the chart" },
      },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Here it is." } },
  ]);
  gateway = await startGatewayProcess(env());
}, GATEWAY_START_TIMEOUT_MS);
afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await discord.close();
  await llm.stop();
  pages.stop(true);
  dir.cleanup();
}, GATEWAY_START_TIMEOUT_MS);

test("an upload that hung past Discord's commit is sent again after SIGKILL under the same nonce and shows once", async () => {
  const dmChannelId = discord.dmChannelId(alice.id);
  const uploads = () =>
    discord
      .visibleMessages(dmChannelId)
      .filter((message) => message.author.id === discord.bot.id && message.attachments.length > 0);
  const creates = () =>
    discord.restCalls.filter(
      (call) =>
        call.route === "POST /channels/:id/messages" && call.path === `/channels/${dmChannelId}/messages`,
    );

  discord.failNext("POST /channels/:id/messages", { kind: "hang", afterCommit: true });
  discord.sendDm(alice.id, "please send the chart");
  await discord.waitFor(() => creates().length === 1, 20_000, "the hanging upload");
  expect(uploads()).toHaveLength(1); // Discord stored it; the gateway never got the answer

  await gateway?.kill("SIGKILL");
  gateway = await startGatewayProcess(env());

  await discord.waitFor(
    () =>
      discord
        .visibleMessages(dmChannelId)
        .some((m) => m.author.id === discord.bot.id && m.content === "Here it is."),
    20_000,
    "the answer after the file",
  );
  await Bun.sleep(1_000);
  const shown = uploads();
  expect(shown).toHaveLength(1);
  expect(shown[0]!.content).toBe("the chart");
  expect(shown[0]!.attachments[0]!.filename).toBe("chart.png");
  const [first, retry] = creates().map((call) => call.body as { nonce: string; enforce_nonce: boolean });
  expect(retry!.nonce).toBe(first!.nonce);
  expect(retry!.enforce_nonce).toBe(true);
  expect(creates()[1]!.dedupedByNonce).toBe(true);
  const records = await runCliJson<OutboxRecord[]>(["outbox", "list"], {
    SWITCHBOARD_DB: env().SWITCHBOARD_DB!,
  });
  const file = records.find((r) => r.kind === "message" && r.media !== null);
  expect(file?.state).toBe("delivered");
  expect(file?.receipt?.messageIds).toEqual([shown[0]!.id]);
  // The bot's messages in order: the file, then the answer.
  const bot = discord.visibleMessages(dmChannelId).filter((m) => m.author.id === discord.bot.id);
  expect(bot.map((m) => m.content)).toEqual(["the chart", "Here it is."]);
}, 60_000);
