/**
 * Tool approvals end to end: a real stdio MCP server whose `append_note` appends to a file
 * (approval "ask", the default), grammY against the Telegram emulator with inline keyboards and
 * callback queries, the model behind the fake LLM server. The gateway is composed in this process
 * (`startInProcess`), except where a process is the point: a SIGKILL, a kill point, and the
 * operator API over HTTP (`startProcess`).
 */
import { Database } from "bun:sqlite";
import { afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { OutboxRecord } from "../../outbox/types.ts";
import { systemClock } from "../../src/util/clock.ts";
import { cli, json } from "../cli/support/cli.ts";
import {
  groupChat,
  privateChat,
  startTelegramEmulator,
  user,
  type VisibleMessage,
} from "../emulators/telegram/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { approvalStates } from "./support/approval-scenario.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import {
  eventually,
  GATEWAY_START_TIMEOUT_MS,
  GATEWAY_STOP_TIMEOUT_MS,
  type GatewayProcess,
} from "./support/gateway-process.ts";
import { waitUntilSettled } from "./support/settled.ts";

const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const fixture = useE2eFixture("switchboard-e2e-approvals-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const notes = join(dir.path, "notes.txt");
const dbFile = "approvals.sqlite";
const alice = user(1001, "Alice");
const bob = user(1002, "Bob");
const group = groupChat(-5001, "Team");
const TIMEOUT = 20_000;

fixture.stopGatewaysAfterEach();

const OPERATOR_TOKEN = "operator-token-0123456789";

interface StartOptions {
  approvalTimeoutMs?: number;
  dm?: Record<string, unknown>;
  dbFile?: string;
  env?: Record<string, string>;
}

/** The gateway's environment, with its config file (the surfaces and the notes MCP server) written. */
function gatewayEnv(options: StartOptions): Record<string, string> {
  const config = join(dir.path, "switchboard.json");
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: {
        "telegram:dm": options.dm ?? { delivery: "terminal", inputPolicy: "queue" },
        "telegram:group": { requireMention: false },
      },
      mcpServers: {
        notes: { command: process.execPath, args: [STDIO_SERVER], env: { NOTES_FILE: notes } },
      },
      ...(options.approvalTimeoutMs ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
    }),
  );
  return {
    ...telegramGatewayEnv(fixture, { allowed: [alice.id, bob.id], dbFile: options.dbFile ?? dbFile }),
    SWITCHBOARD_CONFIG: config,
    SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
    ...options.env,
  };
}

/** `switchboard start` as a process: for a SIGKILL, a kill point, or the HTTP API. */
async function startProcess(options: StartOptions = {}): Promise<GatewayProcess> {
  return await fixture.startGateway(gatewayEnv(options), GATEWAY_START_TIMEOUT_MS);
}

let inProcess: InProcessGateway[] = [];
afterEach(async () => {
  const stopping = inProcess;
  inProcess = [];
  await Promise.all(stopping.map((gateway) => gateway.stop()));
}, GATEWAY_STOP_TIMEOUT_MS);

/** The gateway composed in this process, stopped after the test. */
async function startInProcess(options: StartOptions = {}): Promise<InProcessGateway> {
  const gateway = await startInProcessGateway(gatewayEnv(options), {
    clock: systemClock,
    limits: FAST_PACING,
  });
  inProcess.push(gateway);
  return gateway;
}

/** How many approval prompts the outbox recorded as delivered with a pending request (read-only). */
function promptsDelivered(): number {
  const db = new Database(join(dir.path, dbFile), { readonly: true });
  try {
    const row = db
      .query(
        `SELECT count(*) AS n FROM outbox o JOIN approvals a ON o.key = 'approval:' || a.id || ':prompt'
         WHERE o.state = 'delivered' AND a.state = 'pending'`,
      )
      .get() as { n: number };
    return row.n;
  } finally {
    db.close();
  }
}

const lines = () => (existsSync(notes) ? readFileSync(notes, "utf8").trim().split("\n") : []);
const count = (line: string) => lines().filter((l) => l === line).length;

/** The model asks to append `text` when the user's message contains `prompt`, then reports the result. */
function appendRule(prompt: string, text: string) {
  llm.setRules([
    {
      match: { lastUserContains: prompt, lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_append_note", input: { text } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Done: {{lastToolResult}}" } },
  ]);
}

/** The approval prompt for `text` in `chatId`, once it shows its three buttons. */
async function promptFor(chatId: number, text: string): Promise<VisibleMessage> {
  return await telegram.waitForMessage(
    chatId,
    (m) => m.visibleText.includes("Approval needed") && m.visibleText.includes(text) && !!m.buttons,
    TIMEOUT,
  );
}

const current = (chatId: number, messageId: number) =>
  telegram.messages(chatId).find((m) => m.messageId === messageId);

async function answerFor(queryId: string): Promise<string> {
  return await eventually(
    () => telegram.callbackAnswers().find((a) => a.id === queryId)?.text,
    TIMEOUT,
    `the answer to callback query ${queryId}`,
  );
}

test("approve: buttons, a press, the effect exactly once, the answer; double press and redelivery decide nothing more", async () => {
  await startInProcess();
  appendRule("remember eggs", "eggs");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember eggs" });
  const prompt = await promptFor(alice.id, "eggs");
  const approveData = pressedData(prompt, "Approve");
  expect(prompt.buttons?.flat().map((b) => b.text)).toEqual(["Approve", "Deny", "Always allow in this chat"]);
  expect(prompt.visibleText).toContain("notes_append_note");
  expect(prompt.visibleText).toMatch(/\/approve ap_[0-9a-f]{12}/);
  expect(lines()).toEqual([]);

  const press = telegram.press(alice.id, prompt.messageId, alice, { label: "Approve" });
  expect(await answerFor(press.queryId)).toBe("Approved.");
  const answer = await telegram.waitForMessage(alice.id, (m) => m.visibleText.startsWith("Done:"), TIMEOUT);
  expect(answer.visibleText).toContain('appended "eggs"');
  expect(count("eggs")).toBe(1);
  const edited = await eventually(
    () => {
      const m = current(alice.id, prompt.messageId);
      return m?.visibleText.includes("Approved by Alice") && !m.buttons ? m : undefined;
    },
    TIMEOUT,
    "the prompt to show the outcome without buttons",
  );
  expect(edited.visibleText).toContain("notes_append_note");

  // A second press on the same (stale) keyboard and a redelivered callback change nothing.
  const again = telegram.press(alice.id, prompt.messageId, alice, { forgedData: approveData });
  expect(await answerFor(again.queryId)).toContain("Already decided");
  telegram.deliverAgain(press.update.update_id);
  await telegram.waitForConfirmed(press.update.update_id, TIMEOUT);
  await waitUntilSettled(join(dir.path, dbFile));
  expect(count("eggs")).toBe(1);
  expect(
    telegram.messages(alice.id).filter((m) => m.fromBot && m.visibleText.startsWith("Done:")),
  ).toHaveLength(1);
}, 60_000);

test("deny: the call never runs and the model is told it was denied", async () => {
  await startInProcess();
  appendRule("remember flour", "flour");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember flour" });
  const prompt = await promptFor(alice.id, "flour");
  const press = telegram.press(alice.id, prompt.messageId, alice, { label: "Deny" });
  expect(await answerFor(press.queryId)).toBe("Denied. The call will not run.");
  const answer = await telegram.waitForMessage(
    alice.id,
    (m) => m.visibleText.startsWith("Done:") && m.visibleText.includes("denied"),
    TIMEOUT,
  );
  expect(answer.visibleText).toContain("Alice denied this call");
  expect(count("flour")).toBe(0);
  await eventually(
    () => current(alice.id, prompt.messageId)?.visibleText.includes("Denied by Alice"),
    TIMEOUT,
    "the prompt to show the denial",
  );
}, 60_000);

test("a forged or altered button is refused and logged; /approve <id> as text still decides", async () => {
  const gw = await startInProcess();
  appendRule("remember sugar", "sugar");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember sugar" });
  const prompt = await promptFor(alice.id, "sugar");
  const data = pressedData(prompt, "Approve");
  // The id of another request, and a tag that is not the key's.
  const altered = data.replace(/^ap:ap_[0-9a-f]{12}/, "ap:ap_000000000000");
  const forged = `${data.slice(0, -4)}AAAA`;
  for (const forgedData of [altered, forged, "ap:nonsense"]) {
    const press = telegram.press(alice.id, prompt.messageId, alice, { forgedData });
    expect(await answerFor(press.queryId)).toBe("This button is not valid.");
  }
  await eventually(
    () => gw.logs.filter((l) => l.event === "approval.forged_press").length >= 3,
    TIMEOUT,
    "three approval.forged_press log lines",
  );
  expect(count("sugar")).toBe(0);
  expect(current(alice.id, prompt.messageId)?.buttons).toBeDefined();

  const id = /\/approve (ap_[0-9a-f]{12})/.exec(prompt.visibleText)![1]!;
  telegram.incoming({ chat: privateChat(alice), from: alice, text: `/approve ${id}` });
  await telegram.waitForMessage(alice.id, (m) => m.visibleText === "Approved.", TIMEOUT);
  await telegram.waitForMessage(alice.id, (m) => m.visibleText.includes('appended "sugar"'), TIMEOUT);
  expect(count("sugar")).toBe(1);
}, 60_000);

test("in a group, another user's press gets a notice and changes nothing; the asker's press decides", async () => {
  await startInProcess();
  appendRule("remember milk", "milk");
  telegram.incoming({ chat: group, from: alice, text: "please remember milk" });
  const prompt = await promptFor(group.id, "milk");
  const byBob = telegram.press(group.id, prompt.messageId, bob, { label: "Approve" });
  expect(await answerFor(byBob.queryId)).toBe("Only Alice or an approver can decide this.");
  expect(approvalStates(join(dir.path, dbFile), "milk")).toEqual(["pending"]);
  expect(count("milk")).toBe(0);
  expect(current(group.id, prompt.messageId)?.buttons).toBeDefined();

  // Typed by hand, Alice's id from Bob and an id that does not exist get the very same answer: a
  // guesser learns neither which ids exist nor whose they are.
  const id = /\/approve (ap_[0-9a-f]{12})/.exec(prompt.visibleText)![1]!;
  const repliesToBob = () => telegram.messages(bob.id).filter((m) => m.fromBot);
  telegram.incoming({ chat: privateChat(bob), from: bob, text: `/approve ${id}` });
  await eventually(() => repliesToBob().length === 1, TIMEOUT, "a reply to Bob's /approve of Alice's id");
  telegram.incoming({ chat: privateChat(bob), from: bob, text: "/approve ap_000000000000" });
  await eventually(() => repliesToBob().length === 2, TIMEOUT, "a reply to Bob's /approve of an unknown id");
  const [foreign, unknown] = repliesToBob();
  expect(foreign!.visibleText).toBe(unknown!.visibleText);
  expect(foreign!.visibleText).toContain("No approval request with that id is waiting for your decision");
  expect(foreign!.visibleText).not.toContain("Alice");
  telegram.incoming({ chat: privateChat(bob), from: bob, text: `/deny ${id}` });
  await eventually(() => repliesToBob().length === 3, TIMEOUT, "a reply to Bob's /deny of Alice's id");
  expect(repliesToBob()[2]!.visibleText).toBe(unknown!.visibleText);
  expect(count("milk")).toBe(0);

  const byAlice = telegram.press(group.id, prompt.messageId, alice, { label: "Approve" });
  expect(await answerFor(byAlice.queryId)).toBe("Approved.");
  await telegram.waitForMessage(group.id, (m) => m.visibleText.includes('appended "milk"'), TIMEOUT);
  expect(count("milk")).toBe(1);
}, 60_000);

test("always allow in this chat: shown in /status, later calls run without asking, /new clears it", async () => {
  await startInProcess();
  appendRule("remember salt", "salt");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember salt" });
  const prompt = await promptFor(alice.id, "salt");
  const press = telegram.press(alice.id, prompt.messageId, alice, { label: "Always allow in this chat" });
  expect(await answerFor(press.queryId)).toBe("Approved, and always allowed in this chat.");
  await telegram.waitForMessage(alice.id, (m) => m.visibleText.includes('appended "salt"'), TIMEOUT);

  telegram.incoming({ chat: privateChat(alice), from: alice, text: "/status" });
  await telegram.waitForMessage(
    alice.id,
    (m) => m.visibleText.includes("Tools always allowed in this chat: notes_append_note"),
    TIMEOUT,
  );

  appendRule("remember pepper", "pepper");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember pepper" });
  await telegram.waitForMessage(alice.id, (m) => m.visibleText.includes('appended "pepper"'), TIMEOUT);
  expect(count("pepper")).toBe(1);

  telegram.incoming({ chat: privateChat(alice), from: alice, text: "/new" });
  await telegram.waitForMessage(
    alice.id,
    (m) => m.visibleText.startsWith("Started a new conversation"),
    TIMEOUT,
  );
  appendRule("remember cumin", "cumin");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember cumin" });
  await promptFor(alice.id, "cumin");
  expect(count("cumin")).toBe(0);
}, 60_000);

test("SIGKILL between the request and the press: after a restart the press works, the effect happens once", async () => {
  const first = await startProcess();
  // Earlier tests may have left prompts pending in this chat: count from here.
  const before = promptsDelivered();
  appendRule("remember rice", "rice");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember rice" });
  const prompt = await promptFor(alice.id, "rice");
  // Killed once the prompt's send is recorded: a send cut short is ambiguous on Telegram, and
  // would hold the chat for an operator (a property of the outbox, tested elsewhere).
  await eventually(() => promptsDelivered() > before, TIMEOUT, "the prompt's outbox record to be delivered");
  await first.kill("SIGKILL");
  await startProcess();
  const press = telegram.press(alice.id, prompt.messageId, alice, { label: "Approve" });
  expect(await answerFor(press.queryId)).toBe("Approved.");
  await telegram.waitForMessage(alice.id, (m) => m.visibleText.includes('appended "rice"'), TIMEOUT);
  expect(count("rice")).toBe(1);
}, 90_000);

test("operators list pending approvals and decide them over the API; a second decision is refused", async () => {
  const gw = await startProcess();
  appendRule("remember tea", "tea");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember tea" });
  const prompt = await promptFor(alice.id, "tea");
  const id = /\/approve (ap_[0-9a-f]{12})/.exec(prompt.visibleText)![1]!;
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${gw.url}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${OPERATOR_TOKEN}`,
        "content-type": "application/json",
        ...init.headers,
      },
    });
  const pending = (await (await api("/api/approvals?state=pending")).json()) as Array<{
    id: string;
    toolName: string;
  }>;
  const request = pending.find((a) => a.id === id);
  expect(request).toMatchObject({ toolName: "notes_append_note", input: { text: "tea" }, state: "pending" });
  const waiting = (
    (await (await api("/api/runs?state=awaiting_approval")).json()) as { items: Array<{ id: string }> }
  ).items;
  expect(waiting.map((r) => r.id)).toContain((request as unknown as { runId: string }).runId);
  const approved = await api(`/api/approvals/${id}/approve`, {
    method: "POST",
    body: "{}",
    headers: { "x-switchboard-actor": "carol" },
  });
  expect(approved.status).toBe(200);
  expect(await approved.json()).toMatchObject({ id, state: "approved", decidedBy: "operator carol" });
  await telegram.waitForMessage(alice.id, (m) => m.visibleText.includes('appended "tea"'), TIMEOUT);
  expect(count("tea")).toBe(1);
  await eventually(
    () => current(alice.id, prompt.messageId)?.visibleText.includes("Approved by operator carol"),
    TIMEOUT,
    "the prompt to show the operator's approval",
  );
  const again = await api(`/api/approvals/${id}/deny`, { method: "POST", body: "{}" });
  expect(again.status).toBe(409);
  expect(count("tea")).toBe(1);
}, 60_000);

test("under supersede (streamed DMs) a newer message cancels the pending request; its buttons say so", async () => {
  await startInProcess({ dm: { inputPolicy: "supersede", delivery: "stream" } });
  llm.setRules([
    {
      match: { lastUserContains: "remember jam", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_append_note", input: { text: "jam" } },
    },
    { match: { lastUserContains: "never mind" }, reply: { kind: "text", text: "Alright, forgotten." } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember jam" });
  const prompt = await promptFor(alice.id, "jam");
  const approveData = pressedData(prompt, "Approve");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "never mind" });
  await telegram.waitForMessage(alice.id, (m) => m.visibleText === "Alright, forgotten.", TIMEOUT);
  await eventually(
    () => {
      const m = current(alice.id, prompt.messageId);
      return m?.visibleText.includes("Cancelled by a newer message") && !m.buttons;
    },
    TIMEOUT,
    "the prompt to show it was cancelled",
  );
  const late = telegram.press(alice.id, prompt.messageId, alice, { forgedData: approveData });
  expect(await answerFor(late.queryId)).toContain("Already decided");
  expect(count("jam")).toBe(0);
}, 60_000);

test("an operator's CLI on the database file decides; the running gateway runs the call once", async () => {
  await startInProcess();
  appendRule("remember honey", "honey");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember honey" });
  const prompt = await promptFor(alice.id, "honey");
  const id = /\/approve (ap_[0-9a-f]{12})/.exec(prompt.visibleText)![1]!;
  const db = join(dir.path, dbFile);
  const listed = await cli(["approvals", "list", "--state", "pending", "--db", db, "--json"]);
  expect(json<Array<{ id: string }>>(listed).map((a) => a.id)).toContain(id);
  const decided = await cli(["approvals", "deny", id, "--db", db, "--actor", "dave", "--json"]);
  expect(json(decided)).toMatchObject({ id, state: "denied", decidedBy: "operator dave" });
  await telegram.waitForMessage(
    alice.id,
    (m) => m.visibleText.includes("operator dave denied this call"),
    TIMEOUT,
  );
  const again = await cli(["approvals", "approve", id, "--db", db]);
  expect(again.code).not.toBe(0);
  expect(again.stderr).toContain("Already decided");
  expect(count("honey")).toBe(0);
}, 60_000);

test("expiry: a request nobody decides counts as denied (expired), and its buttons say so", async () => {
  await startInProcess({ approvalTimeoutMs: 2000 });
  appendRule("remember oats", "oats");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember oats" });
  const prompt = await promptFor(alice.id, "oats");
  const approveData = pressedData(prompt, "Approve");
  const answer = await telegram.waitForMessage(
    alice.id,
    (m) => m.visibleText.startsWith("Done:") && m.visibleText.includes("expired"),
    TIMEOUT,
  );
  expect(answer.visibleText).toContain("approval request expired");
  await eventually(
    () => {
      const m = current(alice.id, prompt.messageId);
      return m?.visibleText.includes("Expired") && !m.buttons;
    },
    TIMEOUT,
    "the prompt to show it expired",
  );
  // A late press is answered, and changes nothing.
  const late = telegram.press(alice.id, prompt.messageId, alice, { forgedData: approveData });
  expect(await answerFor(late.queryId)).toContain("Already decided");
  expect(count("oats")).toBe(0);
}, 60_000);

test("a prompt whose unsure send an operator resolved as delivered shows the decision once, as a new message", async () => {
  // Its own database: the kill point fires on the first send the process makes, which must be the prompt's.
  const unsureDb = "approvals-unsure.sqlite";
  const dbEnv = { SWITCHBOARD_DB: join(dir.path, unsureDb) };
  const first = await startProcess({
    dbFile: unsureDb,
    env: { SWITCHBOARD_TEST_KILL_POINT: "outbox.platform-accepted" },
  });
  appendRule("remember beans", "beans");
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please remember beans" });
  // Telegram showed the prompt; the gateway died before recording it, so after the restart its
  // record is ambiguous, with no message id.
  const prompt = await promptFor(alice.id, "beans");
  await first.exited;
  const gw = await startProcess({ dbFile: unsureDb });
  const id = /\/approve (ap_[0-9a-f]{12})/.exec(prompt.visibleText)![1]!;
  const record = await eventually(
    async () => {
      const shown = await runCliJson<OutboxRecord>(["outbox", "show", `approval:${id}:prompt`], dbEnv);
      return shown.state === "ambiguous" ? shown : undefined;
    },
    TIMEOUT,
    "the prompt's record to be ambiguous after the restart",
  );
  expect(record.receipt).toBeNull();

  const press = telegram.press(alice.id, prompt.messageId, alice, { label: "Approve" });
  expect(await answerFor(press.queryId)).toBe("Approved.");
  const resolved = await runCli(
    ["outbox", "resolve", record.id, "--delivered", "--note", "seen in the chat", "--actor", "e2e"],
    dbEnv,
  );
  expect(resolved.exitCode).toBe(0);

  const notice = `✅ Approved by Alice: notes_append_note (${id})`;
  const shown = await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText === notice,
    TIMEOUT,
  );
  await telegram.waitForMessage(alice.id, (m) => m.visibleText.includes('appended "beans"'), TIMEOUT);
  expect(count("beans")).toBe(1);
  const outcome = await runCliJson<OutboxRecord>(["outbox", "show", `approval:${id}:outcome`], dbEnv);
  expect(outcome).toMatchObject({ state: "delivered", receipt: { messageIds: [String(shown.messageId)] } });
  const logged = gw.logs.filter((l) => l.includes('"outbox.edit_sent_as_message"'));
  expect(logged).toHaveLength(1);
  expect(JSON.parse(logged[0]!)).toMatchObject({ level: "info", approvalId: id });
  // The prompt could not be edited: it keeps its buttons, and a press on them decides nothing
  // and sends the outcome no second time.
  expect(current(alice.id, prompt.messageId)?.buttons).toBeDefined();
  const again = telegram.press(alice.id, prompt.messageId, alice, { label: "Approve" });
  expect(await answerFor(again.queryId)).toContain("Already decided");
  await waitUntilSettled(join(dir.path, unsureDb));
  expect(telegram.messages(alice.id).filter((m) => m.visibleText === notice)).toHaveLength(1);
  expect(count("beans")).toBe(1);
}, 90_000);

/** The callback data of the button `label` as the prompt first showed it. */
function pressedData(prompt: VisibleMessage, label: string): string {
  const button = prompt.buttons?.flat().find((b) => b.text === label);
  if (!button) throw new Error(`no button ${label}`);
  return button.callbackData;
}
