/**
 * Tool approvals on Slack end to end: a real gateway process, Bolt against the Slack emulator
 * (Socket Mode `interactive` envelopes, then interactivity over HTTP), Block Kit buttons, a real
 * stdio MCP server whose `append_note` appends to a file, the model behind the fake LLM server.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  postEvent,
  postInteraction,
  startSlackEmulator,
  type VisibleMessage,
} from "../emulators/slack/index.ts";
import { useE2eFixture } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";

const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const fixture = useE2eFixture("switchboard-e2e-approvals-slack-", () => startSlackEmulator());
const { dir, llm, platform: slack } = fixture;
const notes = join(dir.path, "notes.txt");
const ALICE = { id: "U0ALICE", name: "alice" };
const DM = "D0ALICE";
const SIGNING_SECRET = "e2e-slack-signing-secret-approvals-0123";
const TIMEOUT = 20_000;

fixture.stopGatewaysAfterEach();

async function start(mode: "socket" | "http"): Promise<GatewayProcess> {
  const config = join(dir.path, "switchboard.json");
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: { "slack:dm": { delivery: "terminal", inputPolicy: "queue" } },
      mcpServers: {
        notes: { command: process.execPath, args: [STDIO_SERVER], env: { NOTES_FILE: notes } },
      },
    }),
  );
  const gateway = await fixture.startGateway(
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      dbFile: `approvals-slack-${mode}.sqlite`,
      extra: {
        SWITCHBOARD_CONFIG: config,
        SLACK_BOT_TOKEN: slack.botToken,
        SLACK_API_URL: `${slack.url}/api`,
        SLACK_ALLOWED_USERS: ALICE.id,
        ...(mode === "socket"
          ? { SLACK_APP_TOKEN: slack.appToken }
          : { SLACK_SIGNING_SECRET: SIGNING_SECRET }),
      },
    }),
    GATEWAY_START_TIMEOUT_MS,
  );
  return gateway;
}

const lines = () => (existsSync(notes) ? readFileSync(notes, "utf8").trim().split("\n") : []);
const count = (line: string) => lines().filter((l) => l === line).length;

function appendRule(prompt: string, text: string) {
  llm.setRules([
    {
      match: { lastUserContains: prompt, lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_append_note", input: { text } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Done: {{lastToolResult}}" } },
  ]);
}

type Button = { action_id: string; value: string; text: { text: string } };
const buttonsOf = (m: VisibleMessage): Button[] =>
  (m.blocks ?? []).flatMap((b) => (b.type === "actions" ? (b.elements as Button[]) : []));

async function promptFor(text: string): Promise<VisibleMessage> {
  return await slack.waitFor(
    () =>
      slack
        .messages(DM)
        .find((m) => m.text.includes("Approval needed") && m.text.includes(text) && buttonsOf(m).length > 0),
    TIMEOUT,
    `the approval prompt for "${text}" with buttons`,
  );
}

const dataOf = (prompt: VisibleMessage, label: string) =>
  buttonsOf(prompt).find((b) => b.text.text === label)!.action_id;

async function noticeNumber(n: number): Promise<string> {
  return await slack.waitFor(
    () => slack.ephemeralMessages(ALICE.id)[n - 1]?.text,
    TIMEOUT,
    `ephemeral notice #${n} for alice`,
  );
}

const current = (ts: string) => slack.messages(DM).find((m) => m.ts === ts);

test("Socket Mode: Block Kit buttons, a press acknowledged at once, the effect exactly once, the notice; the buttons go", async () => {
  await start("socket");
  const before = slack.ephemeralMessages(ALICE.id).length;
  appendRule("remember eggs", "eggs");
  slack.pushEvent(slack.events.dm({ user: ALICE.id, text: "please remember eggs" }));
  const prompt = await promptFor("eggs");
  expect(buttonsOf(prompt).map((b) => b.text.text)).toEqual(["Approve", "Deny", "Always allow in this chat"]);
  for (const b of buttonsOf(prompt)) expect(b.value).toBe(b.action_id);
  expect(prompt.blocks?.[0]?.type).toBe("section");
  expect(lines()).toEqual([]);

  const approve = dataOf(prompt, "Approve");
  const press = slack.blockAction(DM, prompt.ts, ALICE, approve);
  const envelopeId = slack.pushInteraction(press);
  await slack.waitFor(() => slack.envelope(envelopeId)?.state === "acked", TIMEOUT, "the press to be acked");
  const envelope = slack.envelope(envelopeId)!;
  expect(envelope.type).toBe("interactive");
  expect(envelope.deliveries).toHaveLength(1);
  expect(envelope.ackedAtMs! - envelope.deliveries[0]!.atMs).toBeLessThan(3000);

  expect(await noticeNumber(before + 1)).toBe("Approved.");
  const answer = await slack.waitFor(
    () => slack.messages(DM).find((m) => m.text.startsWith("Done:")),
    TIMEOUT,
    "the answer after the approval",
  );
  expect(answer.text).toContain('appended "eggs"');
  expect(count("eggs")).toBe(1);
  await slack.waitFor(
    () => {
      const m = current(prompt.ts);
      return m?.text.includes("Approved by alice") && m.blocks === undefined;
    },
    TIMEOUT,
    "the prompt to show the outcome without buttons",
  );

  // The same press delivered twice, and a press of the stale button, decide nothing more.
  slack.duplicate(envelopeId);
  slack.pushInteraction(slack.blockAction(DM, prompt.ts, ALICE, approve, { forged: true }));
  expect(await noticeNumber(before + 2)).toContain("Already decided");
  await Bun.sleep(500);
  expect(count("eggs")).toBe(1);
  expect(slack.messages(DM).filter((m) => m.text.startsWith("Done:"))).toHaveLength(1);
}, 60_000);

test("HTTP interactivity: a signed form press approves (200 at once); a forged action is refused", async () => {
  const gw = await start("http");
  const before = slack.ephemeralMessages(ALICE.id).length;
  const url = `${gw.url}/slack/events`;
  appendRule("remember sugar", "sugar");
  const delivered = slack.events.dm({ user: ALICE.id, text: "please remember sugar" });
  expect((await postEvent(url, delivered, { signingSecret: SIGNING_SECRET })).status).toBe(200);
  const prompt = await promptFor("sugar");

  const data = dataOf(prompt, "Approve");
  const forged = slack.blockAction(DM, prompt.ts, ALICE, `${data.slice(0, -4)}AAAA`, { forged: true });
  expect((await postInteraction(url, forged, { signingSecret: SIGNING_SECRET })).status).toBe(200);
  expect(await noticeNumber(before + 1)).toBe("This button is not valid.");
  await eventually(
    () => gw.logs.some((l) => l.includes("approval.forged_press")),
    TIMEOUT,
    "an approval.forged_press log line",
  );
  expect(count("sugar")).toBe(0);
  expect(buttonsOf(current(prompt.ts)!)).toHaveLength(3);

  const unsigned = await postInteraction(url, slack.blockAction(DM, prompt.ts, ALICE, data), {
    signingSecret: "not-the-secret",
  });
  expect(unsigned.status).toBe(401);

  const press = await postInteraction(url, slack.blockAction(DM, prompt.ts, ALICE, data), {
    signingSecret: SIGNING_SECRET,
  });
  expect(press.status).toBe(200);
  expect(press.elapsedMs).toBeLessThan(3000);
  expect(await noticeNumber(before + 2)).toBe("Approved.");
  await slack.waitFor(
    () => slack.messages(DM).find((m) => m.text.includes('appended "sugar"')),
    TIMEOUT,
    "the answer after the approval",
  );
  expect(count("sugar")).toBe(1);
}, 60_000);
