// Kept per platform: the press travels as a Slack block action (Socket Mode, signed HTTP).
/**
 * Tool approvals on Slack end to end: a real gateway process, Bolt against the Slack emulator
 * (Socket Mode `interactive` envelopes, then interactivity over HTTP), Block Kit buttons, a real
 * stdio MCP server whose `append_note` appends to a file, the model behind the fake LLM server.
 */
import { expect, test } from "bun:test";
import {
  postEvent,
  postInteraction,
  startSlackEmulator,
  type VisibleMessage,
} from "../emulators/slack/index.ts";
import {
  appendRule as appendNoteRule,
  notesIn,
  runApproveOnceScenario,
  writeApprovalConfig,
} from "./support/approval-scenario.ts";
import { useE2eFixture } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-approvals-slack-", () => startSlackEmulator());
const { dir, llm, platform: slack } = fixture;
const notes = notesIn(dir.path);
const ALICE = { id: "U0ALICE", name: "alice" };
const DM = "D0ALICE";
const SIGNING_SECRET = "e2e-slack-signing-secret-approvals-0123";
const TIMEOUT = 20_000;

fixture.stopGatewaysAfterEach();

async function start(mode: "socket" | "http"): Promise<GatewayProcess> {
  const config = writeApprovalConfig(dir.path, notes, {
    "slack:dm": { delivery: "terminal", inputPolicy: "queue" },
  });
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

const count = notes.count;
const appendRule = (prompt: string, text: string) => appendNoteRule(llm, prompt, text);

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
  // Presses answer with ephemeral notices in order: the nth press of this test gets notice before + n.
  let notices = slack.ephemeralMessages(ALICE.id).length;
  await runApproveOnceScenario<VisibleMessage, { envelopeId: string; notice: number }>({
    llm,
    notes,
    asker: "alice",
    ask: (text) => slack.pushEvent(slack.events.dm({ user: ALICE.id, text })),
    promptFor,
    labels: (prompt) => buttonsOf(prompt).map((b) => b.text.text),
    press: (prompt, label, options) => {
      const action = slack.blockAction(DM, prompt.ts, ALICE, dataOf(prompt, label), {
        forged: options?.stale ?? false,
      });
      notices += 1;
      return { envelopeId: slack.pushInteraction(action), notice: notices };
    },
    noticeOf: (press) => noticeNumber(press.notice),
    redeliver: (press) => slack.duplicate(press.envelopeId),
    current: (prompt) => {
      const m = current(prompt.ts);
      return m && { text: m.text, buttons: m.blocks !== undefined };
    },
    chatTexts: () => slack.messages(DM).map((m) => m.text),
    checkPrompt: (prompt) => {
      for (const b of buttonsOf(prompt)) expect(b.value).toBe(b.action_id);
      expect(prompt.blocks?.[0]?.type).toBe("section");
    },
    checkPress: async ({ envelopeId }) => {
      await slack.waitFor(
        () => slack.envelope(envelopeId)?.state === "acked",
        TIMEOUT,
        "the press to be acked",
      );
      const envelope = slack.envelope(envelopeId)!;
      expect(envelope.type).toBe("interactive");
      expect(envelope.deliveries).toHaveLength(1);
      expect(envelope.ackedAtMs! - envelope.deliveries[0]!.atMs).toBeLessThan(3000);
    },
  });
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
