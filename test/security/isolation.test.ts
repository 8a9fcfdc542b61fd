/**
 * Who may see and change what, through a real gateway process (Telegram against the emulator,
 * the model behind the fake LLM server): the operator API without the right token, and one
 * user's schedules from another user's conversation, by chat command and by the agent's tools.
 */
import { Database } from "bun:sqlite";
import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { telegramGatewayEnv, useE2eFixture } from "../e2e/support/fixture.ts";
import { eventually, type GatewayProcess } from "../e2e/support/gateway-process.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";

const OPERATOR_TOKEN = "operator-token-for-isolation-0123456789";
const alice = user(1001, "Alice");
const bob = user(1002, "Bob");
const fixture = useE2eFixture("switchboard-sec-iso-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const dbPath = join(dir.path, "gateway.sqlite");
let gateway: GatewayProcess;
/** Alice's reminder, created in the first test. */
let aliceScheduleId = "";

beforeAll(async () => {
  gateway = await fixture.startGateway(
    telegramGatewayEnv(fixture, {
      allowed: [alice.id, bob.id],
      extra: { SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN },
    }),
  );
}, 20_000);

/** Sends `text` as `from` in their DM and returns the bot's next reply there. */
async function say(from: typeof alice, text: string): Promise<string> {
  const before = telegram.messages(from.id).filter((m) => m.fromBot).length;
  telegram.incoming({ chat: privateChat(from), from, text });
  const reply = await telegram.waitFor(
    () => telegram.messages(from.id).filter((m) => m.fromBot)[before],
    10_000,
    `the reply to "${text}"`,
  );
  return reply.visibleText;
}

function scheduleRows(): Array<{ id: string; state: string; conversation_id: string }> {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.query("SELECT id, state, conversation_id FROM schedules ORDER BY id").all() as never;
  } finally {
    db.close();
  }
}

/** Everything an operator mutation could change, to compare before and after refused calls. */
function mutableState(): string {
  const db = new Database(dbPath, { readonly: true });
  try {
    return JSON.stringify([
      db.query("SELECT id, state, next_at_ms FROM schedules ORDER BY id").all(),
      db.query("SELECT id, state, attempts FROM outbox ORDER BY id").all(),
      db.query("SELECT id, state FROM runs ORDER BY id").all(),
    ]);
  } finally {
    db.close();
  }
}

describe("schedules belong to their conversation", () => {
  test("user B can neither see nor cancel user A's schedule by chat command", async () => {
    const created = await say(alice, "/in 1d water the plants");
    aliceScheduleId = /Scheduled (sch_\S+?) /.exec(created)?.[1] ?? "";
    expect(aliceScheduleId).toMatch(/^sch_/);

    const cancelOthers = await say(bob, `/cancel ${aliceScheduleId}`);
    const unknownId = aliceScheduleId.replace(/.$/, (c) => (c === "0" ? "1" : "0"));
    const cancelUnknown = await say(bob, `/cancel ${unknownId}`);
    // The same answer as for an id that does not exist: nothing tells B the id is real.
    expect(cancelOthers.replace(aliceScheduleId, "<id>")).toBe(cancelUnknown.replace(unknownId, "<id>"));
    expect(cancelOthers).not.toContain("Cancelled");

    expect(await say(bob, "/schedules")).toStartWith("No schedules.");
    expect(await say(alice, "/schedules")).toContain(aliceScheduleId);
    expect(scheduleRows()).toEqual([expect.objectContaining({ id: aliceScheduleId, state: "active" })]);
  }, 30_000);

  test("the agent's schedule_cancel tool cannot reach another conversation's schedule", async () => {
    llm.addRules([
      {
        match: { lastUserContains: "cancel that reminder", lastRole: "user" },
        reply: { kind: "tool-call", toolName: "schedule_cancel", input: { id: aliceScheduleId } },
        times: 1,
      },
      {
        match: { lastUserContains: "cancel that reminder", lastRole: "tool" },
        reply: { kind: "text", text: "I could not cancel it." },
      },
    ]);
    telegram.incoming({ chat: privateChat(bob), from: bob, text: "please cancel that reminder" });
    // DMs stream by default: wait for the edits to settle on the final text.
    await telegram.waitForMessage(
      bob.id,
      (m) => m.fromBot && m.visibleText === "I could not cancel it.",
      10_000,
    );

    const requests = llm.requests().filter((r) => r.lastUserText.includes("cancel that reminder"));
    expect(requests[0]?.toolNames).toContain("schedule_cancel");
    const toolResult = requests[1]?.messages.findLast((m) => m.role === "tool");
    const output = JSON.stringify(toolResult?.content);
    expect(output).toContain(`No schedule with id ${aliceScheduleId} in this conversation`);
    expect(output).not.toContain("water the plants");
    expect(scheduleRows()).toEqual([expect.objectContaining({ id: aliceScheduleId, state: "active" })]);
  }, 30_000);
});

describe("operator API", () => {
  const routes: Array<["GET" | "POST", string]> = [
    ["GET", "/api/runs"],
    ["GET", "/api/runs/run_x"],
    ["GET", "/api/conversations"],
    ["GET", "/api/outbox"],
    ["GET", "/api/schedules"],
    ["GET", "/api/dashboard"],
    ["GET", "/api/events"],
    ["GET", "/api/no-such-route"],
    ["POST", "/api/outbox/obx_x/retry"],
    ["POST", "/api/outbox/obx_x/cancel"],
  ];
  const wrongAuthorizations: Array<[string, Record<string, string>]> = [
    ["no token", {}],
    ["a wrong token of the same length", { authorization: `Bearer ${OPERATOR_TOKEN.replace(/.$/, "X")}` }],
    ["a shorter wrong token", { authorization: "Bearer operator-token" }],
    ["the token under another scheme", { authorization: `Basic ${OPERATOR_TOKEN}` }],
    ["the token in the query string", {}],
  ];

  test("refuses a missing or wrong token with 401 on every route (429 once the address is limited), and nothing changes", async () => {
    const scheduleRoutes: Array<["POST", string]> = ["cancel", "pause"].map((verb) => [
      "POST",
      `/api/schedules/${aliceScheduleId}/${verb}`,
    ]);
    // The previous test's last edit may still be on its way: compare from a quiet outbox.
    await eventually(
      () => !/"state":"(pending|sending)"/.test(mutableState()),
      10_000,
      "the outbox to finish its sends",
    );
    const before = mutableState();
    let limited = false;
    for (const [method, path] of [...routes, ...scheduleRoutes]) {
      for (const [what, headers] of wrongAuthorizations) {
        const query = what === "the token in the query string" ? `?token=${OPERATOR_TOKEN}` : "";
        const response = await fetch(`${gateway.url}${path}${query}`, {
          method,
          headers: { "content-type": "application/json", ...headers },
          ...(method === "POST" ? { body: "{}" } : {}),
        });
        const body = await response.text();
        // Past the wrong-token limit the address is answered 429 (test/http/auth-limit.test.ts), and
        // stays so: a refusal either way, never a 2xx or another client's data.
        if (response.status === 429) {
          limited = true;
          expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
        }
        const expected = limited ? 429 : 401;
        expect({ method, path, what, status: response.status }).toEqual({
          method,
          path,
          what,
          status: expected,
        });
        expect(body).not.toContain(OPERATOR_TOKEN);
        expect(body).not.toContain("water the plants");
      }
    }
    expect(limited).toBe(true);
    expect(mutableState()).toBe(before);
    expect(scheduleRows()).toEqual([expect.objectContaining({ id: aliceScheduleId, state: "active" })]);

    // The right token opens the same routes (even from the limited address), so the refusals above
    // were about the token.
    const listed = await fetch(`${gateway.url}/api/schedules`, {
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expect(listed.status).toBe(200);
    expect(await listed.text()).toContain(aliceScheduleId);
  }, 20_000);
});
