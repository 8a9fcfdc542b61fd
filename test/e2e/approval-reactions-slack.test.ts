/**
 * The status reaction ladder through a real approval on Slack, end to end: a gateway process, Bolt
 * over Socket Mode against the Slack emulator, a real stdio MCP server whose `append_note` asks
 * for approval, the model behind the fake LLM server. The person's message shows 👀 while its run
 * works, ⏳ while the tool waits for the press, 👀 again while the decision's run works, and ✅
 * alone once the answer was delivered; also when the gateway restarted between ⏳ and the press
 * (what it showed is remembered in memory only).
 */
import { expect, test } from "bun:test";
import { startSlackEmulator, type VisibleMessage } from "../emulators/slack/index.ts";
import { appendRule, notesIn, writeApprovalConfig } from "./support/approval-scenario.ts";
import { useE2eFixture } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-approval-reactions-slack-", () => startSlackEmulator());
const { dir, llm, platform: slack } = fixture;
const notes = notesIn(dir.path);
const ALICE = { id: "U0ALICE", name: "alice" };
const DM = "D0ALICE";
const TIMEOUT = 20_000;

fixture.stopGatewaysAfterEach();

/** Slack's names for 👀 ⏳ ✅. */
const EYES = "eyes";
const HOURGLASS = "hourglass_flowing_sand";
const CHECK = "white_check_mark";

async function start(dbFile: string): Promise<GatewayProcess> {
  // Status reactions are on in DMs by default.
  const config = writeApprovalConfig(dir.path, notes, {
    "slack:dm": { delivery: "terminal", inputPolicy: "queue" },
  });
  return await fixture.startGateway(
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      dbFile,
      extra: {
        SWITCHBOARD_CONFIG: config,
        SLACK_BOT_TOKEN: slack.botToken,
        SLACK_API_URL: `${slack.url}/api`,
        SLACK_ALLOWED_USERS: ALICE.id,
        SLACK_APP_TOKEN: slack.appToken,
      },
    }),
    GATEWAY_START_TIMEOUT_MS,
  );
}

type Button = { action_id: string; text: { text: string } };
const buttonsOf = (m: VisibleMessage): Button[] =>
  (m.blocks ?? []).flatMap((b) => (b.type === "actions" ? (b.elements as Button[]) : []));

async function promptFor(text: string): Promise<VisibleMessage> {
  return await slack.waitFor(
    () =>
      slack
        .messages(DM)
        .find((m) => m.text.includes("Approval needed") && m.text.includes(text) && buttonsOf(m).length > 0),
    TIMEOUT,
    `the approval prompt for "${text}"`,
  );
}

function approve(prompt: VisibleMessage): void {
  const approveId = buttonsOf(prompt).find((b) => b.text.text === "Approve")!.action_id;
  slack.pushInteraction(slack.blockAction(DM, prompt.ts, ALICE, approveId));
}

/** Asks for `text` to be remembered; the ts of the person's message. */
async function ask(text: string): Promise<string> {
  appendRule(llm, `remember ${text}`, text);
  const message = slack.events.dm({ user: ALICE.id, text: `please remember ${text}` });
  slack.pushEvent(message);
  return String(message.event.ts);
}

const shownOn = (ts: string) => slack.reactions(DM, ts);
const added = (ts: string) =>
  slack
    .calls("reactions.add")
    .filter((c) => c.ok && c.params.timestamp === ts)
    .map((c) => c.params.name);

async function until(ts: string, shown: string[], what: string): Promise<void> {
  await slack.waitFor(() => JSON.stringify(shownOn(ts)) === JSON.stringify(shown), TIMEOUT, what);
}

async function answered(text: string): Promise<void> {
  await slack.waitFor(
    () => slack.messages(DM).find((m) => m.text.startsWith("Done:") && m.text.includes(text)),
    TIMEOUT,
    `the answer after approving "${text}"`,
  );
}

test("👀 while the run works, ⏳ while the approval waits, 👀 for the decision's run, ✅ alone once answered", async () => {
  await start("reactions-approve.sqlite");
  const ts = await ask("eggs");
  const prompt = await promptFor("eggs");
  await until(ts, [HOURGLASS], "⏳ alone while the approval waits");
  expect(added(ts)).toEqual([EYES, HOURGLASS]);

  approve(prompt);
  await answered("eggs");
  await until(ts, [CHECK], "✅ alone once the answer was delivered");
  expect(added(ts)).toEqual([EYES, HOURGLASS, EYES, CHECK]);
  expect(notes.count("eggs")).toBe(1);
}, 60_000);

test("a restart between ⏳ and the press: the ladder still ends with ✅ alone", async () => {
  const first = await start("reactions-restart.sqlite");
  const ts = await ask("flour");
  const prompt = await promptFor("flour");
  await until(ts, [HOURGLASS], "⏳ alone while the approval waits");
  await first.kill("SIGTERM");

  // The new process remembers nothing of what the message shows.
  await start("reactions-restart.sqlite");
  approve(prompt);
  await answered("flour");
  await until(ts, [CHECK], "✅ alone once the answer was delivered");
  expect(added(ts)).toEqual([EYES, HOURGLASS, EYES, CHECK]);
  expect(notes.count("flour")).toBe(1);
}, 60_000);
