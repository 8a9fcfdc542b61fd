/**
 * Files out end to end on Slack (Socket Mode): the fake model server calls send_file, the gateway
 * uploads through files.getUploadURLExternal and files.completeUploadExternal. A SIGKILL while
 * the completion hangs leaves the record ambiguous: Slack's upload has no idempotency key.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { OutboxRecord } from "../../outbox/types.ts";
import { type SlackEmulator, startSlackEmulator } from "../emulators/slack/index.ts";
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

const dir = tempDir("switchboard-e2e-media-out-slack-");
const ALICE = "U0ALICE";
const BOB = "U0BOB";
const PDF = new TextEncoder().encode("%PDF-1.7\n% a small report\n");
let llm: FakeLlmServer;
let slack: SlackEmulator;
let pages: ReturnType<typeof Bun.serve>;
let gateway: GatewayProcess | undefined;

function env(): Record<string, string> {
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    surfaces: { "slack:dm": { inputPolicy: "queue", delivery: "terminal" } },
    extra: {
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_API_URL: `${slack.url}/api`,
      SLACK_ALLOWED_USERS: `${ALICE},${BOB}`,
      SLACK_APP_TOKEN: slack.appToken,
      SWITCHBOARD_FETCH_ALLOW_PRIVATE: "on",
    },
  });
}

const dmChannel = (user: string) => `D${user.slice(1)}`;
const sharedFiles = (user: string) => slack.messages(dmChannel(user)).filter((m) => m.files !== undefined);

beforeAll(async () => {
  llm = startFakeLlmServer();
  slack = startSlackEmulator();
  pages = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(PDF) });
  llm.setRules([
    {
      match: { lastUserContains: "send the report", lastRole: "user" },
      reply: {
        kind: "tool-call",
        toolName: "send_file",
        input: { url: `http://127.0.0.1:${pages.port}/report.pdf`, caption: "the report" },
      },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Sent it." } },
  ]);
  gateway = await startGatewayProcess(env());
}, GATEWAY_START_TIMEOUT_MS);
afterAll(async () => {
  await gateway?.kill("SIGTERM");
  await slack.close();
  await llm.stop();
  pages.stop(true);
  dir.cleanup();
}, GATEWAY_START_TIMEOUT_MS);

test("the agent sends a file: it is shared once with its caption, before the answer", async () => {
  slack.pushEvent(slack.events.dm({ user: ALICE, text: "please send the report" }));
  await slack.waitFor(
    () => slack.messages(dmChannel(ALICE)).find((m) => m.text === "Sent it."),
    30_000,
    "the answer after the file",
  );
  await Bun.sleep(1_000);
  const shared = sharedFiles(ALICE);
  expect(shared).toHaveLength(1);
  expect(shared[0]!.text).toBe("the report");
  expect(shared[0]!.files!.map((f) => f.filename)).toEqual(["report.pdf"]);
  expect([...shared[0]!.files![0]!.bytes]).toEqual([...PDF]);
  expect(slack.messages(dmChannel(ALICE)).map((m) => m.text)).toEqual(["the report", "Sent it."]);
}, 60_000);

test("SIGKILL while the upload's completion hangs: after the restart the record is ambiguous and not sent again", async () => {
  slack.failNext("files.completeUploadExternal", { kind: "hang" });
  slack.pushEvent(slack.events.dm({ user: BOB, text: "please send the report to bob" }));
  await slack.waitFor(
    () => slack.calls().some((c) => c.method === "files.completeUploadExternal" && c.fault === "hang"),
    30_000,
    "the hanging completion",
  );
  await gateway?.kill("SIGKILL");
  gateway = await startGatewayProcess(env());
  const dbEnv = { SWITCHBOARD_DB: env().SWITCHBOARD_DB! };
  const ambiguous = await eventually(
    async () => {
      const records = await runCliJson<OutboxRecord[]>(["outbox", "list", "--state", "ambiguous"], dbEnv);
      return records.find((r) => r.kind === "message" && r.media?.filename === "report.pdf");
    },
    15_000,
    "the interrupted upload to be listed as ambiguous",
  );
  expect(ambiguous.lastError).toMatch(/interrupted while sending/);
  await Bun.sleep(1_500);
  expect(slack.calls().filter((c) => c.method === "files.getUploadURLExternal")).toHaveLength(2);
  expect(sharedFiles(BOB)).toEqual([]);
}, 90_000);
